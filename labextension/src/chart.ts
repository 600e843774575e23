/**
 * The training chart drawn from its spec (`IChartSpec`, served by `GET training`): the same
 * drawing as the notebook cell's SVG (`air_magics/charts/svg.py`), with no chart library. Each
 * panel is an `<svg class="air-chart" data-panel=ID>` with axes and units, bands, a line per
 * series and a `<circle class="air-point">` per point whose `<title>` (shown on hover) and
 * `data-series` / `data-x` / `data-y` attributes hold its series, step and value.
 */
import { IChartPanel, IChartSpec } from './api';
import { el } from './format';

const SVG_NS = 'http://www.w3.org/2000/svg';
const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
const BAND_COLORS: Record<string, string> = {
  'compute-bound': '#2ca02c',
  'moderately input-bound': '#ffbf00',
  'input-bound': '#d62728'
};
export const W = 340;
const H = 132;
export const LEFT = 46;
export const RIGHT = 8;
const TOP = 18;
const BOTTOM = 34; // the x labels, then the legend

/** The axis top for data up to `v`: 1, 2 or 5 times a power of ten (1 for no data), as in Python. */
export function niceMax(v: number): number {
  if (!(v > 0) || !isFinite(v)) {
    return 1;
  }
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) {
    if (v <= m * p) {
      return m * p;
    }
  }
  return 10 * p;
}

/** Like Python's `f"{v:,.4g}"` for the values a chart shows. */
export function fmtValue(v: number): string {
  return Number(v.toPrecision(4)).toLocaleString('en-US', { maximumFractionDigits: 20 });
}

export function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, String(v));
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function titled(node: SVGElement, title: string): SVGElement {
  node.appendChild(svg('title', {}, title));
  return node;
}

function extent(panel: IChartPanel, range?: [number, number]): [number, number, number] {
  const xs = panel.series.flatMap(s => s.points.map(p => p[0]));
  const x0 = range ? range[0] : xs.length ? Math.min(...xs) : 0;
  const x1 = range ? range[1] : xs.length ? Math.max(...xs) : 1;
  if (panel.ymax !== null) {
    return [x0, x1, panel.ymax];
  }
  let top = 0;
  if (panel.stacked) {
    const sums = new Map<number, number>();
    panel.series.forEach(s => s.points.forEach(([x, y]) => sums.set(x, (sums.get(x) ?? 0) + y)));
    sums.forEach(v => (top = Math.max(top, v)));
  } else {
    panel.series.forEach(s => s.points.forEach(([, y]) => (top = Math.max(top, y))));
  }
  return [x0, x1, niceMax(top)];
}

/**
 * One panel as an `<svg>` element; `range`: the spec's shared step axis (default: the panel's points);
 * `xHover`: a point's x in its title.
 */
export function drawPanel(
  panel: IChartPanel,
  xUnit: string,
  range?: [number, number],
  xHover: (x: number) => string = x => `step ${x.toLocaleString('en-US')}`
): SVGElement {
  const [x0, x1, ymax] = extent(panel, range);
  const span = x1 - x0 || 1;
  const pw = W - LEFT - RIGHT;
  const ph = H - TOP - BOTTOM;
  const sx = (x: number) => Math.round((LEFT + ((x - x0) / span) * pw) * 10) / 10;
  const sy = (y: number) => Math.round((TOP + ph - (Math.min(Math.max(y, 0), ymax) / ymax) * ph) * 10) / 10;
  const root = svg('svg', {
    class: 'air-chart',
    'data-panel': panel.id,
    viewBox: `0 0 ${W} ${H}`,
    'font-family': 'sans-serif',
    'font-size': 9
  });
  root.appendChild(svg('text', { x: LEFT, y: 11, 'font-size': 10, 'font-weight': 'bold' }, `${panel.title} (${panel.unit})`));
  for (const b of panel.bands) {
    const rect = svg('rect', {
      class: 'air-band',
      'data-band': b.label,
      x: LEFT,
      y: sy(b.to),
      width: pw,
      height: Math.round((sy(b.from) - sy(b.to)) * 10) / 10,
      fill: BAND_COLORS[b.label] ?? '#999',
      'fill-opacity': 0.12
    });
    root.appendChild(titled(rect, `${b.label}: ${fmtValue(b.from)}-${fmtValue(b.to)} ${panel.unit}`));
  }
  for (const y of [0, ymax / 2, ymax]) {
    root.appendChild(svg('line', { x1: LEFT, x2: W - RIGHT, y1: sy(y), y2: sy(y), stroke: '#ccc', 'stroke-width': 0.5 }));
    root.appendChild(svg('text', { x: LEFT - 3, y: sy(y) + 3, 'text-anchor': 'end' }, fmtValue(y)));
  }
  root.appendChild(svg('text', { x: LEFT, y: H - 18 }, fmtValue(x0)));
  root.appendChild(svg('text', { x: W - RIGHT, y: H - 18, 'text-anchor': 'end' }, `${fmtValue(x1)} ${xUnit}`));
  const base = new Map<number, number>();
  panel.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    if (!s.points.length) {
      return;
    }
    let drawn: [number, number][] = s.points;
    if (panel.stacked) {
      const tops: [number, number][] = s.points.map(([x, y]) => [x, (base.get(x) ?? 0) + y]);
      const area = tops
        .map(([x, y]) => `${sx(x)},${sy(y)}`)
        .concat([...s.points].reverse().map(([x]) => `${sx(x)},${sy(base.get(x) ?? 0)}`));
      root.appendChild(svg('polygon', { points: area.join(' '), fill: color, 'fill-opacity': 0.35, stroke: 'none' }));
      tops.forEach(([x, y]) => base.set(x, y));
      drawn = tops;
    }
    root.appendChild(
      svg('polyline', {
        points: drawn.map(([x, y]) => `${sx(x)},${sy(y)}`).join(' '),
        fill: 'none',
        stroke: color,
        'stroke-width': 1.2
      })
    );
    s.points.forEach(([x, y], k) => {
      const dot = svg('circle', {
        class: 'air-point',
        'data-series': s.name,
        'data-x': x,
        'data-y': y,
        cx: sx(x),
        cy: sy(drawn[k][1]),
        r: 2,
        fill: color
      });
      root.appendChild(titled(dot, `${s.name}, ${xHover(x)}: ${fmtValue(y)} ${panel.unit}`));
    });
  });
  if (panel.series.length > 1) {
    const legend = svg('text', { class: 'air-legend', x: LEFT, y: H - 4 });
    panel.series.forEach((s, i) => {
      legend.appendChild(svg('tspan', { fill: COLORS[i % COLORS.length] }, `\u25a0 ${s.name} `));
    });
    root.appendChild(legend);
  }
  return root;
}

/** The whole chart: the verdict sentence, then every panel. */
export function drawChart(spec: IChartSpec): HTMLElement {
  const block = el('div', 'air-training');
  block.appendChild(el('div', 'air-training-verdict', spec.verdict || spec.verdict_kind));
  const range: [number, number] | undefined =
    typeof spec.x.from === 'number' && typeof spec.x.to === 'number' ? [spec.x.from, spec.x.to] : undefined;
  for (const panel of spec.panels) {
    block.appendChild(drawPanel(panel, spec.x.unit, range));
  }
  return block;
}
