"""The embedded Spark server's start in a notebook: a widget line with the seconds waited, or a text line.

Why: the first table call of a session waits 20-35 s (an idle 2-core machine; about 100 s on a busy
one) for the JVM, its session and the Hive metastore (the seconds shown are that whole wait, see
:mod:`air_magics.tables.starting`); without this the cell showed nothing at all for that time. A
listener of :class:`~air_magics.events.ServerEvent`, attached by ``%load_ext air_magics``, so
``%air_table`` and ``air_magics.tables.*`` calls both show it.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Callable
from typing import Any

from ..events import Event, ServerEvent
from ._frontend import has_widget_frontend, pick_view

__all__ = ["ServerStartViews", "server_start_view"]


class _WidgetView:
    def __init__(self) -> None:
        import ipywidgets as w
        from IPython.display import display

        self.label = w.HTML()
        display(self.label)

    def __call__(self, e: ServerEvent) -> None:
        text = html.escape(e.message)
        self.label.value = text if e.terminal else f"{text} <b>{e.elapsed:.0f} s</b>"


class _TextView:
    """The message once, then the seconds waited on the same line; the outcome on a line of its own."""

    def __init__(self) -> None:
        self.shown: str | None = None

    def __call__(self, e: ServerEvent) -> None:
        out = sys.stderr
        if e.terminal:  # the waiting line keeps its last count; the outcome goes below it
            print(("\n" if self.shown is not None else "") + e.message, file=out, flush=True)
            return
        if e.message != self.shown:
            if self.shown is not None:
                print(file=out)
            self.shown = e.message
        print(f"\r{e.message} {e.elapsed:.0f} s", end="", file=out, flush=True)


def server_start_view(*, widget: bool | None = None) -> Callable[[ServerEvent], None]:
    """A view of one start: a widget in a notebook with a widget front end, else text on stderr."""
    return pick_view(widget, _WidgetView, _TextView)


class ServerStartViews:
    """Shows each start of the embedded server this process waits for, until its ready/failed event.

    *enabled()* (``%config AirMagics.widgets``) chooses a widget where a front end can show one; when
    it is off the start is still shown, as text."""

    def __init__(self, enabled: Callable[[], bool] = lambda: True) -> None:
        self.enabled = enabled
        self._views: dict[Any, Callable[[ServerEvent], None]] = {}

    def __call__(self, event: Event) -> None:
        if not isinstance(event, ServerEvent):
            return
        view = self._views.get(event.job)
        if view is None:
            view = self._views[event.job] = server_start_view(widget=self.enabled() and has_widget_frontend())
        try:
            view(event)
        finally:
            if event.terminal:
                del self._views[event.job]

    def __repr__(self) -> str:
        return "ServerStartViews()"
