"""The checkpoint time line: each save of a ``CheckpointManager`` as a bar over wall-clock time, split
into its phases, under the loop's step rate over the same seconds.

Read from the checkpoints status document (``checkpoint_status``: the last 20 saves' records,
:class:`~air_magics.checkpoints.save_history.SaveHistory`), so the widget, the magic and the sidebar
draw one history. A save's record holds ``started`` (wall clock), ``blocked_s`` (the loop held by the
call), ``staging_s`` (the background copy, from the call), the times it first entered each state
(``uploading_at``, ``uploaded_at``), ``finished``, ``waited_s`` (held back by the previous save) and
``mb_per_s``. Each row has two lanes: the loop's (blocked, or queued behind the previous save) and the
save's own (staging, upload, commit). A save whose span crosses another's is marked ``overlaps``.
Below, each save's MB/s as a bar against the volume's measured rate (its last ``probe``), when known.

The spec (plain data, seconds relative to ``x.t0``)::

    {"x": {"t0": float, "from": 0, "to": float, "unit": "s"}, "rate": panel | None, "rates": bars | None,
     "saves": [{"step", "state", "mb_per_s", "overlaps": bool, "queued": bool,
                "segments": [{"kind", "lane", "from", "to"}]}]}
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from .history import history_rows
from .spec import sig
from .svg import LEFT, RIGHT, W, bars_svg, panel_svg

__all__ = ["SEGMENT_COLORS", "save_timeline", "timeline_svg", "timeline_html", "volume_rate"]

SEGMENT_COLORS = {
    "queued": "#bdbdbd",
    "blocked": "#c62828",
    "staging": "#1565c0",
    "upload": "#6a1b9a",
    "commit": "#2e7d32",
}
ROW, TOP, BOTTOM = 14, 18, 30  # px per save; the title above, the time axis and legend below


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _segments(s: Mapping[str, Any], now: float) -> list[dict[str, Any]]:
    """A save's phases as absolute ``[from, to]`` wall-clock spans (see the module docstring)."""
    started = _num(s.get("started"))
    if started is None:
        return []
    end = _num(s.get("finished")) or now
    out: list[dict[str, Any]] = []

    def add(kind: str, lane: str, a: float | None, b: float | None) -> None:
        if a is not None and b is not None and b > a:
            out.append({"kind": kind, "lane": lane, "from": a, "to": b})

    waited, blocked, staging = _num(s.get("waited_s")), _num(s.get("blocked_s")), _num(s.get("staging_s"))
    uploading, uploaded = _num(s.get("uploading_at")), _num(s.get("uploaded_at"))
    if waited:
        add("queued", "loop", started - waited, started)
    add("blocked", "loop", started, started + blocked if blocked is not None else None)
    if staging is not None:
        add("staging", "save", started + (blocked or 0.0), started + staging)
    # a record without the writer's times (an older one) uploads from its staging's (or the call's) end to its finish
    upload_from = uploading if uploading is not None else started + (staging if staging is not None else blocked or 0.0)
    add("upload", "save", upload_from, uploaded if uploaded is not None else end)
    add("commit", "save", uploaded, _num(s.get("finished")))
    return out


def _rate_panel(loaders: Sequence[Mapping[str, Any]], t0: float, t1: float) -> dict[str, Any] | None:
    """The first loader's steps/s over the time line's seconds (its rows inside the window)."""
    for doc in loaders:
        rows = [r for r in history_rows(doc) if t0 - 1 <= r["t"] <= t1 + 1]
        pts = [
            [sig(b["t"] - t0), sig((b["step"] - a["step"]) / (b["t"] - a["t"]))]
            for a, b in zip(rows, rows[1:], strict=False)
            if b["t"] > a["t"] and b["step"] >= a["step"]
        ]
        if pts:
            return {
                "id": "step-rate",
                "title": "loop",
                "unit": "steps/s",
                "stacked": False,
                "ymax": None,
                "bands": [],
                "series": [{"name": "steps/s", "points": pts}],
            }
    return None


def volume_rate(directory: str) -> dict[str, Any] | None:
    """The last ``%air_volume probe`` of *directory*'s volume (its status document ``probe-<volume>``):
    ``{"label", "value"}`` in MB/s (its parallel read rate), or ``None`` when it was never probed."""
    from ..status import read_status
    from ..volumes.path import VolumePath, is_volume_text

    if not isinstance(directory, str) or not is_volume_text(directory):
        return None
    doc = read_status(f"probe-{VolumePath.parse(directory).volume_id}") or {}
    rate, streams = _num(doc.get("parallel_read_mb_s")), doc.get("streams")
    return {"label": f"volume read rate (probe, {streams} streams)", "value": sig(rate)} if rate else None


