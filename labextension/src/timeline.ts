/**
 * The checkpoint time line drawn from its spec (`ITimelineSpec`, in each folder of `GET checkpoints`):
 * the same drawing as the notebook's (`air_magics/charts/saves.py`). Each save is a `<g class="air-save-bar">` of two lanes,
 * the loop's (queued, blocked) and the save's (staging, upload, commit); each phase a
 * `<rect class="air-seg" data-step data-kind data-from data-to>` with a `<title>` (hovered: its
 * seconds). The loop's step rate over the same seconds is drawn above by `chart.ts`.
 */
import { IBarsPanel, ITimelineSpec } from './api';
import { drawPanel, fmtValue, LEFT, niceMax, RIGHT, svg, titled, W } from './chart';
import { el } from './format';

const SEGMENT_COLORS: Record<string, string> = {
  queued: '#bdbdbd',
  blocked: '#c62828',
  staging: '#1565c0',
  upload: '#6a1b9a',
  commit: '#2e7d32'
};
const ROW = 14;
const TOP = 18;
const BOTTOM = 30;

function fmtSeconds(v: number): string {
  return v < 10 ? `${v.toFixed(2)} s` : `${v.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 })} s`;
}

/** The saves' rows as one `<svg data-panel="saves">`. */
export function drawSaves(spec: ITimelineSpec): SVGElement {
  const span = spec.x.to || 1;
  const height = TOP + ROW * spec.saves.length + BOTTOM;
  const pw = W - LEFT - RIGHT;
  const sx = (x: number) => Math.round((LEFT + (x / span) * pw) * 10) / 10;
  const root = svg('svg', {
    class: 'air-chart',
    'data-panel': 'saves',
    viewBox: `0 0 ${W} ${height}`,
    'font-family': 'sans-serif',
    'font-size': 9
  });
  root.appendChild(svg('text', { x: LEFT, y: 11, 'font-size': 10, 'font-weight': 'bold' }, 'checkpoint saves (s)'));
  spec.saves.forEach((s, i) => {
    const y = TOP + i * ROW;
    const marks = [s.overlaps ? 'overlaps' : '', s.queued ? 'queued' : ''].filter(Boolean);
    const rate = s.mb_per_s ? `, ${s.mb_per_s.toFixed(1)} MB/s` : '';
    const row = svg('g', {
      class: 'air-save-bar',
      'data-step': s.step,
      'data-state': s.state,
      'data-overlaps': String(s.overlaps),
      'data-queued': String(s.queued)
    });
    titled(row, `step ${s.step}: ${s.state}${rate}${marks.map(m => ', ' + m).join('')}`);
    const label = svg('text', { x: LEFT - 3, y: y + 9, 'text-anchor': 'end' }, `${marks.length ? '! ' : ''}${s.step}`);
    if (marks.length) {
      label.setAttribute('font-weight', 'bold');
    }
    row.appendChild(label);
    for (const seg of s.segments) {
      const x0 = sx(seg.from);
      const x1 = sx(seg.to);
      const rect = svg('rect', {
        class: 'air-seg',
        'data-step': s.step,
        'data-kind': seg.kind,
        'data-from': seg.from,
        'data-to': seg.to,
        x: x0,
        y: y + (seg.lane === 'loop' ? 1 : 6),
        width: Math.max(Math.round((x1 - x0) * 10) / 10, 0.5),
        height: 5,
        fill: SEGMENT_COLORS[seg.kind] ?? '#999'
      });
      row.appendChild(titled(rect, `step ${s.step} ${seg.kind}: ${fmtSeconds(seg.to - seg.from)} (at ${fmtSeconds(seg.from)})`));
    }
    root.appendChild(row);
  });
  const axisY = TOP + ROW * spec.saves.length + 10;
  const start = new Date(spec.x.t0 * 1000).toTimeString().slice(0, 8);
  root.appendChild(svg('text', { x: LEFT, y: axisY }, start));
  root.appendChild(svg('text', { x: W - RIGHT, y: axisY, 'text-anchor': 'end' }, `+${fmtSeconds(span)}`));
  const legend = svg('text', { class: 'air-legend', x: LEFT, y: axisY + 12 });
  for (const [kind, color] of Object.entries(SEGMENT_COLORS)) {
    legend.appendChild(svg('tspan', { fill: color }, `\u25a0 ${kind} `));
  }
  root.appendChild(legend);
  return root;
}

