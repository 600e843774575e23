"""The training chart as plain data: what the cell's SVG, the sidebar's TypeScript and the text
fallback all draw, so the three never disagree.

:func:`training_spec` turns the loader documents of a run (one per rank) into panels over steps:
items/s, MB/s read from storage, the data-wait share per interval with the verdict's thresholds as
bands, the cache hit rate, and seconds per step in each input stage (stacked). Each point is the
rate between two history rows (:mod:`.history`), placed at the later row's step. Values are
rounded to 4 significant digits once, here, so every renderer shows the same number.

The spec (``to_dict``, JSON)::

    {"x": {"label": "step", "unit": "steps", "from": int, "to": int}, "verdict": str, "verdict_kind": str, "ranks": int,
     "panels": [{"id", "title", "unit", "stacked": bool, "ymax": float | None,
                 "bands": [{"from", "to", "label"}], "series": [{"name", "points": [[x, y], ...]}]}]}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..datasets.verdict import COMPUTE_BOUND_BELOW, INPUT_BOUND_ABOVE
from .history import STAGE_GROUPS, history_rows

__all__ = ["training_spec", "wait_bands", "STAGE_LABELS", "sig"]

STAGE_LABELS = {
    "storage": "storage",
    "cache_write": "cache write",
    "handover": "hand-over",
    "transform": "transform",
    "collate": "collate",
}

Row = Mapping[str, float]


def _rank(doc: Mapping[str, Any]) -> int:
    r = doc.get("rank")
    return r if isinstance(r, int) else 0


def sig(v: float) -> float:
    """*v* rounded to 4 significant digits: the value every renderer shows and hovers."""
    return float(f"{v:.4g}")


def wait_bands() -> list[dict[str, Any]]:
    """The verdict's kinds as bands of the data-wait panel, in percent (its thresholds, not copies)."""
    low, high = COMPUTE_BOUND_BELOW * 100, INPUT_BOUND_ABOVE * 100
    return [
        {"from": 0.0, "to": low, "label": "compute-bound"},
        {"from": low, "to": high, "label": "moderately input-bound"},
        {"from": high, "to": 100.0, "label": "input-bound"},
    ]


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def _points(rows: Sequence[Row], value: Callable[[Row, Row], float | None]) -> list[list[float]]:
    """``[step, value]`` for each pair of consecutive rows whose value is defined."""
    out = []
    for a, b in zip(rows, rows[1:], strict=False):
        if b["t"] <= a["t"] or b["step"] <= a["step"]:  # no step between them: an epoch's end, not a rate
            continue
        v = value(a, b)
        if v is not None:
            out.append([int(b["step"]), sig(v)])
    return out


def _d(a: Row, b: Row, key: str) -> float:
    return max(0.0, b[key] - a[key])


_RATES: dict[str, Callable[[Row, Row], float | None]] = {
    "items": lambda a, b: _d(a, b, "items") / (b["t"] - a["t"]),
    "mbps": lambda a, b: _d(a, b, "bytes") / (b["t"] - a["t"]) / 1e6,
    "wait": lambda a, b: _pct(_d(a, b, "wait"), _d(a, b, "wait") + _d(a, b, "compute")),
    "hits": lambda a, b: _pct(_d(a, b, "hits"), _d(a, b, "hits") + _d(a, b, "misses")),
}


def _pct(num: float, den: float) -> float | None:
    r = _ratio(num, den)
    return None if r is None else r * 100


def _stage(name: str) -> Callable[[Row, Row], float | None]:
    return lambda a, b: _ratio(_d(a, b, name), _d(a, b, "step"))


def _panel(pid: str, title: str, unit: str, series: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {
        "id": pid,
        "title": title,
        "unit": unit,
        "stacked": False,
        "ymax": None,
        "bands": [],
        "series": series,
        **kw,
    }


def training_spec(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The chart of a run's loaders (*docs*: one ``loader-<pid>`` document per rank, by rank), or
    ``None`` when none has a history yet."""
    runs = [(d, history_rows(d)) for d in docs]
    runs = [(d, rows) for d, rows in runs if rows]
    if not runs:
        return None
    many = len(runs) > 1

    def per_rank(rate: str) -> list[dict[str, Any]]:
        return [
            {"name": f"rank {_rank(d)}" if many else "loader", "points": _points(rows, _RATES[rate])}
            for d, rows in runs
        ]

    first, rows0 = runs[0]
    stages_title = "seconds per step by stage" + (f" (rank {_rank(first)})" if many else "")
    panels = [
        _panel("items", "items/s", "items/s", per_rank("items")),
        _panel("mbps", "read from storage", "MB/s", per_rank("mbps")),
        _panel("wait", "data wait", "%", per_rank("wait"), ymax=100.0, bands=wait_bands()),
        _panel("hits", "cache hit rate", "%", per_rank("hits"), ymax=100.0),
        _panel(
            "stages",
            stages_title,
            "s/step",
            [{"name": STAGE_LABELS[s], "points": _points(rows0, _stage(s))} for s in STAGE_GROUPS],
            stacked=True,
        ),
    ]
    xs = [p[0] for panel in panels for s in panel["series"] for p in s["points"]]
    return {
        # one step axis for every panel, so a moment lines up across them
        "x": {"label": "step", "unit": "steps", "from": min(xs, default=0), "to": max(xs, default=1)},
        "verdict": str(first.get("verdict") or ""),
        "verdict_kind": str(first.get("verdict_kind") or ""),
        "ranks": len(runs),
        "steps": int(rows0[-1]["step"]),
        "panels": panels,
    }
