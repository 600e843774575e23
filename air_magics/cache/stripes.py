"""Striped locks: a thread lock plus a file lock per stripe of keys, so one path is fetched once.

Why striped: a lock per key would be a file per cached file; 256 stripes keep the lock files few
while two fetches of the same key (in any thread of any process) never interleave, and removal of
a key never lands between a fetch's copy and its index row. Locks are made lazily per process.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..io.locks import ProcessFileLock

__all__ = ["Stripes", "STRIPES", "stripe_of"]

STRIPES = 256
_MAKE_LOCK = threading.Lock()


def _fresh_make_lock() -> None:
    global _MAKE_LOCK
    _MAKE_LOCK = threading.Lock()  # a forked child: the parent's threads may hold its copy


os.register_at_fork(after_in_child=_fresh_make_lock)


def stripe_of(key: str) -> int:
    """The stripe (lock) of *key*."""
    return zlib.crc32(key.encode()) % STRIPES


class Stripes:
    """The stripe locks of the cache at *root* (``<root>/locks/NNN.lock``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pid = 0
        self._locks: dict[int, tuple[threading.Lock, ProcessFileLock]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"])  # type: ignore[misc]

    def _at(self, i: int) -> tuple[threading.Lock, ProcessFileLock]:
        if self._pid != os.getpid():
            with _MAKE_LOCK:
                if self._pid != os.getpid():  # a forked child makes its own
                    self._locks, self._pid = {}, os.getpid()
        locks = self._locks.get(i)
        if locks is None:
            with _MAKE_LOCK:  # two threads creating stripe i at once must still end up sharing one lock
                locks = self._locks.get(i)
                if locks is None:
                    (self.root / "locks").mkdir(parents=True, exist_ok=True)
                    locks = self._locks[i] = (threading.Lock(), ProcessFileLock(self.root / "locks" / f"{i:03d}.lock"))
        return locks

    @contextmanager
    def held(self, key: str) -> Iterator[None]:
        """Hold *key*'s stripe (in this process and across processes) for the block."""
        tlock, flock = self._at(stripe_of(key))
        with tlock, flock:
            yield

    @contextmanager
    def try_held(self, i: int, wait: float) -> Iterator[bool]:
        """Stripe *i* for the block if it can be had within *wait* s (0: only if free now); yields
        whether it was."""
        tlock, flock = self._at(i)
        if not (tlock.acquire(timeout=wait) if wait > 0 else tlock.acquire(blocking=False)):
            yield False
            return
        try:
            try:
                flock.acquire(timeout=wait)
            except TimeoutError:
                yield False
                return
            try:
                yield True
            finally:
                flock.release()
        finally:
            tlock.release()
