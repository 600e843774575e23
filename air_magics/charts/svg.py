"""The training chart (:mod:`.spec`) as inline SVG: a vector drawing a person can read values off.

Each panel is one ``<svg class="air-chart" data-panel=ID>``: axes with their units, the bands
(the verdict's kinds on the data-wait panel), a line per series and a ``<circle class="air-point">``
per point whose ``<title>`` is its step and value (the browser shows it on hover) and whose
``data-series``/``data-x``/``data-y`` hold the same numbers for tests and tools. A stacked panel
draws each stage as an area on the ones below; its points still carry their own values. The
sidebar's TypeScript (``labextension/src/chart.ts``) draws the same spec the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["panel_svg", "bars_svg", "chart_html", "COLORS", "nice_max"]

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
BAND_COLORS = {"compute-bound": "#2ca02c", "moderately input-bound": "#ffbf00", "input-bound": "#d62728"}
W, H = 340, 132
LEFT, RIGHT, TOP, BOTTOM = 46, 8, 18, 34  # the bottom holds the x labels, then the legend


def nice_max(v: float) -> float:
    """The axis top for data up to *v*: 1, 2 or 5 times a power of ten (1 for no data)."""
    if not v > 0 or not math.isfinite(v):
        return 1.0
    p = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 5, 10):
        if v <= m * p:
            return m * p
    return 10 * p  # pragma: no cover


def _fmt(v: float) -> str:
    return f"{v:,.4g}"


def _extent(panel: Mapping[str, Any], x_range: Sequence[float] | None) -> tuple[float, float, float]:
    xs = [p[0] for s in panel["series"] for p in s["points"]]
    x0, x1 = x_range if x_range else ((min(xs), max(xs)) if xs else (0, 1))
    if panel.get("ymax") is not None:
        return x0, x1, float(panel["ymax"])
    if panel.get("stacked"):
        sums: dict[float, float] = {}
        for s in panel["series"]:
            for x, y in s["points"]:
                sums[x] = sums.get(x, 0.0) + y
        top = max(sums.values(), default=0.0)
    else:
        top = max((p[1] for s in panel["series"] for p in s["points"]), default=0.0)
    return x0, x1, nice_max(top)


def panel_svg(
    panel: Mapping[str, Any],
    x_unit: str = "steps",
    x_range: Sequence[float] | None = None,
    x_hover: str = "step {x:,}",
) -> str:
    """One panel of a spec as an ``<svg>`` element (see the module docstring); *x_range*: the
    spec's shared step axis (default: the panel's own points); *x_hover*: a point's x in its title."""
    x0, x1, ymax = _extent(panel, x_range)
    span = (x1 - x0) or 1
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(x: float) -> float:
        return round(LEFT + (x - x0) / span * pw, 1)

    def sy(y: float) -> float:
        return round(TOP + ph - min(max(y, 0.0), ymax) / ymax * ph, 1)

    unit = escape(panel["unit"])
    out = [
        f'<svg class="air-chart" data-panel="{escape(panel["id"])}" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="9" '
        'fill="currentColor">',  # text in the page's own colour: readable on a dark theme too
        f'<text x="{LEFT}" y="11" font-size="10" font-weight="bold">{escape(panel["title"])} ({unit})</text>',
    ]
    for b in panel.get("bands", []):
        lo, hi = sy(b["to"]), sy(b["from"])
        color = BAND_COLORS.get(b["label"], "#999")
        out.append(
            f'<rect class="air-band" data-band="{escape(b["label"])}" x="{LEFT}" y="{lo}" width="{pw}" '
            f'height="{round(hi - lo, 1)}" fill="{color}" fill-opacity="0.12"><title>{escape(b["label"])}: '
            f"{_fmt(b['from'])}-{_fmt(b['to'])} {unit}</title></rect>"
        )
    for y in (0.0, ymax / 2, ymax):  # y axis: 0, half, top, with the unit
        out.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{sy(y)}" y2="{sy(y)}" stroke="#ccc" stroke-width="0.5"/>'
            f'<text x="{LEFT - 3}" y="{sy(y) + 3}" text-anchor="end">{_fmt(y)}</text>'
        )
    out.append(
        f'<text x="{LEFT}" y="{H - 18}">{_fmt(x0)}</text>'
        f'<text x="{W - RIGHT}" y="{H - 18}" text-anchor="end">{_fmt(x1)} {escape(x_unit)}</text>'
    )
    out += _series(panel, sx, sy, unit, x_hover)
    out.append("</svg>")
    return "".join(out)


