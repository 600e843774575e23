"""The training chart as one line of text: the fallback outside Jupyter (a console, CI logs) and
the ``text/plain`` form of the cell's view.

Each panel becomes a sparkline of its last points (``▁▂▃▄▅▆▇█``, scaled to the panel's own top)
and its latest value with the unit; the stages panel becomes the latest seconds per step of its
largest stage. The first rank's series stands for the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .svg import nice_max

__all__ = ["sparkline", "training_line"]

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int = 12, top: float | None = None) -> str:
    """The last *width* values as bars, 0 at ``▁`` and *top* (default: their nice maximum) at ``█``."""
    vals = list(values)[-width:]
    if not vals:
        return ""
    top = top if top is not None else nice_max(max(vals))
    return "".join(BARS[min(len(BARS) - 1, max(0, int(v / top * (len(BARS) - 1) + 0.5)))] for v in vals)


def _last(panel: Mapping[str, Any]) -> tuple[list[float], float] | None:
    pts = panel["series"][0]["points"] if panel["series"] else []
    return ([p[1] for p in pts], pts[-1][1]) if pts else None


def training_line(spec: Mapping[str, Any] | None, width: int = 12) -> str:
    """One line: step, then each panel's sparkline and latest value, then the verdict's kind."""
    if not spec:
        return "training: no loader history yet"
    parts = [f"step {spec.get('steps', 0):,}"]
    for p in spec["panels"]:
        if p.get("stacked"):
            latest = [(s["points"][-1][1], s["name"]) for s in p["series"] if s["points"]]
            if latest:
                v, name = max(latest)
                parts.append(f"{name} {v:,.3g} {p['unit']}")
            continue
        got = _last(p)
        if got is not None:
            vals, v = got
            parts.append(f"{p['title']} {sparkline(vals, width, p.get('ymax'))} {v:,.3g} {p['unit']}")
    if spec.get("verdict_kind"):
        parts.append(str(spec["verdict_kind"]))
    return "training: " + " · ".join(parts)
