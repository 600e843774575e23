/**
 * The sidebar panel: header (refresh, last update, messages), the volumes tree and the cache,
 * jobs and checkpoint sections. It polls the status endpoints while visible, and everything on
 * `refresh()` (the refresh button and the `air-magics:refresh` command).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { LabIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { ICacheDoc, ICheckpointFolder, IJob, requestAPI } from './api';
import { el } from './format';
import { renderCache, renderCheckpoints, renderJobs } from './sections';
import { ITreeActions, VolumesTree } from './tree';

export const POLL_MS = 2000;

interface ISection {
  root: HTMLDetailsElement;
  body: HTMLElement;
  error: HTMLElement;
}

export class AirSidebar extends Widget {
  readonly tree: VolumesTree;

  constructor(actions: ITreeActions, icon: LabIcon) {
    super();
    this.id = 'air-magics-sidebar';
    this.addClass('air-sidebar');
    this.title.icon = icon;
    this.title.caption = 'Air: volumes, cache, jobs, checkpoints';

    const header = el('div', 'air-header');
    header.appendChild(el('span', 'air-title', 'Air'));
    this._updated = el('span', 'air-updated air-muted');
    header.appendChild(this._updated);
    const refresh = el('button', 'air-icon-button air-refresh');
    refresh.title = 'Refresh (volumes, cache, jobs, checkpoints)';
    refreshIcon.element({ container: refresh });
    refresh.onclick = () => void this.refresh();
    header.appendChild(refresh);
    this.node.appendChild(header);
    this._message = el('div', 'air-message');
    this._message.setAttribute('aria-live', 'polite');
    this.node.appendChild(this._message);

    this.tree = new VolumesTree(actions, icon);
    const volumes = this._section('volumes', 'Volumes');
    volumes.body.appendChild(this.tree.node);
    this._cache = this._section('cache', 'Cache');
    this._jobs = this._section('jobs', 'Jobs');
    this._checkpoints = this._section('checkpoints', 'Checkpoints');
    this._copyPath = actions.copyPath;
  }

  /** Everything: the volumes (and expanded folders) and the status sections. */
  async refresh(): Promise<void> {
    await Promise.all([this.tree.refresh(true), this.refreshStatus()]);
  }

  /** The cache, jobs and checkpoint sections (what the interval polls). */
  async refreshStatus(): Promise<void> {
    if (this._polling) {
      return;
    }
    this._polling = true;
    try {
      await Promise.all([this._loadCache(), this._loadJobs(), this._loadCheckpoints()]);
      this._updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } finally {
      this._polling = false;
    }
  }

  /** A short note under the header (e.g. "Copied ..."), cleared after a few seconds. */
  say(text: string, error = false): void {
    this._message.textContent = text;
    this._message.classList.toggle('air-error', error);
    window.clearTimeout(this._messageTimer);
    this._messageTimer = window.setTimeout(() => {
      this._message.textContent = '';
      this._message.classList.remove('air-error');
    }, error ? 10000 : 4000);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (!this._started) {
      this._started = true;
      void this.refresh();
    } else {
      void this.tree.refresh(false); // volumes created meanwhile show up when the panel is reopened
      void this.refreshStatus();
    }
    window.clearInterval(this._timer);
    this._timer = window.setInterval(() => {
      if (this.isVisible) {
        void this.refreshStatus();
      }
    }, POLL_MS);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    window.clearInterval(this._timer);
  }

  dispose(): void {
    window.clearInterval(this._timer);
    window.clearTimeout(this._messageTimer);
    super.dispose();
  }

  private _section(name: string, title: string): ISection {
    const root = document.createElement('details');
    root.className = `air-section air-section-${name}`;
    root.open = true;
    const summary = document.createElement('summary');
    summary.textContent = title;
    root.appendChild(summary);
    const error = el('div', 'air-error air-section-error');
    error.hidden = true;
    root.appendChild(error);
    const body = el('div', 'air-section-body');
    root.appendChild(body);
    this.node.appendChild(root);
    return { root, body, error };
  }

  private async _guard(section: ISection, what: string, load: () => Promise<void>): Promise<void> {
    try {
      await load();
      section.error.hidden = true;
      section.error.textContent = '';
    } catch (error) {
      section.error.hidden = false;
      section.error.textContent = `Cannot load ${what}: ${(error as Error).message}`;
    }
  }

  private _loadCache(): Promise<void> {
    return this._guard(this._cache, 'cache statistics', async () => {
      const doc = await requestAPI<ICacheDoc>('cache');
      renderCache(this._cache.body, doc, () => void this._clearCache());
    });
  }

  private _loadJobs(): Promise<void> {
    return this._guard(this._jobs, 'jobs', async () => {
      const doc = await requestAPI<{ jobs: IJob[] }>('jobs');
      renderJobs(this._jobs.body, doc.jobs);
    });
  }

  private _loadCheckpoints(): Promise<void> {
    return this._guard(this._checkpoints, 'checkpoints', async () => {
      const doc = await requestAPI<{ checkpoints: ICheckpointFolder[] }>('checkpoints');
      renderCheckpoints(this._checkpoints.body, doc.checkpoints, this._copyPath);
    });
  }

  private async _clearCache(): Promise<void> {
    const answer = await showDialog({
      title: 'Clear the air_magics cache?',
      body: 'Deletes the local copies of volume files; the volumes themselves are not touched.',
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Clear' })]
    });
    if (!answer.button.accept) {
      return;
    }
    await this._guard(this._cache, 'cache statistics', async () => {
      const doc = await requestAPI<ICacheDoc>('cache', {}, { method: 'DELETE' });
      renderCache(this._cache.body, doc, () => void this._clearCache());
      const kept = doc.kept ?? 0;
      this.say(
        kept
          ? `Cleared ${doc.removed ?? 0} cached files; kept ${kept} in use by a running job.`
          : `Cleared ${doc.removed ?? 0} cached files.`
      );
    });
  }

  private _updated: HTMLElement;
  private _message: HTMLElement;
  private _messageTimer = 0;
  private _cache: ISection;
  private _jobs: ISection;
  private _checkpoints: ISection;
  private _copyPath: (p: string) => void;
  private _timer = 0;
  private _started = false;
  private _polling = false;
}
