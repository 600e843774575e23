/**
 * The sidebar panel: header (refresh, last update, messages), the volumes tree and the cache,
 * jobs and checkpoint sections.
 *
 * The panel is a view: the status sections re-render on their model signal only, the tree on
 * its own loads. While the panel is hidden the model is paused; showing it polls at once and
 * reloads the volume list (volumes created meanwhile appear, expanded folders stay open).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { LabIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { syncChildren } from './dom';
import { el } from './format';
import { ISectionState, StatusModel } from './model';
import {
  CacheContent,
  CheckpointsContent,
  ISectionContent,
  JobsContent,
  SidebarSection
} from './sections';
import { DEFAULT_SETTINGS, IAirSettings, SectionName } from './settings';
import { TrainingContent } from './training';
import { ITreeActions, VolumesTree } from './tree';

export class AirSidebar extends Widget {
  readonly tree: VolumesTree;
  readonly model: StatusModel;

  constructor(actions: ITreeActions, icon: LabIcon, trans: TranslationBundle) {
    super();
    this._trans = trans;
    this.id = 'air-magics-sidebar';
    this.addClass('air-sidebar');
    this.title.icon = icon;
    this.title.caption = trans.__('Air: volumes, training, cache, jobs, checkpoints');

    const header = el('div', 'air-header');
    header.appendChild(el('span', 'air-title', trans.__('Air')));
    this._updated = el('span', 'air-updated air-muted');
    header.appendChild(this._updated);
    const refresh = el('button', 'air-icon-button air-refresh');
    refresh.title = trans.__('Refresh (volumes, cache, jobs, checkpoints)');
    refreshIcon.element({ container: refresh });
    refresh.onclick = () => void this.refresh();
    header.appendChild(refresh);
    this._message = el('div', 'air-message');
    this._message.setAttribute('aria-live', 'polite');
    this._body = el('div', 'air-sections');
    this.node.append(header, this._message, this._body);

    this.tree = new VolumesTree(actions, icon, trans);
    this._sections = {
      volumes: new SidebarSection('volumes', trans.__('Volumes')),
      training: new SidebarSection('training', trans.__('Training')),
      cache: new SidebarSection('cache', trans.__('Cache')),
      jobs: new SidebarSection('jobs', trans.__('Jobs')),
      checkpoints: new SidebarSection('checkpoints', trans.__('Checkpoints'))
    };
    this._sections.volumes.body.appendChild(this.tree.node);

    this.model = new StatusModel(DEFAULT_SETTINGS.refreshInterval);
    this._bind(this._sections.training, this.model.trainingChanged, trans.__('training chart'),
      new TrainingContent(trans));
    this._bind(this._sections.cache, this.model.cacheChanged, trans.__('cache statistics'),
      new CacheContent(trans, () => void this._clearCache()));
    this._bind(this._sections.jobs, this.model.jobsChanged, trans.__('jobs'), new JobsContent(trans));
    this._bind(this._sections.checkpoints, this.model.checkpointsChanged, trans.__('checkpoints'),
      new CheckpointsContent(trans, actions.copyPath));
    this.model.polled.connect((_, when) => {
      this._updated.textContent = trans.__('updated %1', when.toLocaleTimeString());
    });
    this.applySettings(DEFAULT_SETTINGS);
  }

  /** Apply (new) settings: poll interval, folder page size, which sections show and in what order. */
  applySettings(settings: IAirSettings): void {
    this.model.interval = settings.refreshInterval;
    this.tree.pageSize = settings.pageSize;
    const shown = settings.sections;
    this.model.sections = shown.filter((s): s is Exclude<SectionName, 'volumes'> => s !== 'volumes');
    syncChildren(this._body, shown.map(name => this._sections[name].node));
    const volumesShown = shown.includes('volumes');
    if (volumesShown && !this._volumesShown && this._started) {
      void this.tree.refresh(true);
    }
    this._volumesShown = volumesShown;
  }

  /** Everything: the volumes (and expanded folders) and the status sections. */
  async refresh(): Promise<void> {
    await Promise.all([this._volumesShown ? this.tree.refresh(true) : null, this.model.refresh()]);
  }

  /** A short note under the header (e.g. "Copied ..."), cleared after a few seconds. */
  say(text: string, error = false): void {
    this._message.textContent = text;
    this._message.classList.toggle('air-error', error);
    window.clearTimeout(this._messageTimer);
    this._messageTimer = window.setTimeout(
      () => {
        this._message.textContent = '';
        this._message.classList.remove('air-error');
      },
      error ? 10000 : 4000
    );
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (this._volumesShown) {
      void this.tree.refresh(false); // volumes created meanwhile appear; open folders stay as they are
    }
    this._started = true;
    this.model.paused = false;
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.paused = true;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.dispose();
    window.clearTimeout(this._messageTimer);
    super.dispose();
  }

  /** Render `section` from the model's signal: its error line and, when there is data, its content. */
  private _bind<T>(
    section: SidebarSection,
    changed: ISignal<StatusModel, ISectionState<T>>,
    what: string,
    content: ISectionContent<T>
  ): void {
    changed.connect((_, state) => {
      const error = state.error;
      section.setError(error === null ? null : this._trans.__('Cannot load %1: %2', what, error));
      if (state.data !== null) {
        content.update(section.body, state.data);
      }
    });
  }

  private async _clearCache(): Promise<void> {
    const trans = this._trans;
    const answer = await showDialog({
      title: trans.__('Clear the air_magics cache?'),
      body: trans.__('Deletes the local copies of volume files; the volumes themselves are not touched.'),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.warnButton({ label: trans.__('Clear') })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    // a large cache takes a while: say so until the server answers, and take no second click
    const buttons = Array.from(this.node.querySelectorAll<HTMLButtonElement>('.air-cache-clear'));
    for (const b of buttons) {
      b.disabled = true;
      b.textContent = trans.__('Clearing...');
    }
    window.clearTimeout(this._messageTimer);
    this._message.classList.remove('air-error');
    this._message.textContent = trans.__('Clearing the cache: deleting the local copies...');
    try {
      const doc = await this.model.clearCache();
      const removed = doc.removed ?? 0;
      const kept = doc.kept ?? 0;
      this.say(
        kept
          ? trans.__('Cleared %1 cached files; kept %2 in use by a running job.', removed, kept)
          : trans._n('Cleared %1 cached file.', 'Cleared %1 cached files.', removed)
      );
    } catch (error) {
      this.say(trans.__('Cannot clear the cache: %1', (error as Error).message), true);
    } finally {
      for (const b of buttons) {
        b.disabled = false;
        b.textContent = trans.__('Clear cache');
      }
    }
  }

  private _trans: TranslationBundle;
  private _updated: HTMLElement;
  private _message: HTMLElement;
  private _messageTimer = 0;
  private _body: HTMLElement;
  private _sections: Record<SectionName, SidebarSection>;
  private _started = false;
  private _volumesShown = false;
}
