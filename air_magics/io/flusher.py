"""One flusher thread per process: deferred bookkeeping (a hit log's pending writes, a cache's
status report) runs there, off the data path.

Why: each deferred flush used to start a ``threading.Timer``, a new thread per flush (a warm epoch
started four a second per cache), and its bookkeeping then competed with the stream's threads at
random moments. Here :func:`call_later` queues the call on one daemon thread, made on first use in
each process (a forked DataLoader worker has none of its parent's threads, so it makes its own;
what the parent had queued is the parent's to run).

A queued call must be short and must not raise; an exception is dropped (bookkeeping must never
break a stream) and the next call runs.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable

from .forksafe import ForkSafeLock

__all__ = ["call_later"]

_MAKE = ForkSafeLock()


class _Flusher:
    """The calls queued in this process, due first first, and the thread that runs them."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.due: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = itertools.count()
        threading.Thread(target=self._run, name="air-flusher", daemon=True).start()

    def _run(self) -> None:
        cond, due = self.cond, self.due
        while True:
            with cond:
                while not due or due[0][0] > time.monotonic():
                    cond.wait(None if not due else due[0][0] - time.monotonic())
                fn = heapq.heappop(due)[2]
            try:
                fn()
            except Exception:  # the cache folder gone, a listener failing: the next flush retries
                pass


_flusher: _Flusher | None = None
_pid = 0


def _this_process() -> _Flusher:
    global _flusher, _pid
    if _flusher is None or _pid != os.getpid():
        with _MAKE:
            if _flusher is None or _pid != os.getpid():
                _flusher, _pid = _Flusher(), os.getpid()
    return _flusher


def call_later(delay: float, fn: Callable[[], None]) -> None:
    """Run ``fn()`` on this process's flusher thread *delay* seconds from now."""
    f = _this_process()
    with f.cond:
        heapq.heappush(f.due, (time.monotonic() + delay, next(f.seq), fn))
        f.cond.notify()
