/**
 * The sidebar's sections: a collapsible frame (`SidebarSection`) and the contents of the cache,
 * jobs and checkpoint sections. Contents are keyed (`dom.ts`): the cache block as one node, each
 * job and checkpoint folder as its own, so a running copy's progress re-renders that copy only and
 * an unchanged answer touches nothing.
 */
import { TranslationBundle } from '@jupyterlab/translation';

import { ICacheDoc, ICheckpointFolder, IJob, ISave } from './api';
import { drawTimeline } from './timeline';
import { IKeyed, KeyedNodes } from './dom';
import { el, fmtBytes, fmtClock, fmtInt, fmtPct, fmtSeconds, progressBar } from './format';
import { SectionName } from './settings';

/** A collapsible section: title, an error line (hidden when there is none) and a body. */
export class SidebarSection {
  readonly node: HTMLDetailsElement;
  readonly body: HTMLElement;

  constructor(
    readonly name: SectionName,
    title: string
  ) {
    this.node = document.createElement('details');
    this.node.className = `air-section air-section-${name}`;
    this.node.open = true;
    const summary = document.createElement('summary');
    summary.textContent = title;
    this._error = el('div', 'air-error air-section-error');
    this._error.hidden = true;
    this.body = el('div', 'air-section-body');
    this.node.append(summary, this._error, this.body);
  }

  /** Show `message` in the error line, or hide it (null); the same message again changes nothing. */
  setError(message: string | null): void {
    if ((message ?? '') === this._error.textContent && this._error.hidden === (message === null)) {
      return;
    }
    this._error.textContent = message ?? '';
    this._error.hidden = message === null;
  }

  private _error: HTMLElement;
}

/** What a status section's content does with a new answer. */
export interface ISectionContent<T> {
  update(body: HTMLElement, data: T): void;
}

function stat(label: string, value: string): HTMLElement {
  const row = el('div', 'air-stat');
  row.append(el('span', 'air-stat-label', label), el('span', 'air-stat-value', value));
  return row;
}

/** A state badge: the class keeps the state's own name, the text is translated where known. */
function badge(state: string, trans: TranslationBundle): HTMLElement {
  const labels: Record<string, string> = {
    running: trans.__('running'),
    done: trans.__('done'),
    failed: trans.__('failed'),
    interrupted: trans.__('interrupted'),
    stale: trans.__('stale'),
    staging: trans.__('staging'),
    uploading: trans.__('uploading'),
    committed: trans.__('committed')
  };
  return el('span', `air-badge air-state-${state.replace(/[^a-z]/g, '')}`, labels[state] ?? state);
}

function one<T>(key: string, item: T): IKeyed<T>[] {
  return [{ key, sig: JSON.stringify(item), item }];
}

/** Hit rate, size vs. limit, traffic, evictions and the loader's data-wait share. */
export class CacheContent implements ISectionContent<ICacheDoc> {
  constructor(
    private readonly _trans: TranslationBundle,
    private readonly _onClear: () => void
  ) {}

  update(body: HTMLElement, doc: ICacheDoc): void {
    this._nodes.update(body, one(doc.cache ? 'cache' : 'empty', doc));
  }

