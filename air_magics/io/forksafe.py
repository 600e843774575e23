"""Locks that a forked child gets fresh: a lock held by another thread at ``fork()`` stays held forever
in the child, where that thread does not exist.

Why it matters here: DataLoader workers are forked while the parent's own threads use the cache (the
hit log's flush timer, a status publisher, a user's thread); a worker that inherited the index's or
the hit log's lock in the held state would hang at its first cache hit. Objects holding such locks
register here and get :meth:`after_fork` called in every forked child, before any user code runs.
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol

__all__ = ["ForkAware", "renew_after_fork"]


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
