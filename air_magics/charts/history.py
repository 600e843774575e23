"""``LoaderHistory``: the last points of one DataLoader's timing, kept in its status document.

Why in the document: the chart's readers are in other processes (the JupyterLab server, a notebook
whose loop runs under ``%%air_torchrun``) or come later (a restarted kernel, a reopened notebook),
and all of them already read ``loader-<pid>``. Each row holds the loader's *running totals* at one
moment (never rates): a rate is the difference of two rows over their time, so it stays right
whichever rows are kept. Memory and the document stay bounded: at :data:`CAPACITY` rows every other
row is dropped (the whole run at half the resolution), an O(1) cost per row amortised.

Fed by :class:`~air_magics.listeners.StatusDocuments` (at most twice a second, never per batch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["FIELDS", "CAPACITY", "STAGE_GROUPS", "LoaderHistory", "history_rows"]

FIELDS = (
    "t",  # wall clock (s since the epoch)
    "step",  # steps handed out so far
    "epoch",
    "items",  # items handed out so far
    "bytes",  # bytes read from storage so far
    "wait",  # seconds the loop waited for batches
    "compute",  # seconds the loop spent between batches
    "storage",  # seconds per input stage (the verdict's groups): listing + storage read
    "cache_write",
    "handover",
    "transform",
    "collate",
    "hits",  # the shared cache's hits and misses (every process using that cache)
    "misses",
)
CAPACITY = 200
STAGE_GROUPS: Mapping[str, tuple[str, ...]] = {
    "storage": ("listing", "storage_read"),
    "cache_write": ("cache_write",),
    "handover": ("handover",),
    "transform": ("transform",),
    "collate": ("collate",),
}


def _r(v: float) -> float:
    return round(float(v), 4)


class LoaderHistory:
    """The rows of one loader (see the module docstring); a loader whose step count went back is
    a new loader in the same process, and starts a new history."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        if capacity < 4:
            raise ValueError(f"capacity={capacity} must be at least 4 rows")
        self.capacity = capacity
        self.rows: list[list[float]] = []

    def add(self, doc: Mapping[str, Any], t: float, cache: Mapping[str, Any] | None = None) -> None:
        """One row at time *t* from a loader document (``LoaderEvent.to_dict()``) and the cache's counters."""
        steps = int(doc.get("steps") or 0)
        if self.rows and steps < self.rows[-1][1]:
            self.rows.clear()
        stages = doc.get("stages") or {}
        cache = cache or {}
        row = [
            round(float(t), 3),
            steps,
            int(doc.get("epoch") or 0),
            int(doc.get("items") or 0),
            int(doc.get("read_bytes") or 0),
            _r(doc.get("data_wait_s") or 0.0),
            _r(doc.get("compute_s") or 0.0),
            *(_r(sum(float(stages.get(s) or 0.0) for s in group)) for group in STAGE_GROUPS.values()),
            int(cache.get("hits") or 0),
            int(cache.get("misses") or 0),
        ]
        if len(self.rows) >= self.capacity:
            del self.rows[1::2]  # every other row: the whole run, at half the resolution
        self.rows.append(row)

    def document(self) -> dict[str, Any]:
        """``{"fields": FIELDS, "rows": [...]}``: what the loader's status document carries as ``history``."""
        return {"fields": list(FIELDS), "rows": [list(r) for r in self.rows]}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def history_rows(doc: Mapping[str, Any]) -> list[dict[str, float]]:
    """A loader document's history as one mapping per row (``[]`` for none or a malformed one:
    documents are written by other processes, so nothing in them is trusted)."""
    h = doc.get("history")
    if not isinstance(h, Mapping):
        return []
    names, rows = h.get("fields"), h.get("rows")
    if not isinstance(names, list) or not isinstance(rows, list):
        return []
    out = []
    for r in rows:
        if isinstance(r, list) and len(r) == len(names) and all(_number(v) for v in r):
            out.append({str(k): float(v) for k, v in zip(names, r, strict=True)})
    return out
