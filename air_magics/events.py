"""One event channel: how the core says what it is doing, to whoever listens.

The copy engine, the cache, the DataLoader, the checkpoint writer and manager, table exports, shard
packing and the embedded Spark server's start report every step as a typed, frozen :class:`Event`
(modelled on fsspec's ``Callback``: one protocol every transfer uses). Each event's document (what
status documents, the REST API and the sidebar's TypeScript types share) is read off its
dataclass: :meth:`Event.to_dict`, :meth:`Event.keys`. They never write status files, draw widgets
or log metrics themselves; *listeners* do, and are interchangeable:

* per call: ``copy_files(..., listeners=[fn])`` (every operation that reports takes ``listeners=``);
* process-wide: :data:`channel`, ``channel.attach(fn)`` (returns an :class:`Attachment`, also a
  context manager that detaches).

A listener is any callable taking one event. One that raises is logged on this module's logger
(``air_magics.events``) and skipped: a broken progress bar never breaks a copy. Listeners run on the thread that
emits (the copy's calling thread; the cache's and loader's own), so they must be quick and
thread-safe; wrap a slow one in :func:`throttled`.

This module sits at the bottom of the package (stdlib, :mod:`air_magics.snapshots`): every layer
can emit without importing a front end. What is attached by default is decided by the package's
``__init__`` (see :mod:`air_magics.listeners`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

from .io.forksafe import ForkSafeLock
from .snapshots import (
    HIDDEN,
    CacheInfo,
    CopyProgress,
    ExportProgress,
    LoaderTimes,
    PackProgress,
    PackReport,
    document,
    document_keys,
    flat,
)

__all__ = [
    "Event",
    "CopyEvent",
    "CacheEvent",
    "LoaderEvent",
    "CheckpointEvent",
    "ExportEvent",
    "PackEvent",
    "ServerEvent",
    "Listener",
    "EventChannel",
    "Attachment",
    "Throttle",
    "throttled",
    "channel",
    "SOURCES",
    "TERMINAL",
]

SOURCES = ("copy", "cache", "loader", "checkpoint", "export", "pack", "server")
TERMINAL = frozenset({"done", "failed", "interrupted", "committed"})
"""States after which a job (a copy, an export, a save, an epoch) sends nothing more."""

_log = logging.getLogger(__name__)
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class Event:
    """What every event has: where it comes from, which job, its state, when and in which process.

    Its document (:meth:`to_dict`, what status documents, the REST API and the sidebar's TypeScript
    types share) is read off the dataclass: the ``ENVELOPE`` keys (``kind`` is the ``source``,
    ``finished`` the time of a terminal event, else ``None``), then the fields, as
    :func:`air_magics.snapshots.document` writes them. :meth:`keys` lists them from the class."""

    source: ClassVar[str] = ""
    ENVELOPE: ClassVar[tuple[str, ...]] = ("kind", "job", "state", "pid", "finished")
    job: str | None = field(default=None, metadata=HIDDEN)
    state: str = field(default="running", metadata=HIDDEN)
    time: float = field(default_factory=time.time, metadata=HIDDEN)
    pid: int = field(default_factory=os.getpid, metadata=HIDDEN)

    @property
    def terminal(self) -> bool:
        """True for the last event of its job (done, failed, interrupted, committed)."""
        return self.state in TERMINAL

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-ready form (the status documents are built from it)."""
        envelope = {
            "kind": self.source,
            "job": self.job,
            "state": self.state,
            "pid": self.pid,
            "finished": self.time if self.terminal else None,
        }
        return {**{k: envelope[k] for k in self.ENVELOPE}, **document(self)}

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The keys of :meth:`to_dict`, from the class alone (the schema the TypeScript types follow)."""
        return (*cls.ENVELOPE, *document_keys(cls))


@dataclass(frozen=True, kw_only=True)
class CopyEvent(Event):
    """Progress of one ``copy_files`` call; ``job`` is its name (``None``: an unnamed copy)."""

    source: ClassVar[str] = "copy"
    progress: CopyProgress = field(metadata=flat(CopyProgress))
    dest: str = ""
    sources: tuple[str, ...] = ()
    started: float = 0.0


@dataclass(frozen=True, kw_only=True)
class CacheEvent(Event):
    """The shared cache statistics. Sampled by the cache at most twice a second per process (a
    snapshot costs a database query); ``state="done"`` for an explicit ``publish_status()``."""

    source: ClassVar[str] = "cache"
    ENVELOPE: ClassVar[tuple[str, ...]] = ()
    stats: CacheInfo = field(metadata=flat(CacheInfo))


LAUNCH_ID_ENV = "AIR_LAUNCH_ID"  # set for the ranks of one %%air_torchrun / launch(): their loaders group by it


@dataclass(frozen=True, kw_only=True)
class LoaderEvent(Event):
    """A DataLoader handed over a batch (``running``) or finished an epoch (``done``)."""

    source: ClassVar[str] = "loader"
    ENVELOPE: ClassVar[tuple[str, ...]] = ("pid",)
    DERIVED: ClassVar[tuple[str, ...]] = ("done",)
    timing: LoaderTimes = field(metadata=flat(LoaderTimes))
    epoch: int = 0
    files: int = 0
    num_workers: int = 0
    rank: int = 0  # this process's rank of ``world`` (torch.distributed, else RANK/WORLD_SIZE)
    world: int = 1
    launch: str | None = None  # the %%air_torchrun / launch() run it belongs to (AIR_LAUNCH_ID), else None

    @property
    def done(self) -> bool:
        """The epoch is over."""
        return self.state == "done"


@dataclass(frozen=True, kw_only=True)
class CheckpointEvent(Event):
    """A checkpoint save changed state, or a manager announced itself.

    States: ``announced`` (a ``CheckpointManager`` was created; ``show`` says whether front ends
    should show it: ``True`` yes, ``False`` no, ``None`` as they are configured), ``staging``,
    ``uploading``, ``uploaded`` (a writer's files are on the volume), ``committed``, ``failed``.
    A manager's events carry its recent ``saves`` (oldest first), ``keep`` and ``latest``; a bare
    ``UCVolumeWriter``'s carry ``saves=None``. The document is the folder's: ``directory``,
    ``keep``, ``latest``, ``saves``.
    """

    source: ClassVar[str] = "checkpoint"
    ENVELOPE: ClassVar[tuple[str, ...]] = ()
    directory: str
    step: int | None = field(default=None, metadata=HIDDEN)
    detail: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, metadata=HIDDEN)
    keep: int | None = None
    latest: int | None = None
    saves: tuple[Mapping[str, Any], ...] | None = None
    show: bool | None = field(default=None, metadata=HIDDEN)


@dataclass(frozen=True, kw_only=True)
class ExportEvent(Event):
    """Progress of a table export; ``job`` is its id (the status document is ``job-export-<id>``)."""

    source: ClassVar[str] = "export"
    dest: str
    progress: ExportProgress = field(default=ExportProgress(), metadata=flat(ExportProgress))
    started: float = 0.0


@dataclass(frozen=True, kw_only=True)
class PackEvent(Event):
    """Progress of one ``pack`` call: ``state`` is ``running``, then ``done`` (with ``report``),
    ``failed`` or ``interrupted`` (with ``error``). ``job`` is the destination folder."""

    source: ClassVar[str] = "pack"
    progress: PackProgress = field(metadata=flat(PackProgress))
    src: str = ""
    dest: str = ""
    engine: str = "local"
    started: float = 0.0
    report: PackReport | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class ServerEvent(Event):
    """The embedded Spark Connect server is starting (``running``, about once a second, with the
    seconds waited so far), ready (``done``) or could not start (``failed``); ``job`` is its store.

    A start takes seconds to a minute and the first table call waits for it: front ends show
    ``message`` (what is happening and how long it usually takes) with ``elapsed``."""

    source: ClassVar[str] = "server"
    message: str
    elapsed: float = 0.0
    started: float = 0.0
    url: str | None = None
    log: str = ""


@runtime_checkable
class Listener(Protocol):
    """Anything called with each event."""

    def __call__(self, event: Event) -> None: ...


class Attachment:
    """What :meth:`EventChannel.attach` returns: ``detach()`` it, or use it as a context manager."""

    def __init__(self, channel: EventChannel, listener: Listener) -> None:
        self.channel, self.listener = channel, listener

    def detach(self) -> None:
        self.channel.detach(self.listener)

    def __enter__(self) -> Listener:
        return self.listener

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def __repr__(self) -> str:
        return f"<Attachment of {self.listener!r}>"


class EventChannel:
    """Listeners attached to it receive every event emitted to it, in the order they were attached."""

    def __init__(self) -> None:
        self._listeners: tuple[Listener, ...] = ()  # replaced, never mutated: emit reads it without a lock
        self._lock = ForkSafeLock()  # a parent's thread may hold it at fork(): a child's is fresh
        self._failing: set[int] = set()

    def attach(self, listener: Listener) -> Attachment:
        if not callable(listener):
            raise TypeError(f"a listener must be callable with one event, got {listener!r}")
        with self._lock:
            self._listeners += (listener,)
        return Attachment(self, listener)

    def detach(self, listener: Listener) -> bool:
        """Remove *listener* (its last attachment); False if it was not attached."""
        with self._lock:
            for i in range(len(self._listeners) - 1, -1, -1):
                if self._listeners[i] is listener or self._listeners[i] == listener:
                    self._listeners = self._listeners[:i] + self._listeners[i + 1 :]
                    return True
        return False

    @property
    def listeners(self) -> tuple[Listener, ...]:
        return self._listeners

    def listening(self, also: Iterable[Listener] = ()) -> bool:
        """Whether an event would reach anyone (lets a source skip building a costly snapshot)."""
        return bool(self._listeners) or any(True for _ in also)

    def emit(self, event: Event, also: Iterable[Listener] = ()) -> None:
        """Deliver *event* to the per-call listeners *also*, then to the attached ones.

        A listener's exception is logged (with its traceback the first time) and never reaches
        the operation that emitted. ``KeyboardInterrupt`` (Ctrl-C in a progress callback) does,
        once every other listener has had the event, so a status document still sees the end.
        """
        if sys.is_finalizing():  # a stream closed by the interpreter's exit (a loop left early): the
            return  # listeners cannot import or log any more; what they would write is dropped silently
        interrupt: BaseException | None = None
        for listener in (*also, *self._listeners):
            try:
                listener(event)
            except Exception:
                first = id(listener) not in self._failing
                self._failing.add(id(listener))
                _log.log(
                    logging.ERROR if first else logging.DEBUG,
                    "air_magics: listener %r failed on a %s event%s",
                    listener,
                    event.source,
                    "" if first else " (again)",
                    exc_info=first,
                )
            except BaseException as exc:
                interrupt = interrupt or exc
        if interrupt is not None:
            raise interrupt


class Throttle:
    """``ready()`` is True at most once per *interval* seconds (first call included)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._last = float("-inf")

    def ready(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        if now - self._last >= self.interval:
            self._last = now
            return True
        return False


def _job_key(event: Event) -> Hashable:
    return (event.source, event.job, getattr(event, "directory", None))


class _Throttled:
    def __init__(self, listener: Listener, interval: float, key: Callable[[Event], Hashable]) -> None:
        self.listener, self.interval, self.key = listener, interval, key
        self._last: dict[Hashable, float] = {}
        self._lock = ForkSafeLock()  # the parent's flusher thread may be inside a call at fork()

    def __call__(self, event: Event) -> None:
        k = self.key(event)
        with self._lock:
            if event.terminal:
                self._last.pop(k, None)
            else:
                now = time.monotonic()
                if now - self._last.get(k, float("-inf")) < self.interval:
                    return
                self._last[k] = now
        self.listener(event)

    def __repr__(self) -> str:
        return f"throttled({self.listener!r}, {self.interval})"


def throttled(listener: Listener, interval: float, *, key: Callable[[Event], Hashable] = _job_key) -> Listener:
    """*listener*, called at most once per *interval* seconds for each job (``key``: source, job and
    checkpoint folder), except that a job's terminal event (done, failed, ...) is always delivered."""
    return _Throttled(listener, interval, key)


channel = EventChannel()
"""The process-wide channel. :class:`~air_magics.listeners.StatusDocuments` is attached to it when
``air_magics`` is imported (in every process, DataLoader workers too), so the sidebar sees scripts
and workers; ``channel.detach(air_magics.listeners.status_documents)`` stops that."""
