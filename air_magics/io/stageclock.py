"""Seconds per input-pipeline stage in this process: the raw material of the loader's verdict.

Why a process-wide clock: the stages happen in different layers (the cache reads a source, the
dataset runs the user's transform, the loader collates) and, with a DataLoader, in worker
processes; each adds its seconds here, and a worker sends its clock's totals with every batch it
hands over. Only the slow paths are timed (a miss, a transform, a collate): a warm cache hit adds
nothing, so the clock stays on by default at no measurable cost.
"""

from __future__ import annotations

import os
import threading

__all__ = ["STAGES", "StageClock", "FIELDS"]

# thread-seconds: listing, storage_read, cache_write, transform, collate; counts: requests,
# read_bytes; request_seconds: the sum of each storage request's latency (overlapping requests
# counted each); wall seconds of a dataset's stream: blocked (waiting for its next item to be
# fetched or transformed) and outside (between two of its items, in whoever consumes it: a
# wrapper's decode, or the worker's collate and hand-over)
FIELDS = (
    "listing",
    "storage_read",
    "cache_write",
    "transform",
    "collate",
    "requests",
    "read_bytes",
    "request_seconds",
    "blocked",
    "outside",
)
_INDEX = {name: i for i, name in enumerate(FIELDS)}


class StageClock:
    """Totals per stage since this process started (or since :meth:`reset`, in a new worker)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals = [0.0] * len(FIELDS)
        self.pid = os.getpid()

    def _own(self) -> None:
        if self.pid != os.getpid():  # a forked worker counts its own work only
            self.reset()

    def add(self, stage: str, seconds: float) -> None:
        self._own()
        i = _INDEX[stage]
        with self._lock:
            self._totals[i] += seconds

    def request(self, seconds: float, nbytes: int, stage: str = "storage_read") -> None:
        """One storage request (a file read, a stat) of *seconds* that carried *nbytes*."""
        self._own()
        t = self._totals
        with self._lock:
            t[_INDEX[stage]] += seconds
            t[_INDEX["request_seconds"]] += seconds
            t[_INDEX["requests"]] += 1
            t[_INDEX["read_bytes"]] += nbytes

    def snapshot(self) -> tuple[float, ...]:
        """The totals, in :data:`FIELDS` order (sent with each batch a worker hands over)."""
        self._own()
        with self._lock:
            return tuple(self._totals)

    def reset(self) -> None:
        self._lock = threading.Lock()
        self._totals = [0.0] * len(FIELDS)
        self.pid = os.getpid()


STAGES = StageClock()
os.register_at_fork(after_in_child=STAGES.reset)  # fresh totals and lock: the child counts its own work
