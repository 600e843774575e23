"""Pack progress: an ipywidgets view in notebooks, a text line elsewhere.

Both are listeners of pack events (:class:`air_magics.events.PackEvent`), called on the thread that
runs the pack; ``close(report)`` shows the report (files, bytes, shards written / kept / reused,
seconds), ``close(None)`` a failure. ipywidgets is imported only when a widget front end is present.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from ..io.units import fmt_bytes
from ._frontend import pick_view
from .job_chart import JobChart

__all__ = ["pack_progress_view", "WidgetPackProgress", "TextPackProgress", "describe_pack"]


def describe_pack(p: Any) -> str:
    """One line from a :class:`~air_magics.shards.PackProgress`:
    ``1,234 / 3,000 files · 180 MiB / 440 MiB · 1 / 3 shards · 2.1 s``."""
    return (
        f"{p.files_done:,} / {p.files_total:,} files · {fmt_bytes(p.bytes_done)} / {fmt_bytes(p.bytes_total)} · "
        f"{p.shards_done} / {p.shards_total} shards · {p.seconds:.1f} s"
    )


def _final(event: Any) -> str | None:
    if event.report is not None:
        return str(event.report)
    if event.state == "interrupted":  # the magic's one-line error says what landed and how to resume
        return "interrupted"
    if event.terminal:
        return f"{event.state}: {event.error or ''}".rstrip(": ")
    return None


class WidgetPackProgress:
    """A progress bar (bytes) and a status line, updated live while the pack runs."""

    def __init__(self, title: str) -> None:
        import ipywidgets as w
        from IPython.display import display

        self.title = title
        self.bar = w.FloatProgress(value=0, min=0, max=1, bar_style="info", layout=w.Layout(width="30%"))
        self.label = w.HTML(value=f"<b>{title}</b> listing the source...")
        self.box = w.HBox([self.bar, self.label])
        self.outcome = "failed"  # until an event says otherwise (interrupted)
        self.throughput = JobChart()  # MB/s and files/s over the pack's seconds, under the bar
        display(w.VBox([self.box, self.throughput.widget]))

    def __call__(self, event: Any) -> None:
        p = event.progress
        self.throughput.add(p.seconds, p.bytes_done, p.files_done)
        if p.bytes_total:
            self.bar.value = min(1.0, p.bytes_done / p.bytes_total)
        final = _final(event)
        if final is not None:
            self.outcome = final
            ok = event.state == "done"
            self.bar.value = 1.0 if ok else self.bar.value
            self.bar.bar_style = "success" if ok else "danger"
            self.label.value = f"<b>{self.title}</b> {final}"
        else:
            self.label.value = f"<b>{self.title}</b> {describe_pack(p)}"

    def close(self, report: Any) -> None:
        self.throughput.finish()
        self.bar.bar_style = "success" if report is not None else "danger"
        if report is not None:
            self.bar.value = 1.0
        self.label.value = f"<b>{self.title}</b> {report if report is not None else self.outcome}"


class TextPackProgress:
    """A ``\\r``-rewritten line on *file* (stdout) for terminals, scripts and front ends without
    widgets; the report (or the failure) on its own line at the end."""

    def __init__(self, title: str, file: IO[str] | None = None) -> None:
        self.title, self.file = title, file
        self._open = False
        self._shown = ""
        self.outcome = "failed"  # until an event says otherwise (interrupted)

    def __call__(self, event: Any) -> None:
        out = self.file or sys.stdout
        if (final := _final(event)) is not None:
            self.outcome = final
            return  # close() prints the outcome once
        line = f"{self.title}: {describe_pack(event.progress)}"
        if line == self._shown:
            return  # the same line again (the last progress and the report's) would only repeat it
        print(f"\r{line}", end="", file=out, flush=True)
        self._shown, self._open = line, True

    def close(self, report: Any) -> None:
        out = self.file or sys.stdout
        if self._open:
            print(file=out)
        print(report if report is not None else f"{self.title}: {self.outcome}", file=out, flush=True)
        self._open = False


def pack_progress_view(title: str, *, widget: bool | None = None) -> WidgetPackProgress | TextPackProgress:
    """The right listener for this front end (``widget`` forces the choice; ``False`` for
    ``%config AirMagics.widgets = False``)."""
    return pick_view(widget, lambda: WidgetPackProgress(title), lambda: TextPackProgress(title))
