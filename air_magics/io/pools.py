"""How many threads a pool gets, and thread pools that live as long as their process and survive a fork.

Why one place for sizes: every pool in air_magics is one of a few kinds of work, and a kind's size
follows from what bounds it, not from the call site. :func:`threads` names them:

* ``"remote-io"`` (64): requests in flight across many files of a volume or object store (listing
  folders, packing, copying). Latency-bound: a thread mostly waits on the network, so many.
* ``"stream"`` (16): reads one consumer keeps in flight (a loader's prefetch, shard indexes, the
  API's stats, a probe's parallel phase): enough to hide one round trip behind the others.
* ``"ranges"`` (8): parallel range reads or writes of one large file.
* ``"local-io"`` (4): file creates and writes on the local disk (bound by its journal, not latency),
  and the API's lanes of local or short work.
* ``"cpu"`` (``os.cpu_count()``): work that holds a core (hashing, decoding).

:func:`set_threads` overrides a kind for the process (a test, or a machine that wants more).

Why :class:`ProcessPool`: a forked DataLoader worker inherits the parent's pool objects but none of
its threads, so a pool made before the fork would accept work and never run it. A
:class:`ProcessPool` is made on first use and made again in a process whose pid differs from its
maker's.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from ..errors import SettingError
from .forksafe import ForkSafeLock

__all__ = ["ProcessPool", "KINDS", "job_pool", "threads", "set_threads"]

KINDS: dict[str, int] = {"remote-io": 64, "stream": 16, "ranges": 8, "local-io": 4}
"""Built-in size of each kind but ``"cpu"`` (which is the machine's core count)."""
_OVERRIDES: dict[str, int] = {}


def _check_kind(kind: str) -> None:
    if kind != "cpu" and kind not in KINDS:
        raise SettingError(f"unknown thread pool kind {kind!r}; use one of {sorted([*KINDS, 'cpu'])}")


def threads(kind: str) -> int:
    """Threads for a pool doing *kind* of work (see the module docstring): the process's override
    from :func:`set_threads` if any, else the built-in size; always at least 1."""
    _check_kind(kind)
    if kind in _OVERRIDES:
        return _OVERRIDES[kind]
    return max(1, os.cpu_count() or 1) if kind == "cpu" else KINDS[kind]


def set_threads(kind: str, n: int | None) -> None:
    """Size pools of *kind* made from now on in this process with *n* threads (``None``: the
    built-in size again). Pools already made keep their size."""
    _check_kind(kind)
    if n is None:
        _OVERRIDES.pop(kind, None)
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise SettingError(f"threads for {kind!r} must be a whole number >= 1, not {n!r}")
    _OVERRIDES[kind] = n


def job_pool(kind: str, name: str, workers: int | None = None) -> ThreadPoolExecutor:
    """A thread pool for one job, shut down by its ``with`` block or its owner: *workers* threads
    (at least 1; a caller's bound such as the files at hand) or, when None, the size of *kind*;
    its threads are named *name* (what ``py-spy`` and a thread dump show).

    Why every pool comes from here: its size follows from its kind, not from the call site, and a
    pool made anywhere else is a finding (``tests/test_layers.py`` looks)."""
    n = threads(kind) if workers is None else max(1, workers)
    return ThreadPoolExecutor(max_workers=n, thread_name_prefix=name)


class ProcessPool:
    """A lazily made ``ThreadPoolExecutor`` of *workers* threads named *name*, one per process (a
    pool that lives as long as its process: a server's, or a cache's)."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers, self.name = workers, name
        self._lock = ForkSafeLock()  # another thread may hold it at fork(): a child's is fresh
        self._pid: int = 0
        self._pool: ThreadPoolExecutor | None = None

    def get(self) -> ThreadPoolExecutor:
        """This process's pool (made now in a process that has none: a fresh one, or a forked child)."""
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.name)
                self._pid = os.getpid()
            return self._pool
