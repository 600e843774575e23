"""Thread pools that live as long as their process and survive a fork.

Why: a forked DataLoader worker inherits the parent's pool objects but none of its threads, so a
pool made before the fork would accept work and never run it. A :class:`ProcessPool` is made on
first use and made again in a process whose pid differs from its maker's.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["ProcessPool"]


class ProcessPool:
    """A lazily made ``ThreadPoolExecutor`` of *workers* threads named *name*, one per process."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers, self.name = workers, name
        self._lock = threading.Lock()
        self._pid: int = 0
        self._pool: ThreadPoolExecutor | None = None

    def get(self) -> ThreadPoolExecutor:
        """This process's pool (made now in a process that has none: a fresh one, or a forked child)."""
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.name)
                self._pid = os.getpid()
            return self._pool