  private _render(doc: ICacheDoc): HTMLElement {
    const trans = this._trans;
    const c = doc.cache;
    if (!c) {
      return el(
        'div',
        'air-muted',
        trans.__('No cache activity yet: iterate a UCVolumeDataset or call FileCache().get(...).')
      );
    }
    const block = el('div', 'air-cache');
    const hits = c.hits ?? 0;
    const misses = c.misses ?? 0;
    const rate = c.hit_rate ?? (hits + misses ? hits / (hits + misses) : 0);
    const head = el('div', 'air-meter');
    head.append(
      el('span', 'air-meter-label', trans.__('hit rate')),
      progressBar(rate, 'good'),
      el('span', 'air-meter-value air-cache-hitrate', fmtPct(rate))
    );
    const bytes = c.bytes ?? 0;
    const limit = c.limit ?? 0;
    const size = el('div', 'air-meter');
    size.append(
      el('span', 'air-meter-label', trans.__('size')),
      progressBar(limit ? bytes / limit : 0, limit && bytes / limit > 0.9 ? 'warn' : ''),
      el('span', 'air-meter-value', limit ? `${fmtBytes(bytes)} / ${fmtBytes(limit)}` : fmtBytes(bytes))
    );
    const evictions = stat(trans.__('evictions'), fmtInt(c.evictions));
    evictions.classList.add('air-cache-evictions');
    block.append(
      head,
      size,
      stat(trans.__('hits / misses'), `${fmtInt(hits)} / ${fmtInt(misses)}`),
      stat(trans.__('files cached'), fmtInt(c.entries)),
      stat(
        trans.__('limit'),
        limit ? fmtBytes(limit) : trans.__('none (keeps %1 disk free)', fmtBytes(c.reserve ?? 0))
      ),
      stat(trans.__('served from cache'), fmtBytes(c.bytes_hit ?? 0)),
      stat(trans.__('fetched from volumes'), fmtBytes(c.bytes_fetched ?? 0)),
      evictions
    );
    const l = doc.loader;
    if (l) {
      // the share as Python rounded it (the verdict's kind is decided on that very figure)
      const wait = typeof l.wait_percent === 'number' ? `${l.wait_percent.toFixed(1)}%` : fmtPct(l.wait_share);
      const waitLine = stat(
        trans.__('data wait'),
        trans.__(
          '%1 over %2 steps (epoch %3, %4 workers)',
          wait,
          fmtInt(l.steps),
          l.epoch ?? 0,
          l.num_workers ?? 0
        )
      );
      waitLine.classList.add('air-loader-wait');
      block.appendChild(waitLine);
      // several ranks of one launch (%%air_torchrun): a line per rank, as Python reported it
      const ranks = doc.loaders ?? [];
      if (ranks.length > 1) {
        for (const r of ranks) {
          const rw = typeof r.wait_percent === 'number' ? `${r.wait_percent.toFixed(1)}%` : fmtPct(r.wait_share);
          const busy = (r.data_wait_s ?? 0) + (r.compute_s ?? 0);
          const rate = busy > 0 ? trans.__(', %1 steps/s', ((r.steps ?? 0) / busy).toFixed(1)) : '';
          const rankLine = stat(
            trans.__('rank %1 of %2', r.rank ?? 0, r.world ?? ranks.length),
            trans.__(
              '%1 data wait over %2 steps%3%4',
              rw,
              fmtInt(r.steps),
              rate,
              r.verdict_kind ? `, ${r.verdict_kind}` : ''
            )
          );
          rankLine.classList.add('air-loader-rank');
          block.appendChild(rankLine);
        }
      }
      // the verdict and its kind come from Python (air_magics.datasets.verdict); nothing is re-derived here
      const line = l.verdict || l.verdict_kind || '';
      if (line) {
        const verdict = stat(trans.__('verdict'), line);
        verdict.classList.add('air-loader-verdict');
        if (l.verdict_kind) {
          verdict.dataset.kind = l.verdict_kind;
        }
        block.appendChild(verdict);
      }
    }
    const foot = el('div', 'air-foot');
    foot.appendChild(el('span', 'air-muted', trans.__('updated %1', fmtClock(c.updated))));
    const clear = el('button', 'air-link air-cache-clear', trans.__('Clear cache'));
    clear.title = trans.__(
      'Delete the cached copies under %1 (volumes are not touched)',
      c.root ?? trans.__('the cache folder')
    );
    clear.onclick = this._onClear;
    foot.appendChild(clear);
    block.appendChild(foot);
    return block;
  }

  private _nodes = new KeyedNodes<ICacheDoc>(doc => this._render(doc));
}

/** Copies, exports and pack runs running or recently finished, with progress bars; one node per job. */
export class JobsContent implements ISectionContent<IJob[]> {
  constructor(private readonly _trans: TranslationBundle) {}