def _series(panel: Mapping[str, Any], sx: Any, sy: Any, unit: str, x_hover: str) -> list[str]:
    out: list[str] = []
    base: dict[float, float] = {}
    for i, s in enumerate(panel["series"]):
        color, name = COLORS[i % len(COLORS)], escape(s["name"])
        pts = s["points"]
        if not pts:
            continue
        if panel.get("stacked"):
            tops = [(x, base.get(x, 0.0) + y) for x, y in pts]
            area = [f"{sx(x)},{sy(y)}" for x, y in tops] + [f"{sx(x)},{sy(base.get(x, 0.0))}" for x, _ in reversed(pts)]
            out.append(f'<polygon points="{" ".join(area)}" fill="{color}" fill-opacity="0.35" stroke="none"/>')
            for x, y in tops:
                base[x] = y
            drawn = tops
        else:
            drawn = [(x, y) for x, y in pts]
        line = " ".join(f"{sx(x)},{sy(y)}" for x, y in drawn)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.2"/>')
        for (x, y), (_, v) in zip(pts, drawn, strict=True):
            out.append(
                f'<circle class="air-point" data-series="{name}" data-x="{x}" data-y="{y}" cx="{sx(x)}" '
                f'cy="{sy(v)}" r="2" fill="{color}"><title>{name}, {x_hover.format(x=x)}: {_fmt(y)} {unit}</title></circle>'
            )
    legend = " ".join(
        f'<tspan fill="{COLORS[i % len(COLORS)]}">&#9632; {escape(s["name"])}</tspan>'
        for i, s in enumerate(panel["series"])
    )
    if len(panel["series"]) > 1:
        out.append(f'<text class="air-legend" x="{LEFT}" y="{H - 4}">{legend}</text>')
    return out


def bars_svg(panel: Mapping[str, Any]) -> str:
    """A panel of named values (``{"id", "title", "unit", "bars": [{"label", "value", "title"}],
    "refs": [{"label", "value"}]}``) as an ``<svg>`` of vertical bars on a 0-based axis with its unit:
    each ``<rect class="air-bar">`` carries ``data-label``/``data-y`` and a ``<title>`` (the bar's
    long name and value); a ref is a dashed line across (a measured rate to compare with)."""
    bars, refs = panel["bars"], panel.get("refs", [])
    ymax = nice_max(max([b["value"] for b in bars] + [r["value"] for r in refs], default=0.0))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    unit = escape(panel["unit"])

    def sy(y: float) -> float:
        return round(TOP + ph - min(max(y, 0.0), ymax) / ymax * ph, 1)

    out = [
        f'<svg class="air-chart" data-panel="{escape(panel["id"])}" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="9" '
        'fill="currentColor">',
        f'<text x="{LEFT}" y="11" font-size="10" font-weight="bold">{escape(panel["title"])} ({unit})</text>',
    ]
    for y in (0.0, ymax / 2, ymax):
        out.append(
            f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{sy(y)}" y2="{sy(y)}" stroke="#ccc" stroke-width="0.5"/>'
            f'<text x="{LEFT - 3}" y="{sy(y) + 3}" text-anchor="end">{_fmt(y)}</text>'
        )
    slot = pw / max(len(bars), 1)
    every = max(1, math.ceil(len(bars) * 26 / pw))  # axis labels about 26 px apart; every bar keeps its title
    for i, b in enumerate(bars):
        x, top = round(LEFT + i * slot + slot * 0.15, 1), sy(b["value"])
        label = escape(b["label"])
        out.append(
            f'<rect class="air-bar" data-label="{label}" data-y="{b["value"]}" x="{x}" y="{top}" '
            f'width="{round(slot * 0.7, 1)}" height="{round(sy(0.0) - top, 1)}" fill="{COLORS[0]}">'
            f"<title>{escape(b.get('title') or b['label'])}: {_fmt(b['value'])} {unit}</title></rect>"
        )
        if i % every == 0:
            mid = round(LEFT + (i + 0.5) * slot, 1)
            out.append(f'<text x="{mid}" y="{H - 18}" text-anchor="middle">{label}</text>')
    for r in refs:
        out.append(
            f'<line class="air-ref" data-label="{escape(r["label"])}" data-y="{r["value"]}" x1="{LEFT}" '
            f'x2="{W - RIGHT}" y1="{sy(r["value"])}" y2="{sy(r["value"])}" stroke="{COLORS[3]}" '
            f'stroke-dasharray="4 2"><title>{escape(r["label"])}: {_fmt(r["value"])} {unit}</title></line>'
        )
    if panel.get("x_label"):
        out.append(f'<text x="{W - RIGHT}" y="{H - 6}" text-anchor="end">{escape(panel["x_label"])}</text>')
    out.append("</svg>")
    return "".join(out)


def chart_html(spec: Mapping[str, Any] | None, panels: Sequence[str] | None = None) -> str:
    """The whole chart: the verdict sentence, then the panels (those named in *panels*, default all)."""
    if not spec:
        return '<div class="air-training">no loader history yet: iterate an air_magics DataLoader</div>'
    verdict = escape(spec.get("verdict") or spec.get("verdict_kind") or "")
    x = spec["x"]
    x_range = (x["from"], x["to"]) if "from" in x else None
    svgs = "".join(panel_svg(p, x["unit"], x_range) for p in spec["panels"] if panels is None or p["id"] in panels)
    return (
        f'<div class="air-training"><div class="air-verdict" style="margin:2px 0 4px;text-align:left">{verdict}</div>'
        f'<div style="display:flex;flex-wrap:wrap;gap:4px">{svgs}</div></div>'
    )
