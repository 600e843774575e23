"""Front-end listeners of :mod:`air_magics.events`: notebook views the core asks for but never imports.

``%load_ext air_magics`` attaches :class:`CheckpointViews` to the process-wide channel, so a
``CheckpointManager`` in a notebook shows its live view when it starts saving, while the
core stays free of IPython and ipywidgets; and :class:`~.server_start.ServerStartViews`, so a table
call that waits for the embedded Spark server to start says so; and
:class:`~.training_view.LoaderCharts`, so the cell of a training loop shows its live chart.
"""

from __future__ import annotations

from collections.abc import Callable

from ..events import Attachment, CheckpointEvent, Event, channel
from ._frontend import has_widget_frontend
from .server_start import ServerStartViews
from .training_view import LoaderCharts

__all__ = ["CheckpointViews", "attach_notebook_listeners"]


class CheckpointViews:
    """Shows the live checkpoint view of each ``CheckpointManager`` once it starts its first save.

    A manager announces itself when it is made; its view appears with its first save (in the cell
    that trains and saves), not in the cell that only made it. ``show=True`` on the manager always
    shows it; ``show=None`` (the default) shows it when *enabled()* (``%config AirMagics.widgets``)
    and a widget front end is present; ``show=False`` never does. ``%air_volume checkpoints DIR``
    shows a view at once.
    """

    def __init__(self, enabled: Callable[[], bool] = lambda: True) -> None:
        self.enabled = enabled
        self._announced: dict[str, bool | None] = {}  # directory -> the manager's show, until its first save

    def __call__(self, event: Event) -> None:
        if not isinstance(event, CheckpointEvent):
            return
        if event.state == "announced":
            self._announced[event.directory] = event.show
            return
        if event.saves is None or event.directory not in self._announced:  # a bare writer, or shown already
            return
        show = self._announced.pop(event.directory)
        if show is False or (show is None and not (self.enabled() and has_widget_frontend())):
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
    _attached = (
        channel.attach(CheckpointViews(enabled)),
        channel.attach(ServerStartViews(enabled)),
        channel.attach(LoaderCharts(enabled)),
    )
    return _attached
