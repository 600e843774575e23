"""The training chart in the cell of a running ``DataLoader``: is the GPU fed?

Why a display with an id, not a widget: the chart is rich output (``text/html`` with inline SVG,
plus a ``text/plain`` sparkline line) replaced in place with ``update_display``. Outputs are saved
in the notebook, so a restarted kernel or a reopened notebook shows the last chart, in JupyterLab,
Notebook 7, VS Code and nbconvert alike, with no widget manager or saved widget state; a console
shows the text line.

Cost to the loop: :class:`LoaderCharts` (a listener of :mod:`air_magics.events`) does O(1) work per
event (a pid and a cell number compared, a flag read), plus one drawing per epoch at its end (so the
cell keeps the epoch's last state even when it ends at once). The drawing happens on the view's own thread,
at most every ``interval`` (0.5 s) and only when the loader's status document changed; it reads
that document (:mod:`air_magics.charts.history`), so what it draws is what the sidebar draws.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ..charts import chart_html, training_line, training_spec
from ..events import Event, LoaderEvent
from ..status import current_loaders, read_status
from ._frontend import has_widget_frontend

__all__ = ["TrainingView", "LoaderCharts", "training_view", "LIVE_VIEW"]

_ids = itertools.count()
LIVE_VIEW = {"air_magics": {"live_view": "training"}}
"""The output's metadata: a live view of timings (tools that compare outputs, like widget views, skip it)."""


class TrainingView:
    """The chart of one process's loader (*pid*), or of the current run's ranks (*pid* ``None``).

    :meth:`show` displays it; :meth:`start` refreshes it on a daemon thread every *interval*
    seconds while the documents change, until *idle_seconds* pass without a change (the loop
    ended; a later :meth:`start` resumes) or :meth:`stop`."""

    def __init__(
        self,
        pid: int | None = None,
        *,
        interval: float = 0.5,
        idle_seconds: float = 30.0,
        cell: Any = None,
        loader: tuple[int, int] | None = None,
    ) -> None:
        self.pid, self.interval, self.idle_seconds, self.cell = pid, max(interval, 0.5), idle_seconds, cell
        # (files, num_workers) of the loader drawn: a validation loader that alternates with it in the same
        # process writes the same document, and is not drawn over it
        self.loader = loader
        self.display_id = f"air-training-{os.getpid()}-{next(_ids)}"
        self.updates = 0  # drawings sent (tests, and a reader's sanity check of the rate)
        self._seen: tuple[float, ...] = ()
        self._handle: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def docs(self) -> list[dict[str, Any]]:
        """The loader documents drawn: this pid's, or each rank's of the current run."""
        if self.pid is not None:
            doc = read_status(f"loader-{self.pid}")
            if doc and self.loader is not None and (doc.get("files"), doc.get("num_workers")) != self.loader:
                return []
            return [doc] if doc else []
        return current_loaders()[1]

    def spec(self) -> dict[str, Any] | None:
        return training_spec(self.docs())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        spec = self.spec()
        return {"text/html": chart_html(spec), "text/plain": training_line(spec)}, LIVE_VIEW

    def __repr__(self) -> str:
        return training_line(self.spec())

    def show(self) -> None:
        """Display the chart here (the cell that runs the loop); later refreshes replace it."""
        from IPython.display import display

        self._handle = display(self, display_id=self.display_id)
        self._seen = self._stamp(self.docs())

    @staticmethod
    def _stamp(docs: list[dict[str, Any]]) -> tuple[float, ...]:
        return tuple(float(d.get("updated") or 0) for d in docs)

    def refresh(self) -> bool:
        """Redraw if the documents changed since the last drawing; True if it did."""
        with self._lock:  # the loop's epoch-end drawing and the thread's: read and sent in order, newest last
            docs = self.docs()
            stamp = self._stamp(docs)
            if not docs or stamp == self._seen or self._handle is None or self._stop.is_set():
                return False
            self._seen = stamp
            spec = training_spec(docs)
            data = {"text/html": chart_html(spec), "text/plain": training_line(spec)}
            self._handle.update(data, raw=True, metadata=LIVE_VIEW)
            self.updates += 1
            return True

    @property
    def polling(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Refresh on a daemon thread (a no-op while it runs)."""
        if self.polling:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._poll, name="air-training-view", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _poll(self) -> None:
        last_change = time.monotonic()
        while not self._stop.wait(self.interval):
            try:
                changed = self.refresh()
            except Exception:  # a closed kernel channel or a damaged document must not kill the kernel
                changed = False
            now = time.monotonic()
            if changed:
                last_change = now
            elif now - last_change > self.idle_seconds:
                return


def training_view(pid: int | None = None, *, display_now: bool = True) -> TrainingView:
    """The training chart of *pid*'s loader (default: the current run's), shown and, in a notebook,
    refreshed live (a console gets its text line once)."""
    view = TrainingView(pid)
    if display_now:
        view.show()
        if has_widget_frontend():
            view.start()
    return view


def _cell() -> Any:
    from IPython import get_ipython

    ip = get_ipython()
    return getattr(ip, "execution_count", None)


class LoaderCharts:
    """Shows the training chart in the cell whose loop iterates a ``DataLoader`` (this process's),
    once per cell, when *enabled()* (``%config AirMagics.widgets``) and a notebook front end is there."""

    def __init__(self, enabled: Callable[[], bool] = lambda: True, frontend: Callable[[], bool] = has_widget_frontend):
        self.enabled, self.frontend = enabled, frontend
        self.view: TrainingView | None = None

    def __call__(self, event: Event) -> None:
        if not isinstance(event, LoaderEvent) or event.pid != os.getpid():
            return
        cell, view = _cell(), self.view
        if view is None or view.cell != cell:
            if view is not None:  # another cell's loop: the old chart keeps its last state
                view.stop()
                self.view = None
            if not (self.enabled() and self.frontend()):
                return
            view = self.view = TrainingView(event.pid, cell=cell, loader=(event.files, event.num_workers))
            view.show()
        if event.terminal:  # an epoch's end: drawn now, while the cell still runs (once per epoch)
            try:
                view.refresh()
            except Exception:  # never break the loop for a drawing
                pass
        view.start()

    def __repr__(self) -> str:
        return "LoaderCharts()"