  update(body: HTMLElement, jobs: IJob[]): void {
    if (!jobs.length) {
      this._nodes.update(body, one('empty', null));
      return;
    }
    this._nodes.update(
      body,
      jobs.map(j => ({ key: `job:${j.name}`, sig: JSON.stringify(j), item: j }))
    );
  }

  private _render(j: IJob | null): HTMLElement {
    const trans = this._trans;
    if (!j) {
      return el('div', 'air-muted', trans.__('No copies, exports or pack runs in the last hour.'));
    }
    const state = j.stale ? 'stale' : j.state;
    const item = el('div', `air-job air-job-${state}`);
    item.dataset.job = j.name;
    const head = el('div', 'air-job-head');
    head.append(
      el('span', 'air-job-kind', j.kind),
      // a pack's job is its destination, shown below: name it by what it packs
      el('span', 'air-job-name', j.kind === 'pack' ? j.src : j.job),
      badge(state, trans)
    );
    item.appendChild(head);
    const bad = state === 'failed' || state === 'interrupted' || state === 'stale';
    const warn = j.kind === 'copy' && j.failed;
    const bar = warn ? 'warn' : state === 'done' ? 'good' : bad ? 'bad' : '';
    item.appendChild(progressBar(j.progress, bar));
    item.appendChild(el('div', 'air-job-detail', this._detail(j)));
    if (j.dest) {
      const dest = el('div', 'air-job-dest air-muted', `→ ${j.dest}`);
      dest.title = j.dest;
      item.appendChild(dest);
    }
    if (j.stale) {
      item.appendChild(
        el(
          'div',
          'air-muted',
          trans.__('no update since %1: its process has probably stopped', fmtClock(j.updated))
        )
      );
    }
    return item;
  }

  private _detail(j: IJob): string {
    const trans = this._trans;
    const parts: string[] = [];
    const running = j.state === 'running';
    if (j.kind === 'copy') {
      parts.push(trans.__('%1 / %2 files', fmtInt(j.files_done), fmtInt(j.files_total)));
      if (j.bytes_done) {
        parts.push(fmtBytes(j.bytes_done));
      }
      if (running && j.files_per_second) {
        parts.push(trans.__('%1 files/s', fmtInt(Math.round(j.files_per_second))));
      }
      if (running && j.eta !== null && j.eta !== undefined) {
        parts.push(trans.__('ETA %1', fmtSeconds(j.eta)));
      }
      if (j.skipped) {
        parts.push(trans.__('%1 skipped', fmtInt(j.skipped)));
      }
      if (j.failed) {
        parts.push(trans.__('%1 failed', fmtInt(j.failed)));
      }
    } else if (j.kind === 'pack') {
      parts.push(trans.__('%1 / %2 shards', fmtInt(j.shards_done), fmtInt(j.shards_total)));
      parts.push(trans.__('%1 / %2 files', fmtInt(j.files_done), fmtInt(j.files_total)));
      if (j.bytes_done) {
        parts.push(fmtBytes(j.bytes_done));
      }
      if (j.report) {
        parts.push(
          trans.__(
            'kept %1, reused %2, removed %3',
            fmtInt(j.report.shards_kept),
            fmtInt(j.report.shards_reused),
            fmtInt(j.report.shards_removed)
          )
        );
      }
      if (j.error) {
        parts.push(j.error);
      }
    } else {
      if (j.tasks) {
        parts.push(trans.__('tasks %1 / %2', fmtInt(j.tasks_done), fmtInt(j.tasks)));
      }
      if (j.bytes_read) {
        parts.push(trans.__('%1 scanned', fmtBytes(j.bytes_read)));
      }
      if (j.rows) {
        parts.push(trans.__('%1 rows', fmtInt(j.rows)));
      }
      if (j.files) {
        parts.push(trans.__('%1 files', fmtInt(j.files)));
      }
    }
    if (!running && j.finished) {
      parts.push(trans.__('finished %1', fmtClock(j.finished)));
    }
    return parts.join(' · ') || trans.__('starting...');
  }

  private _nodes = new KeyedNodes<IJob | null>(j => this._render(j));
}

