"""Copy progress: an ipywidgets view in notebooks, a tqdm bar elsewhere.

Both are listeners of copy events (:class:`air_magics.events.CopyEvent`), called on the thread
that runs the copy. ipywidgets is imported only when a widget front end is present.
"""

from __future__ import annotations

import sys
from typing import Any

from ..events import CopyEvent
from ..io.units import fmt_bytes, fmt_rate
from ..transfer import CopyProgress, CopyReport
from ._frontend import pick_view
from .job_chart import JobChart

__all__ = ["copy_progress_view", "WidgetCopyProgress", "TextCopyProgress", "describe"]


def _eta(p: CopyProgress) -> str:
    eta = p.eta
    if eta is None:
        return "ETA --"
    return f"ETA {eta:.0f} s" if eta < 120 else f"ETA {eta / 60:.1f} min"


def describe(p: CopyProgress) -> str:
    """One line: ``1,234 / 3,000 files · 180 MiB / 440 MiB · 1,210 files/s · ETA 2 s · 0 failed``."""
    total = f" / {fmt_bytes(p.bytes_total)}" if p.bytes_total >= p.bytes_done and p.bytes_total else ""
    return (
        f"{p.files_done:,} / {p.files_total:,} files · {fmt_bytes(p.bytes_done)}{total} · "
        f"{p.files_per_second:,.0f} files/s · {fmt_rate(p.bytes_per_second)} · {_eta(p)} · "
        f"{p.skipped:,} skipped · {p.failed:,} failed"
    )


class WidgetCopyProgress:
    """A progress bar and a status line, updated live while the copy runs."""

    def __init__(self, title: str) -> None:
        import ipywidgets as w
        from IPython.display import display

        self.bar = w.IntProgress(value=0, min=0, max=1, bar_style="info", layout=w.Layout(width="40%"))
        self.label = w.HTML(value=f"<b>{title}</b> planning...")
        self.title = title
        self.box = w.HBox([self.bar, self.label])
        self.throughput = JobChart()  # MB/s and files/s over the copy's seconds, under the bar
        display(w.VBox([self.box, self.throughput.widget]))

    def __call__(self, event: CopyEvent) -> None:
        p = event.progress
        self.bar.max = max(1, p.files_total)
        self.bar.value = p.files_done
        if p.failed:
            self.bar.bar_style = "warning"
        self.label.value = f"<b>{self.title}</b> {describe(p)}"
        self.throughput.add(p.elapsed, p.bytes_done, p.files_done)

    def close(self, report: CopyReport | None) -> None:
        self.throughput.finish()
        if report is None:
            self.bar.bar_style = "danger"
            self.label.value = f"<b>{self.title}</b> interrupted"
            return
        self.bar.bar_style = "success" if report.ok else "danger"
        self.label.value = f"<b>{self.title}</b> {report.summary()}"


class TextCopyProgress:
    """tqdm bar on stderr for terminals, scripts and front ends without widgets."""

    def __init__(self, title: str) -> None:
        from tqdm import tqdm

        self.bar: Any = tqdm(total=0, desc=title, unit="file", file=sys.stderr, dynamic_ncols=True, leave=True)

    def __call__(self, event: CopyEvent) -> None:
        p = event.progress
        self.bar.total = p.files_total
        self.bar.n = p.files_done
        self.bar.start_t = event.time - p.elapsed  # the copy's own clock: tqdm's rate is n over the bar's age
        self.bar.set_postfix_str(
            f"{fmt_bytes(p.bytes_done)} · {fmt_rate(p.bytes_per_second)} · {p.failed} failed", refresh=False
        )
        self.bar.refresh()

    def close(self, report: CopyReport | None) -> None:
        self.bar.close()


def copy_progress_view(title: str, *, widget: bool | None = None) -> WidgetCopyProgress | TextCopyProgress:
    """The right listener for this front end (``widget`` forces the choice)."""
    return pick_view(widget, lambda: WidgetCopyProgress(title), lambda: TextCopyProgress(title))
