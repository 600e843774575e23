/**
 * The status sections of the sidebar: cache, jobs and checkpoints. Each renders one answer of the
 * REST API, which reads the same status documents the notebook widgets render.
 */
import {
  ICacheDoc,
  ICheckpointFolder,
  IJob,
  ISave
} from './api';
import {
  el,
  fmtAgo,
  fmtBytes,
  fmtInt,
  fmtPct,
  fmtSeconds,
  progressBar
} from './format';

function stat(label: string, value: string): HTMLElement {
  const row = el('div', 'air-stat');
  row.append(el('span', 'air-stat-label', label), el('span', 'air-stat-value', value));
  return row;
}

function badge(state: string): HTMLElement {
  return el('span', `air-badge air-state-${state.replace(/[^a-z]/g, '')}`, state);
}

/** Hit rate, size vs. limit, traffic, evictions and the loader's data-wait share. */
export function renderCache(body: HTMLElement, doc: ICacheDoc, onClear: () => void): void {
  body.textContent = '';
  const c = doc.cache;
  if (!c) {
    body.appendChild(
      el(
        'div',
        'air-muted',
        'No cache activity yet: iterate a UCVolumeDataset or call FileCache().get(...).'
      )
    );
    return;
  }
  const hits = c.hits ?? 0;
  const misses = c.misses ?? 0;
  const rate = c.hit_rate ?? (hits + misses ? hits / (hits + misses) : 0);
  const head = el('div', 'air-meter');
  head.append(
    el('span', 'air-meter-label', 'hit rate'),
    progressBar(rate, 'good'),
    el('span', 'air-meter-value air-cache-hitrate', fmtPct(rate))
  );
  body.appendChild(head);

  const limit = c.limit ?? 0;
  const size = el('div', 'air-meter');
  size.append(
    el('span', 'air-meter-label', 'size'),
    progressBar(limit ? (c.bytes ?? 0) / limit : 0, limit && (c.bytes ?? 0) / limit > 0.9 ? 'warn' : ''),
    el(
      'span',
      'air-meter-value',
      limit ? `${fmtBytes(c.bytes ?? 0)} / ${fmtBytes(limit)}` : fmtBytes(c.bytes ?? 0)
    )
  );
  body.appendChild(size);

  body.append(
    stat('hits / misses', `${fmtInt(hits)} / ${fmtInt(misses)}`),
    stat('files cached', fmtInt(c.entries)),
    stat('limit', limit ? fmtBytes(limit) : `none (keeps ${fmtBytes(c.reserve ?? 0)} disk free)`),
    stat('served from cache', fmtBytes(c.bytes_hit ?? 0)),
    stat('fetched from volumes', fmtBytes(c.bytes_fetched ?? 0)),
    stat('evictions', fmtInt(c.evictions))
  );
  const evictions = body.lastElementChild as HTMLElement;
  evictions.classList.add('air-cache-evictions');
  if (doc.loader) {
    const l = doc.loader;
    body.appendChild(
      stat(
        'data wait',
        `${fmtPct(l.wait_share)} over ${fmtInt(l.steps)} steps (epoch ${l.epoch ?? 0}, ${l.num_workers ?? 0} workers)`
      )
    );
  }
  const foot = el('div', 'air-foot');
  foot.appendChild(el('span', 'air-muted', `updated ${fmtAgo(c.updated)}`));
  const clear = el('button', 'air-link air-cache-clear', 'Clear cache');
  clear.title = `Delete the cached copies under ${c.root ?? 'the cache folder'} (volumes are not touched)`;
  clear.onclick = onClear;
  foot.appendChild(clear);
  body.appendChild(foot);
}

function jobDetail(j: IJob): string {
  const parts: string[] = [];
  if (j.kind === 'copy') {
    parts.push(`${fmtInt(j.files_done)} / ${fmtInt(j.files_total)} files`);
    if (j.bytes_done) {
      parts.push(fmtBytes(j.bytes_done));
    }
    if (j.state === 'running' && j.files_per_second) {
      parts.push(`${fmtInt(Math.round(j.files_per_second))} files/s`);
    }
    if (j.state === 'running' && j.eta !== null && j.eta !== undefined) {
      parts.push(`ETA ${fmtSeconds(j.eta)}`);
    }
    if (j.skipped) {
      parts.push(`${fmtInt(j.skipped)} skipped`);
    }
    if (j.failed) {
      parts.push(`${fmtInt(j.failed)} failed`);
    }
  } else {
    if (j.tasks) {
      parts.push(`tasks ${fmtInt(j.tasks_done)} / ${fmtInt(j.tasks)}`);
    }
    if (j.bytes_read) {
      parts.push(`${fmtBytes(j.bytes_read)} scanned`);
    }
    if (j.rows) {
      parts.push(`${fmtInt(j.rows)} rows`);
    }
    if (j.files) {
      parts.push(`${fmtInt(j.files)} files`);
    }
  }
  if (j.state !== 'running' && j.finished) {
    parts.push(`finished ${fmtAgo(j.finished)}`);
  }
  return parts.join(' · ') || 'starting...';
}