/** Recent checkpoint saves with their state, one node per checkpoint folder. */
export class CheckpointsContent implements ISectionContent<ICheckpointFolder[]> {
  constructor(
    private readonly _trans: TranslationBundle,
    private readonly _copyPath: (path: string) => void
  ) {}

  update(body: HTMLElement, folders: ICheckpointFolder[]): void {
    if (!folders.length) {
      this._nodes.update(body, one('empty', null));
      return;
    }
    this._nodes.update(
      body,
      folders.map(f => ({ key: `ckpt:${f.directory}`, sig: JSON.stringify(f), item: f }))
    );
  }

  private _render(f: ICheckpointFolder | null): HTMLElement {
    const trans = this._trans;
    if (!f) {
      return el(
        'div',
        'air-muted',
        trans.__('No checkpoints yet: CheckpointManager("/Volumes/...").save(step, state).')
      );
    }
    const item = el('div', 'air-ckpt');
    item.dataset.directory = f.directory;
    const dir = el('div', 'air-ckpt-dir', f.directory);
    dir.title = trans.__('%1\nclick: copy this path', f.directory);
    dir.onclick = () => this._copyPath(f.directory);
    item.appendChild(dir);
    const shown =
      f.steps.length > 6
        ? `${f.steps.slice(0, 2).join(', ')}, ..., ${f.steps.slice(-3).join(', ')}`
        : f.steps.join(', ');
    const parts = [
      trans.__('latest %1', f.latest ?? '-'),
      f.steps.length ? trans.__('committed %1', shown) : trans.__('nothing committed yet')
    ];
    if (f.keep) {
      parts.push(trans.__('keep %1', f.keep));
    }
    item.appendChild(el('div', 'air-ckpt-summary', parts.join(' · ')));
    if (f.error) {
      item.appendChild(el('div', 'air-error', f.error));
    }
    if (f.pending.length) {
      item.appendChild(el('div', 'air-muted', trans.__('incomplete (ignored): %1', f.pending.join(', '))));
    }
    if (f.timeline) {
      item.appendChild(drawTimeline(f.timeline));
    }
    for (const s of [...f.saves].reverse().slice(0, 5)) {
      item.append(...this._save(s));
    }
    return item;
  }

  private _save(s: ISave): HTMLElement[] {
    const trans = this._trans;
    const row = el('div', 'air-save');
    row.dataset.step = String(s.step);
    row.dataset.state = s.state;
    row.append(
      el('span', 'air-save-step', trans.__('step %1', s.step)),
      badge(s.state, trans),
      el('span', 'air-save-when air-muted', fmtClock(s.finished ?? s.started))
    );
    const out = [row];
    const detail: string[] = [];
    if (s.bytes) {
      detail.push(fmtBytes(s.bytes));
    }
    if (s.rank_bytes && s.rank_bytes.length > 1) {
      // a save of several ranks: what each wrote, as Python recorded it
      detail.push(trans.__('from %1 ranks (%2)', s.rank_bytes.length, s.rank_bytes.map(fmtBytes).join(' / ')));
    }
    if (s.seconds) {
      detail.push(`${s.seconds.toFixed(2)} s`);
    }
    if (s.mb_per_s) {
      detail.push(`${s.mb_per_s.toFixed(s.mb_per_s < 10 ? 1 : 0)} MB/s`);
    }
    if (s.blocked_s !== null && s.blocked_s !== undefined) {
      detail.push(trans.__('loop blocked %1 s', s.blocked_s.toFixed(2)));
    }
    if (s.staging_s !== null && s.staging_s !== undefined) {
      detail.push(trans.__('staged in the background in %1 s', s.staging_s.toFixed(2)));
    }
    if (s.waited_s) {
      detail.push(
        trans.__(
          'waited %1 s for the previous save: saves are issued faster than they finish',
          s.waited_s.toFixed(2)
        )
      );
    }
    if (detail.length) {
      out.push(el('div', 'air-save-detail air-muted', detail.join(' · ')));
    }
    if (s.error) {
      out.push(el('div', 'air-error', s.error));
    }
    return out;
  }

  private _nodes = new KeyedNodes<ICheckpointFolder | null>(f => this._render(f));
}
