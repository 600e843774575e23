"""What ``FileCache.clear()`` does and reports: every entry dropped but those a reader may hold.

Why a module of its own: a clear walks the whole index (a million entries on a large cache) in
batches of stripes, reporting its progress after each, and keeps what was handed out in the last
``pin_seconds`` (a training loop may hold the path) or is being fetched right now (a stripe busy
for over ``CLEAR_WAIT`` seconds): what it removed, kept and why goes into its :class:`ClearReport`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..io.units import fmt_bytes

if TYPE_CHECKING:
    from .entries import Entries
    from .evict import Evictor

__all__ = ["CLEAR_WAIT", "ClearListener", "ClearProgress", "ClearReport", "drop_all"]

CLEAR_WAIT = 2.0  # seconds clear() waits for a stripe busy with a fetch; its entries are kept after that


@dataclass(frozen=True)
class ClearReport:
    """What ``clear()`` did: files removed, and entries kept because a reader may hold their path."""

    removed: int
    bytes: int
    kept: int
    pin_seconds: float

    def __str__(self) -> str:
        text = f"removed {self.removed:,} cached files ({fmt_bytes(self.bytes)})"
        if self.kept:
            text += (
                f"; kept {self.kept:,} in use (used in the last {self.pin_seconds:g} s or being fetched; "
                f"clear(force=True) removes them too, unsafe while a training loop reads them)"
            )
        return text


@dataclass(frozen=True)
class ClearProgress:
    """Where a ``clear(progress=...)`` stands: entries looked at (removed or kept) of the total,
    files and bytes removed so far of the bytes the index held. Reported after each batch of
    stripes, from ``0`` up to ``done == total`` (why: a cache of a million files takes a while)."""

    done: int
    total: int
    removed: int
    bytes: int
    bytes_total: int

    def __str__(self) -> str:
        return (
            f"{self.done:,} / {self.total:,} entries · removed {self.removed:,} files "
            f"({fmt_bytes(self.bytes)} / {fmt_bytes(self.bytes_total)})"
        )


ClearListener = Callable[[ClearProgress], None]


def drop_all(
    entries: Entries, evictor: Evictor, cutoff: float | None, progress: ClearListener | None
) -> tuple[int, int, int]:
    """Drop every entry of the index not used since *cutoff* (``None``: every one), reporting to
    *progress* before the first batch and after each; returns (files removed, bytes, entries kept)."""
    rows = entries.all_rows()
    total, bytes_total = len(rows), sum(r[2] for r in rows)
    step = None
    if progress is not None:
        progress(ClearProgress(0, total, 0, 0, bytes_total))

        def step(done: int, removed: int, nbytes: int) -> None:
            progress(ClearProgress(done, total, removed, nbytes, bytes_total))

    keys = [r[0] for r in rows]
    return evictor.drop(keys, cutoff, wait=CLEAR_WAIT, evictions=False, progress=step)
