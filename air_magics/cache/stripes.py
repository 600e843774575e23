"""Striped locks: a thread lock plus a cross-process lock per stripe of keys, so one path is fetched once.

Why striped: a lock per key would be a lock file per cached file. Why so many stripes: a fetch holds
its stripe for the whole copy (three round trips to the volume), so two fetches of *different* keys
that share a stripe run one after the other. With 256 stripes and 64 fetches in flight a quarter of
the cold misses waited for a stranger's copy (11% of the fetch threads' time, measured at 10 ms);
with 16,384 it is under half a percent.

On Linux a stripe is one byte of a single lock file, locked with an open-file-description lock
(``F_OFD_SETLK``: like ``flock``, owned by the descriptor, not the process, so two caches in one
process still exclude each other, and nothing is released when some other descriptor of the file
is closed): no file per stripe, one ``fcntl`` each way. Elsewhere it falls back to 256 ``flock``
files. Two fetches of the same key (in any thread of any process) never interleave, and removal of
a key never lands between a fetch's copy and its index row. Locks are made lazily per process.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from ..io.forksafe import ForkSafeLock
from ..io.locks import ProcessFileLock

__all__ = ["Stripes", "STRIPES"]

_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None)  # Linux >= 3.15
_OFD_SETLKW = getattr(fcntl, "F_OFD_SETLKW", None)
STRIPES = 1 << 14 if _OFD_SETLK is not None else 256  # stripes of a cache's keys
_FLOCK = struct.Struct("hhqqi4x")  # struct flock on Linux: type, whence, start, len, pid (0 for OFD locks)
_POLL = 0.005
_BUSY = (errno.EAGAIN, errno.EACCES)  # another open file description holds the byte
_MAKE_LOCK = ForkSafeLock()  # fresh in a forked child: the parent's threads may hold its copy


class _ByteLocks:
    """One lock file, a byte per stripe, ``F_OFD_SETLK(W)`` on it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def _fcntl(self, cmd: int, kind: int, i: int) -> None:
        fcntl.fcntl(self._fd, cmd, _FLOCK.pack(kind, os.SEEK_SET, i, 1, 0))

    def acquire(self, i: int, timeout: float | None) -> bool:
        if timeout is None:
            self._fcntl(_OFD_SETLKW, fcntl.F_WRLCK, i)  # type: ignore[arg-type]
            return True
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._fcntl(_OFD_SETLK, fcntl.F_WRLCK, i)  # type: ignore[arg-type]
                return True
            except OSError as exc:
                if exc.errno not in _BUSY:
                    raise
                if time.monotonic() >= deadline:
                    return False
                time.sleep(_POLL)

    def release(self, i: int) -> None:
        self._fcntl(_OFD_SETLK, fcntl.F_UNLCK, i)  # type: ignore[arg-type]


class _FileLocks:
    """The fallback: a ``flock`` file per stripe (256 of them)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[int, ProcessFileLock] = {}

    def _at(self, i: int) -> ProcessFileLock:
        lock = self._files.get(i)
        if lock is None:
            with _MAKE_LOCK:
                lock = self._files.get(i)
                if lock is None:
                    lock = self._files[i] = ProcessFileLock(self.folder / f"{i:03d}.lock")
        return lock

    def acquire(self, i: int, timeout: float | None) -> bool:
        try:
            self._at(i).acquire(timeout)
        except TimeoutError:
            return False
        return True

    def release(self, i: int) -> None:
        self._at(i).release()


class Stripes:
    """The stripe locks of the cache at *root* (``<root>/locks/``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pid = 0
        self._threads: dict[int, threading.Lock] = {}
        self._procs: _ByteLocks | _FileLocks | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"])  # type: ignore[misc]

    @staticmethod
    def of(key: str) -> int:
        """The stripe (lock) of *key*."""
        return zlib.crc32(key.encode()) % STRIPES

    def _at(self, i: int) -> tuple[threading.Lock, _ByteLocks | _FileLocks]:
        if self._pid != os.getpid():
            with _MAKE_LOCK:
                if self._pid != os.getpid():  # a forked child makes its own (the parent's are shared with it)
                    folder = self.root / "locks"
                    folder.mkdir(parents=True, exist_ok=True)
                    self._threads = {}
                    self._procs = _ByteLocks(folder / "stripes.lock") if _OFD_SETLK is not None else _FileLocks(folder)
                    self._pid = os.getpid()
        tlock = self._threads.get(i)
        if tlock is None:
            with _MAKE_LOCK:  # two threads creating stripe i at once must still end up sharing one lock
                tlock = self._threads.setdefault(i, threading.Lock())
        return tlock, self._procs  # type: ignore[return-value]

    @contextmanager
    def held(self, key: str) -> Iterator[None]:
        """Hold *key*'s stripe (in this process and across processes) for the block."""
        release = self.take(key)
        try:
            yield
        finally:
            release()

    def take(self, key: str) -> Callable[[], None]:
        """Hold *key*'s stripe until the returned function is called, by any thread (a fetch hands
        it to the thread that writes its index row: see :mod:`.writebehind`)."""
        i = self.of(key)
        tlock, procs = self._at(i)
        tlock.acquire()
        try:
            procs.acquire(i, None)
        except BaseException:
            tlock.release()
            raise

        def release() -> None:
            try:
                procs.release(i)
            finally:
                tlock.release()

        return release

    @contextmanager
    def try_held(self, i: int, wait: float) -> Iterator[bool]:
        """Stripe *i* for the block if it can be had within *wait* s (0: only if free now); yields
        whether it was."""
        with ExitStack() as stack:
            yield self._take(stack, i, wait)

    @contextmanager
    def all_held(self, stripes: Sequence[int], wait: float) -> Iterator[set[int]]:
        """As many of *stripes* as can each be had within *wait* s, held together for the block;
        yields the set held. Taken in ascending order, so two callers never wait on each other in a
        circle."""
        with ExitStack() as stack:
            yield {i for i in sorted(set(stripes)) if self._take(stack, i, wait)}

    def _take(self, stack: ExitStack, i: int, wait: float) -> bool:
        tlock, procs = self._at(i)
        if not (tlock.acquire(timeout=wait) if wait > 0 else tlock.acquire(blocking=False)):
            return False
        stack.callback(tlock.release)
        if not procs.acquire(i, wait):
            return False
        stack.callback(procs.release, i)
        return True
