"""The throughput chart under a copy's or a pack's progress bar (:mod:`air_magics.charts.throughput`).

Why throttled: the view is a listener called on the thread that runs the job, so each event costs
O(1) (a moment kept at most every 0.5 s) and the chart is drawn at most every :data:`REDRAW_S`
seconds of the job, and once at its end: under a millisecond of the job's thread per redraw.
"""

from __future__ import annotations

from typing import Any

from ..charts.throughput import Throughput

__all__ = ["JobChart", "REDRAW_S"]

REDRAW_S = 2.0


class JobChart:
    """An ``ipywidgets.HTML`` (:attr:`widget`) holding the job's MB/s and files/s over its seconds."""

    def __init__(self) -> None:
        import ipywidgets as w

        self.widget: Any = w.HTML(value="")
        self.series = Throughput()
        self._drawn_at = float("-inf")
        self._latest: tuple[float, int, int] | None = None  # the newest moment seen, kept or not
        self.redraws = 0

    def add(self, seconds: float, bytes_done: int, files_done: int) -> None:
        """A progress moment; redrawn when kept and :data:`REDRAW_S` passed since the last drawing."""
        self._latest = (seconds, bytes_done, files_done)
        if self.series.add(seconds, bytes_done, files_done) and seconds - self._drawn_at >= REDRAW_S:
            self._draw(seconds)

    def finish(self) -> None:
        """The job ended: its last moment kept and the whole job drawn."""
        if self._latest is not None:
            self.series.add(*self._latest, last=True)
        if self.series.moments:
            self._draw(self.series.moments[-1][0])

    def _draw(self, seconds: float) -> None:
        self._drawn_at = seconds
        self.widget.value = self.series.html()
        self.redraws += 1