/** Copies and exports running or recently finished, with progress bars. */
export function renderJobs(body: HTMLElement, jobs: IJob[]): void {
  body.textContent = '';
  if (!jobs.length) {
    body.appendChild(
      el('div', 'air-muted', 'No copies or exports in the last hour.')
    );
    return;
  }
  for (const j of jobs) {
    const state = j.stale ? 'stale' : j.state;
    const item = el('div', `air-job air-job-${state}`);
    item.dataset.job = j.name;
    const head = el('div', 'air-job-head');
    head.append(el('span', 'air-job-kind', j.kind), el('span', 'air-job-name', j.job), badge(state));
    item.appendChild(head);
    const barState =
      state === 'done' ? 'good' : state === 'failed' || state === 'interrupted' || state === 'stale' ? 'bad' : '';
    item.appendChild(progressBar(j.progress, j.failed ? 'warn' : barState));
    item.appendChild(el('div', 'air-job-detail', jobDetail(j)));
    if (j.dest) {
      const dest = el('div', 'air-job-dest air-muted', `→ ${j.dest}`);
      dest.title = j.dest;
      item.appendChild(dest);
    }
    if (j.stale) {
      item.appendChild(
        el('div', 'air-muted', `no update for ${fmtAgo(j.updated)}: the copying process has probably stopped`)
      );
    }
    body.appendChild(item);
  }
}

function saveDetail(s: ISave): string {
  const parts: string[] = [];
  if (s.bytes) {
    parts.push(fmtBytes(s.bytes));
  }
  if (s.seconds) {
    parts.push(`${s.seconds.toFixed(2)} s`);
  }
  if (s.mb_per_s) {
    parts.push(`${s.mb_per_s.toFixed(s.mb_per_s < 10 ? 1 : 0)} MB/s`);
  }
  if (s.blocked_s !== null && s.blocked_s !== undefined) {
    parts.push(`loop blocked ${s.blocked_s.toFixed(2)} s`);
  }
  return parts.join(' · ');
}

/** Recent checkpoint saves with their state, per checkpoint folder. */
export function renderCheckpoints(
  body: HTMLElement,
  folders: ICheckpointFolder[],
  copyPath: (p: string) => void
): void {
  body.textContent = '';
  if (!folders.length) {
    body.appendChild(
      el('div', 'air-muted', 'No checkpoints yet: CheckpointManager("/Volumes/...").save(step, state).')
    );
    return;
  }
  for (const f of folders) {
    const item = el('div', 'air-ckpt');
    item.dataset.directory = f.directory;
    const dir = el('div', 'air-ckpt-dir', f.directory);
    dir.title = `${f.directory}\nclick: copy this path`;
    dir.onclick = () => copyPath(f.directory);
    item.appendChild(dir);
    const steps = f.steps.length
      ? `committed ${f.steps.length > 6 ? `${f.steps.slice(0, 2).join(', ')}, ..., ${f.steps.slice(-3).join(', ')}` : f.steps.join(', ')}`
      : 'nothing committed yet';
    item.appendChild(
      el('div', 'air-ckpt-summary', `latest ${f.latest ?? '-'} · ${steps}${f.keep ? ` · keep ${f.keep}` : ''}`)
    );
    if (f.error) {
      item.appendChild(el('div', 'air-error', f.error));
    }
    if (f.pending.length) {
      item.appendChild(el('div', 'air-muted', `incomplete (ignored): ${f.pending.join(', ')}`));
    }
    const saves = [...f.saves].reverse().slice(0, 5);
    for (const s of saves) {
      const row = el('div', 'air-save');
      row.dataset.step = String(s.step);
      row.dataset.state = s.state;
      const t = s.finished ?? s.started;
      row.append(
        el('span', 'air-save-step', `step ${s.step}`),
        badge(s.state),
        el('span', 'air-save-when air-muted', t ? fmtAgo(t) : '')
      );
      item.appendChild(row);
      const detail = saveDetail(s);
      if (detail) {
        item.appendChild(el('div', 'air-save-detail air-muted', detail));
      }
      if (s.error) {
        item.appendChild(el('div', 'air-error', s.error));
      }
    }
    body.appendChild(item);
  }
}
