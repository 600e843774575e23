"""Locks that a forked child gets fresh: a lock held by another thread at ``fork()`` stays held forever
in the child, where that thread does not exist.

Why it matters here: DataLoader workers are forked while the parent's own threads use the cache (the
hit log's flush timer, a status publisher, a user's thread); a worker that inherited the index's or
the hit log's lock in the held state would hang at its first cache hit. Objects holding such locks
register here and get :meth:`after_fork` called in every forked child, before any user code runs.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol

__all__ = ["ForkAware", "ForkSafeLock", "renew_after_fork"]


class ForkAware(Protocol):
    def after_fork(self) -> None:
        """Replace this object's locks (and per-process state) in a forked child."""


_OBJECTS: weakref.WeakSet[ForkAware] = weakref.WeakSet()


def renew_after_fork(obj: ForkAware) -> None:
    """Call ``obj.after_fork()`` in every child this process forks from now on (while *obj* lives)."""
    _OBJECTS.add(obj)


def _in_child() -> None:
    for obj in list(_OBJECTS):
        obj.after_fork()


os.register_at_fork(after_in_child=_in_child)


class ForkSafeLock:
    """A lock for ``with`` that every forked child gets fresh: a module's lock around its
    per-process state's first use, which the parent's other threads may hold at ``fork()``."""

    __slots__ = ("_lock", "__weakref__")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        renew_after_fork(self)

    def after_fork(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> ForkSafeLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
