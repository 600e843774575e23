"""The recent saves of one ``CheckpointManager``, as the status events its views show.

Why a module of its own: the records and the order in which their events leave are one concern
(a save's states are emitted from a thread kept for that, off the loop's clock, and the terminal
ones on the caller's thread after those), apart from how a save is written and committed.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Any

from ..errors import AirError
from ..events import CheckpointEvent, Listener, channel
from ..io import ranks
from ..io.pools import ProcessPool

__all__ = ["SaveHistory", "TERMINAL"]

TERMINAL = ("committed", "failed")
_EVENTS = ProcessPool(1, "air-ckpt-events")  # the states a save passes through, in order (see publish)
_HISTORY = 20  # saves kept in each event


class SaveHistory:
    """The last 20 saves' records (step, state, timings, errors) of the manager of *directory*,
    published as :class:`~air_magics.events.CheckpointEvent`s to *listeners* and the channel
    (rank 0 reports for all ranks). *find_latest* gives the newest committed step, asked once
    (afterwards the manager sets :attr:`latest` as it commits)."""

    def __init__(
        self, directory: str, keep: int, listeners: Sequence[Listener], find_latest: Callable[[], int | None]
    ) -> None:
        self.directory, self.keep, self.listeners = directory, keep, tuple(listeners)
        self.latest: int | None | str = "unknown"  # what publish reports; listed once, then kept by the manager
        self._find_latest = find_latest
        self._history: list[dict[str, Any]] = []
        self._publishing = threading.Condition()  # see publish
        self._queued = 0  # events handed to the events thread and not yet emitted (see publish)

    def record(self, step: int, state: str, **info: Any) -> dict[str, Any]:
        """A new save's record, published from the events thread."""
        rec = {"step": step, "state": state, **info}
        self._history.append(rec)
        del self._history[:-_HISTORY]
        self.publish(now=False)
        return rec

    def update(self, rec: dict[str, Any], state: str, **info: Any) -> None:
        """*rec* moves to *state*: a terminal one is published now, on the caller's thread. The
        record keeps when it first entered each state (``uploading_at``, ``uploaded_at``, ...: flat
        keys, as a record is copied per event) so the time line splits upload from commit."""
        terminal = state in TERMINAL
        now = time.time()
        rec.update(info, state=state, finished=now if terminal else None)
        rec.setdefault(f"{state}_at", now)  # when it first entered *state*: the time line's phases
        self.publish(now=terminal)

    def publish(self, *, now: bool = True) -> None:
        """Emit the newest save's state with the recent history.

        ``now=False`` (the states a save passes through): the event, taken now, is emitted from
        a thread kept for that, off the caller's clock (each status document is 1.5-10 ms of disk;
        not the process's flusher thread, whose calls must be short: a listener may log over the
        network). One at a time and in order: an event emitted now waits for those handed over
        before it (done long since, normally), and the caller's thread (``committed``) and the
        pruning's (``after_commit_error``) both publish: without the lock the one that took its
        snapshot first could write last, leaving a document without the other's change."""
        if ranks.rank_and_world()[0] != 0:
            return
        if now:  # (a queued event finds it on the events thread: off the caller's clock, a listing on a store)
            self._find()
        with self._publishing:
            if not now:
                event = self._event()
                self._queued += 1
                _EVENTS.get().submit(self._emit_queued, event)
                return
            while self._queued:  # (the lock is let go while waiting: the snapshot is taken after)
                self._publishing.wait()
            channel.emit(self._event(), self.listeners)

    def _find(self) -> None:
        """Find the newest committed step, the first time (outside the lock: finding it waits for
        the pruning, which publishes); a step the manager set meanwhile (a commit) is kept."""
        if self.latest != "unknown":
            return
        try:
            found: int | None = self._find_latest()
        except (AirError, OSError):
            found = None
        if self.latest == "unknown":
            self.latest = found

    def _emit_queued(self, event: CheckpointEvent) -> None:
        if self.latest == "unknown":
            self._find()
            event = dataclasses.replace(event, latest=self.latest if isinstance(self.latest, int) else None)
        with self._publishing:
            try:
                channel.emit(event, self.listeners)
            finally:
                self._queued -= 1
                self._publishing.notify_all()

    def _event(self) -> CheckpointEvent:
        latest = self.latest if isinstance(self.latest, int) else None
        saves = tuple(MappingProxyType(dict(r)) for r in self._history)
        last = saves[-1] if saves else {}
        detail = MappingProxyType({k: v for k, v in last.items() if k not in ("step", "state")})
        return CheckpointEvent(
            state=last.get("state", "running"),
            directory=self.directory,
            step=last.get("step"),
            detail=detail,
            keep=self.keep,
            latest=latest,
            saves=saves,
        )
