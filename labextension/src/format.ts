/** Small text helpers, matching the notebook widgets' wording (`air_magics.volumes.summary.fmt_bytes`). */

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !isFinite(n)) {
    return '';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  for (const unit of units) {
    if (Math.abs(v) < 1024 || unit === 'TiB') {
      return unit === 'B' ? `${v.toFixed(0)} B` : `${v.toFixed(1)} ${unit}`;
    }
    v /= 1024;
  }
  return `${n} B`;
}

export function fmtInt(n: number | null | undefined): string {
  return (n ?? 0).toLocaleString('en-US');
}

export function fmtPct(x: number | null | undefined): string {
  return `${((x ?? 0) * 100).toFixed(1)}%`;
}

export function fmtSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || !isFinite(s)) {
    return '--';
  }
  if (s < 120) {
    return `${s.toFixed(0)} s`;
  }
  if (s < 7200) {
    return `${(s / 60).toFixed(1)} min`;
  }
  return `${(s / 3600).toFixed(1)} h`;
}

/**
 * A Unix timestamp (seconds) as a local clock time, with the date when it is not today. Absolute,
 * not "12 s ago": a section re-renders only when its data changes, so a relative time would go stale.
 */
export function fmtClock(t: number | null | undefined, now: Date = new Date()): string {
  if (!t) {
    return '';
  }
  const d = new Date(t * 1000);
  return d.toDateString() === now.toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
}

/** Create an element with a class and optional text. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A progress bar: `fraction` in 0..1, or null for an indeterminate (striped) bar. */
export function progressBar(fraction: number | null, state = ''): HTMLElement {
  const bar = el('div', `air-bar${state ? ` air-bar-${state}` : ''}`);
  const fill = el('div', 'air-bar-fill');
  if (fraction === null) {
    bar.classList.add('air-bar-indeterminate');
  } else {
    const pct = Math.max(0, Math.min(1, fraction)) * 100;
    fill.style.width = `${pct.toFixed(1)}%`;
    bar.setAttribute('role', 'progressbar');
    bar.setAttribute('aria-valuenow', pct.toFixed(0));
    bar.setAttribute('aria-valuemin', '0');
    bar.setAttribute('aria-valuemax', '100');
  }
  bar.appendChild(fill);
  return bar;
}
