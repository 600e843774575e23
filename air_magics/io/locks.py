"""A cross-process lock on a file that stays open for the life of the process.

Why: the cache takes a stripe lock on every miss. ``filelock`` opens and closes the lock file on
every acquire (an ``open`` costs 0.3 ms or more on a busy ext4 here) and runs fork bookkeeping on
each call; a descriptor opened once per process and ``flock``-ed is one syscall each way. Threads
of one process must still be excluded by a ``threading.Lock`` held around it (``flock`` locks
belong to the open file description, which threads share).

After ``fork`` a child must make its own (the parent's description, and a lock it holds, are
shared with the child): callers create these lazily per process.
"""

from __future__ import annotations

import fcntl
import os
import time

__all__ = ["ProcessFileLock"]

_POLL = 0.005


class ProcessFileLock:
    """``flock`` on *path* (created if missing). ``acquire(timeout)`` raises ``TimeoutError`` when
    the lock is not had within *timeout* seconds (``None``: wait for good)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)

    def acquire(self, timeout: float | None = None) -> None:
        if timeout is None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"lock {self.path} is held by another process") from None
                time.sleep(_POLL)

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def __enter__(self) -> ProcessFileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def close(self) -> None:
        os.close(self._fd)
