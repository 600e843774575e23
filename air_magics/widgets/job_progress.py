"""Progress of an export: a widget line in notebooks, a text line elsewhere.

Listeners of export events (:class:`air_magics.events.ExportEvent`).
"""

from __future__ import annotations

import sys
from typing import Any

from ..events import ExportEvent
from ..io.units import fmt_bytes
from ._frontend import pick_view

__all__ = ["export_progress_view", "describe_job"]


def describe_job(doc: dict[str, Any]) -> str:
    parts = []
    if doc.get("tasks"):
        parts.append(f"tasks {doc.get('tasks_done', 0):,}/{doc['tasks']:,}")
    if doc.get("bytes_read"):
        parts.append(f"{fmt_bytes(doc['bytes_read'])} scanned")
    if doc.get("rows"):
        parts.append(f"{doc['rows']:,} rows")
    if doc.get("files"):
        parts.append(f"{doc['files']:,} files")
    return " · ".join(parts) or "running..."


class _WidgetView:
    def __init__(self, title: str) -> None:
        import ipywidgets as w
        from IPython.display import display

        self.title = title
        self.bar = w.FloatProgress(value=0, min=0, max=1, bar_style="info", layout=w.Layout(width="30%"))
        self.label = w.HTML(f"<b>{title}</b> starting...")
        display(w.HBox([self.bar, self.label]))

    def __call__(self, event: ExportEvent) -> None:
        doc = event.to_dict()
        if doc.get("tasks"):
            self.bar.value = doc.get("tasks_done", 0) / doc["tasks"]
        self.label.value = f"<b>{self.title}</b> {describe_job(doc)}"

    def close(self, result: Any) -> None:
        self.bar.value = 1.0 if result is not None else self.bar.value
        self.bar.bar_style = "success" if result is not None else "danger"
        self.label.value = f"<b>{self.title}</b> {repr(result) if result is not None else 'failed'}"


class _TextView:
    def __init__(self, title: str) -> None:
        self.title = title
        self.last = ""

    def __call__(self, event: ExportEvent) -> None:
        self.last = describe_job(event.to_dict())
        print(f"\r{self.title}: {self.last}", end="", file=sys.stderr, flush=True)

    def close(self, result: Any) -> None:
        end = "done" if result is not None else "failed"
        # the final counts with the verdict, on the same line the progress used
        print(f"\r{self.title}: {self.last + ' · ' if self.last else ''}{end}", file=sys.stderr, flush=True)


def export_progress_view(title: str, *, widget: bool | None = None) -> _WidgetView | _TextView:
    """The right listener of an export for this front end (``widget`` forces the choice)."""
    return pick_view(widget, lambda: _WidgetView(title), lambda: _TextView(title))