/** Named values as bars on a 0-based axis, refs as dashed lines: Python's `bars_svg`. */
export function drawBars(panel: IBarsPanel): SVGElement {
  const H = 132;
  const BARS_TOP = 18;
  const BARS_BOTTOM = 34;
  const refs = panel.refs ?? [];
  const ymax = niceMax(Math.max(0, ...panel.bars.map(b => b.value), ...refs.map(r => r.value)));
  const pw = W - LEFT - RIGHT;
  const ph = H - BARS_TOP - BARS_BOTTOM;
  const sy = (y: number) => Math.round((BARS_TOP + ph - (Math.min(Math.max(y, 0), ymax) / ymax) * ph) * 10) / 10;
  const root = svg('svg', {
    class: 'air-chart',
    'data-panel': panel.id,
    viewBox: `0 0 ${W} ${H}`,
    'font-family': 'sans-serif',
    'font-size': 9
  });
  root.appendChild(svg('text', { x: LEFT, y: 11, 'font-size': 10, 'font-weight': 'bold' }, `${panel.title} (${panel.unit})`));
  for (const y of [0, ymax / 2, ymax]) {
    root.appendChild(svg('line', { x1: LEFT, x2: W - RIGHT, y1: sy(y), y2: sy(y), stroke: '#ccc', 'stroke-width': 0.5 }));
    root.appendChild(svg('text', { x: LEFT - 3, y: sy(y) + 3, 'text-anchor': 'end' }, fmtValue(y)));
  }
  const slot = pw / Math.max(panel.bars.length, 1);
  const every = Math.max(1, Math.ceil((panel.bars.length * 26) / pw));
  panel.bars.forEach((b, i) => {
    const top = sy(b.value);
    const rect = svg('rect', {
      class: 'air-bar',
      'data-label': b.label,
      'data-y': b.value,
      x: Math.round((LEFT + i * slot + slot * 0.15) * 10) / 10,
      y: top,
      width: Math.round(slot * 0.7 * 10) / 10,
      height: Math.round((sy(0) - top) * 10) / 10,
      fill: '#1f77b4'
    });
    root.appendChild(titled(rect, `${b.title || b.label}: ${fmtValue(b.value)} ${panel.unit}`));
    if (i % every === 0) {
      const mid = Math.round((LEFT + (i + 0.5) * slot) * 10) / 10;
      root.appendChild(svg('text', { x: mid, y: H - 18, 'text-anchor': 'middle' }, b.label));
    }
  });
  for (const r of refs) {
    const line = svg('line', {
      class: 'air-ref',
      'data-label': r.label,
      'data-y': r.value,
      x1: LEFT,
      x2: W - RIGHT,
      y1: sy(r.value),
      y2: sy(r.value),
      stroke: '#d62728',
      'stroke-dasharray': '4 2'
    });
    root.appendChild(titled(line, `${r.label}: ${fmtValue(r.value)} ${panel.unit}`));
  }
  if (panel.x_label) {
    root.appendChild(svg('text', { x: W - RIGHT, y: H - 6, 'text-anchor': 'end' }, panel.x_label));
  }
  return root;
}

/** The step-rate panel (when a loader ran meanwhile) over the saves' rows, on one time axis. */
export function drawTimeline(spec: ITimelineSpec): HTMLElement {
  const block = el('div', 'air-timeline');
  if (spec.rate) {
    block.appendChild(drawPanel(spec.rate, 's', [0, spec.x.to], x => `at ${x.toLocaleString('en-US')} s`));
  }
  block.appendChild(drawSaves(spec));
  if (spec.rates) {
    block.appendChild(drawBars(spec.rates));
  }
  return block;
}