def _rates_panel(saves: list[dict[str, Any]], ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Each committed save's MB/s as a bar, against the volume's measured rate (a dashed line)."""
    bars = [
        {"label": str(s["step"]), "value": sig(s["mb_per_s"]), "title": f"step {s['step']}"}
        for s in saves
        if s["mb_per_s"]
    ]
    if not bars:
        return None
    return {
        "id": "save-rates",
        "title": "save rate",
        "unit": "MB/s",
        "x_label": "step",
        "bars": bars,
        "refs": [dict(ref)] if ref else [],
    }


def save_timeline(
    doc: Mapping[str, Any],
    loaders: Sequence[Mapping[str, Any]] = (),
    now: float | None = None,
    volume: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The time line of a checkpoints document's saves (and of *loaders*' step rate over it, and the
    saves' MB/s against *volume*'s measured rate: :func:`volume_rate`), or ``None`` when no save has
    a start time; *now* ends a save still running."""
    now = time.time() if now is None else now
    saves = [(s, _segments(s, now)) for s in doc.get("saves") or [] if isinstance(s, Mapping)]
    saves = [(s, segs) for s, segs in saves if segs]
    if not saves:
        return None
    t0 = min(seg["from"] for _, segs in saves for seg in segs)
    t1 = max(seg["to"] for _, segs in saves for seg in segs)
    spans = [(min(x["from"] for x in segs), max(x["to"] for x in segs)) for _, segs in saves]
    out = []
    for i, (s, segs) in enumerate(saves):
        a, b = spans[i]
        overlaps = any(j != i and a < spans[j][1] and spans[j][0] < b for j in range(len(spans)))
        out.append(
            {
                "step": s.get("step"),
                "state": str(s.get("state", "?")),
                "mb_per_s": _num(s.get("mb_per_s")),
                "overlaps": overlaps,
                "queued": any(x["kind"] == "queued" for x in segs),
                "segments": [{**x, "from": round(x["from"] - t0, 6), "to": round(x["to"] - t0, 6)} for x in segs],
            }
        )
    span = max(t1 - t0, 1e-3)
    return {
        "x": {"t0": t0, "from": 0.0, "to": round(span, 6), "unit": "s"},
        "rate": _rate_panel(loaders, t0, t1),
        "rates": _rates_panel(out, volume),
        "saves": out,
    }


def _fmt_s(v: float) -> str:
    return f"{v:.2f} s" if v < 10 else f"{v:,.1f} s"


def timeline_svg(spec: Mapping[str, Any]) -> str:
    """The saves as rows of phase bars (``<rect class="air-seg" data-step data-kind data-from data-to>``
    with a ``<title>``), a row's label marked ``overlaps`` / ``queued`` where it does."""
    saves, span = spec["saves"], float(spec["x"]["to"]) or 1.0
    height = TOP + ROW * len(saves) + BOTTOM
    pw = W - LEFT - RIGHT

    def sx(x: float) -> float:
        return round(LEFT + x / span * pw, 1)

    out = [
        f'<svg class="air-chart" data-panel="saves" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
        'xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="9" fill="currentColor">',
        f'<text x="{LEFT}" y="11" font-size="10" font-weight="bold">checkpoint saves (s)</text>',
    ]
    for i, s in enumerate(saves):
        y = TOP + i * ROW
        step = escape(str(s["step"]))  # (a document any process wrote: nothing in it reaches the page unescaped)
        marks = [m for m, on in (("overlaps", s["overlaps"]), ("queued", s["queued"])) if on]
        rate = f", {s['mb_per_s']:,.1f} MB/s" if s.get("mb_per_s") else ""
        bold = ' font-weight="bold"' if marks else ""
        out.append(
            f'<g class="air-save-bar" data-step="{step}" data-state="{escape(s["state"])}" '
            f'data-overlaps="{str(s["overlaps"]).lower()}" data-queued="{str(s["queued"]).lower()}">'
            f"<title>step {step}: {escape(s['state'])}{rate}{''.join(', ' + m for m in marks)}</title>"
            f'<text x="{LEFT - 3}" y="{y + 9}" text-anchor="end"'
            f"{bold}>{'! ' if marks else ''}{step}</text>"
        )
        for seg in s["segments"]:
            lane_y = y + (1 if seg["lane"] == "loop" else 6)
            x0, x1 = sx(seg["from"]), sx(seg["to"])
            out.append(
                f'<rect class="air-seg" data-step="{step}" data-kind="{seg["kind"]}" data-from="{seg["from"]}" '
                f'data-to="{seg["to"]}" x="{x0}" y="{lane_y}" width="{max(round(x1 - x0, 1), 0.5)}" height="5" '
                f'fill="{SEGMENT_COLORS[seg["kind"]]}"><title>step {step} {seg["kind"]}: '
                f"{_fmt_s(seg['to'] - seg['from'])} (at {_fmt_s(seg['from'])})</title></rect>"
            )
        out.append("</g>")
    axis_y = TOP + ROW * len(saves) + 10
    t0 = time.strftime("%H:%M:%S", time.localtime(spec["x"]["t0"]))
    out.append(
        f'<text x="{LEFT}" y="{axis_y}">{t0}</text>'
        f'<text x="{W - RIGHT}" y="{axis_y}" text-anchor="end">+{_fmt_s(span)}</text>'
    )
    legend = " ".join(f'<tspan fill="{c}">&#9632; {k}</tspan>' for k, c in SEGMENT_COLORS.items())
    out.append(f'<text class="air-legend" x="{LEFT}" y="{axis_y + 12}">{legend}</text></svg>')
    return "".join(out)


def timeline_html(spec: Mapping[str, Any] | None) -> str:
    """The step-rate panel (when a loader ran meanwhile) over the saves' time line, same seconds."""
    if not spec:
        return ""
    rate = spec.get("rate")
    top = panel_svg(rate, "s", (0.0, spec["x"]["to"]), x_hover="at {x:,} s") if rate else ""
    rates = bars_svg(spec["rates"]) if spec.get("rates") else ""
    return (
        f'<div class="air-timeline" style="display:flex;flex-direction:column">{top}{timeline_svg(spec)}{rates}</div>'
    )
