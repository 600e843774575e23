"""A job's throughput over time (a copy, a pack): MB/s and files/s between moments of its running totals.

Why totals, not rates: as in :mod:`.history`, a rate is the difference of two kept moments over their
time, so it stays right whichever moments are kept. Memory stays bounded: at :data:`POINTS` moments
every other one is dropped (the whole job at half the resolution). Fed by the job's view from the
events it already gets (O(1) per event, at most one moment per :data:`MIN_GAP_S`): nothing is added
to the copy or the pack itself.
"""

from __future__ import annotations

from typing import Any

from .spec import sig
from .svg import panel_svg

__all__ = ["Throughput", "POINTS", "MIN_GAP_S"]

POINTS = 120
MIN_GAP_S = 0.5


class Throughput:
    """The moments ``(seconds since the start, bytes done, files done)`` of one job."""

    def __init__(self, capacity: int = POINTS, min_gap_s: float = MIN_GAP_S) -> None:
        if capacity < 4:
            raise ValueError(f"capacity={capacity} must be at least 4 moments")
        self.capacity, self.min_gap_s = capacity, min_gap_s
        self.moments: list[tuple[float, int, int]] = []

    def add(self, seconds: float, bytes_done: int, files_done: int, *, last: bool = False) -> bool:
        """Keep this moment if *min_gap_s* passed since the kept one before (or it is the *last*,
        the job's end); True if kept."""
        if self.moments and not last and seconds - self.moments[-1][0] < self.min_gap_s:
            return False
        if self.moments and seconds <= self.moments[-1][0]:
            return False
        if len(self.moments) >= self.capacity:
            del self.moments[1::2]
        self.moments.append((float(seconds), int(bytes_done), int(files_done)))
        return True

    def panels(self) -> list[dict[str, Any]]:
        """MB/s and files/s panels over seconds (the spec's panel form, drawn by :func:`.svg.panel_svg`)."""
        mb, files = [], []
        for (t0, b0, f0), (t1, b1, f1) in zip(self.moments, self.moments[1:], strict=False):
            dt = t1 - t0
            mb.append([sig(t1), sig(max(0, b1 - b0) / dt / 1e6)])
            files.append([sig(t1), sig(max(0, f1 - f0) / dt)])

        def panel(pid: str, title: str, unit: str, pts: list[list[float]]) -> dict[str, Any]:
            return {
                "id": pid,
                "title": title,
                "unit": unit,
                "stacked": False,
                "ymax": None,
                "bands": [],
                "series": [{"name": unit, "points": pts}],
            }

        return [panel("job-mbps", "throughput", "MB/s", mb), panel("job-files", "files", "files/s", files)]

    def html(self) -> str:
        """The two panels as inline SVG (empty until two moments are kept)."""
        if len(self.moments) < 2:
            return ""
        x_range = (0.0, self.moments[-1][0])
        svgs = "".join(panel_svg(p, "s", x_range, x_hover="at {x:,} s") for p in self.panels())
        return f'<div class="air-throughput" style="display:flex;flex-wrap:wrap;gap:4px">{svgs}</div>'
