"""Front-end listeners of :mod:`air_magics.events`: notebook views the core asks for but never imports.

``%load_ext air_magics`` attaches :class:`CheckpointViews` to the process-wide channel, so a
``CheckpointManager(...)`` created in a notebook shows its live view, as it always did, while the
core stays free of IPython and ipywidgets; and :class:`~.server_start.ServerStartViews`, so a table
call that waits for the embedded Spark server to start says so.
"""

from __future__ import annotations

from collections.abc import Callable

from ..events import Attachment, CheckpointEvent, Event, channel
from ._frontend import has_widget_frontend
from .server_start import ServerStartViews

__all__ = ["CheckpointViews", "attach_notebook_listeners"]


class CheckpointViews:
    """Shows the live checkpoint view of each ``CheckpointManager`` that announces itself.

    ``show=True`` on the manager always shows it; ``show=None`` (the default) shows it when
    *enabled()* (``%config AirMagics.widgets``) and a widget front end is present; ``show=False``
    never does.
    """

    def __init__(self, enabled: Callable[[], bool] = lambda: True) -> None:
        self.enabled = enabled

    def __call__(self, event: Event) -> None:
        if not isinstance(event, CheckpointEvent) or event.state != "announced" or event.show is False:
            return
        if event.show is None and not (self.enabled() and has_widget_frontend()):
            return
        from .checkpoint_view import checkpoint_view

        checkpoint_view(event.directory, display_now=True)

    def __repr__(self) -> str:
        return "CheckpointViews()"


_attached: tuple[Attachment, ...] = ()


def attach_notebook_listeners(enabled: Callable[[], bool] = lambda: True) -> tuple[Attachment, ...]:
    """Attach the notebook's listeners to the default channel, once per process (a second call
    replaces the first, e.g. after ``%reload_ext``)."""
    global _attached
    for a in _attached:
        a.detach()
    _attached = (channel.attach(CheckpointViews(enabled)), channel.attach(ServerStartViews(enabled)))
    return _attached
