"""Process-local bookkeeping of cache hits, flushed to the shared index a few times a second.

Why: a warm epoch serves thousands of hits a second per process, and one SQLite write
transaction per hit (shared by every DataLoader worker) cost more than reading the file. A hit on
an entry this process already validated is decided from process-local state plus ``stat`` of the
local file; its LRU time and the hit counters are batched and written in one transaction every
``interval`` seconds (and before anyone reads the totals).

Why it stays safe: eviction and ``clear()`` (in any process) spare every entry whose index access
time is within ``PIN_MARGIN x pin_seconds`` (1.25 x). This process serves an entry from local state
only while that recorded time is less than ``pin_seconds / 4`` old, so whatever it hands out stays
protected for at least ``pin_seconds`` after the hand-out. It renews the recorded time (a batched
write) once it is ``pin_seconds / 8`` old: an entry read every epoch is written a few times a minute,
not once per hit, and the hit counters are batched too. Pending access times are written within
``interval`` seconds even when no further hit comes (queued by the first pending write on the
process's flusher thread, :mod:`air_magics.io.flusher`): a loop that stops reading must not leave
its last hand-outs unpinned in the index.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

from ..io.flusher import call_later
from ..io.forksafe import renew_after_fork
from ..io.versions import MTIME_TOLERANCE

__all__ = ["HitLog", "PIN_MARGIN"]

PIN_MARGIN = 1.25  # eviction spares entries accessed within PIN_MARGIN x pin_seconds (see the module)


class HitLog:
    """What this process knows about entries it validated, and the hits it has not yet written."""

    def __init__(self, pin_seconds: float, interval: float = 0.25, flush: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._flush = flush  # writes what take() returns; called on the flusher thread
        self._queued_pid: int | None = None  # the process that queued a flush not yet run (none after a fork)
        self._known: dict[str, tuple[int, float, float]] = {}  # key -> (size, mtime, access time in the index)
        self._access: dict[str, float] = {}
        self._hits = self._bytes = 0
        self._counts: dict[str, int] = {}  # other counters (an overflow's miss), written with the next flush
        self._fresh = pin_seconds / 4  # served locally while the index's access time is younger
        self._renew = pin_seconds / 8  # ... and that time is written anew once it is this old
        self._interval = interval
        self._due = time.monotonic() + interval
        renew_after_fork(self)

    def after_fork(self) -> None:
        """A forked child: a fresh lock (the parent's flusher thread may hold its copy) and no flush queued."""
        self._lock = threading.Lock()
        self._queued_pid = None

    def serve(self, key: str, size: int, mtime: float) -> bool:
        """A warm hit decided from process-local state alone: True (and counted) when *key* was
        validated here for this version and its index access time is still recent enough for the
        pin guarantee. The hot path of a warm epoch: no stat, no path parsing, no index."""
        k = self._known.get(key)
        if k is None or k[0] != size or abs(k[1] - mtime) > MTIME_TOLERANCE:
            return False
        now = time.time()
        age = now - k[2]
        if age >= self._fresh:
            return False
        if age >= self._renew or self._queued_pid is None:
            self.note(key, size, now)  # renews the pin (and makes sure a flush is scheduled)
        else:
            with self._lock:
                self._hits += 1
                self._bytes += size
        return True

    def serve_run(self, keys: Sequence[str], sizes: Sequence[int | None], mtimes: Sequence[float | None]) -> int:
        """How many of the files (``keys[j]`` at version ``sizes[j]``, ``mtimes[j]``; a size ``None``
        or negative: not known), from the first, :meth:`serve` would serve: counted as hits in one
        step (one clock read and one lock for the run, not one per item); the first that is not
        at hand ends the run."""
        known, tol, now = self._known, MTIME_TOLERANCE, time.time()
        stale, renew_by = now - self._fresh, now - self._renew
        n = nbytes = 0
        renew: list[int] = []
        for key, size, mtime in zip(keys, sizes, mtimes, strict=True):
            k = known.get(key)
            # (a size not known never equals a validated one, so an unknown mtime is never compared)
            if k is None or k[0] != size or abs(k[1] - mtime) > tol or k[2] <= stale:  # type: ignore[operator]
                break
            if k[2] <= renew_by:
                renew.append(n)
            n += 1
            nbytes += k[0]
        if not n:
            return 0
        if not renew and self._queued_pid is None:  # no flush scheduled: one noted hit schedules it
            renew.append(0)
        for j in renew:  # each renews its pin and is counted there
            self.note(keys[j], sizes[j], now)  # type: ignore[arg-type]
        rest = n - len(renew)
        if rest:
            with self._lock:
                self._hits += rest
                self._bytes += nbytes - sum(sizes[j] for j in renew)  # type: ignore[misc]
        return n

    def recent(self, key: str, now: float) -> bool:
        """*key* was validated here and pinned in the index so recently that its access time needs no
        renewal yet: a look-ahead validation may leave it alone."""
        k = self._known.get(key)
        return k is not None and now - k[2] < self._renew

    def remember(self, key: str, size: int, mtime: float, recorded: float) -> None:
        """*key* was validated against the index, whose access time for it is now *recorded*."""
        self._known[key] = (size, mtime, recorded)

    def version(self, key: str) -> tuple[int, float] | None:
        """The source (size, mtime) this process last validated *key* against, if any."""
        k = self._known.get(key)
        return (k[0], k[1]) if k is not None else None

    def forget(self, key: str) -> None:
        self._known.pop(key, None)

    def note(self, key: str, size: int, now: float) -> bool:
        """Count a hit served from local state; True when a flush is due."""
        with self._lock:
            self._access[key] = now
            self._hits += 1
            self._bytes += size
            start = self._schedule()
        if start:
            self._queue_flush()
        return time.monotonic() >= self._due

    def count(self, **deltas: int) -> None:
        """Add *deltas* to the index's counters with the next flush (within ``interval`` s, or when
        the totals are read): an overflow, served past the cache, writes no transaction of its own."""
        with self._lock:
            counts = self._counts
            for name, n in deltas.items():
                counts[name] = counts.get(name, 0) + n
            start = self._schedule()
        if start:
            self._queue_flush()

    def _schedule(self) -> bool:
        """(Lock held.) True when a flush must be queued: none is pending in this process
        (``_queued_pid`` is None again after each flush and in a forked child)."""
        start = self._flush is not None and self._queued_pid is None
        if start:
            self._queued_pid = os.getpid()
        return start

    def _queue_flush(self) -> None:
        call_later(self._interval, self._timed_flush)

    def _timed_flush(self) -> None:
        with self._lock:
            self._queued_pid = None
        try:
            self._flush()  # type: ignore[misc]
        except Exception:  # the cache folder gone, the interpreter shutting down: the next hit retries
            pass

    def take(self) -> tuple[dict[str, float], dict[str, int]]:
        """Swap out what is pending: ``(key -> access time, counter -> delta)`` (the hits, their
        bytes, and what :meth:`count` added); the caller writes it."""
        with self._lock:
            access, hits, nbytes, counts = self._access, self._hits, self._bytes, self._counts
            self._access, self._hits, self._bytes, self._counts = {}, 0, 0, {}
            self._due = time.monotonic() + self._interval
        if hits:
            counts["hits"] = counts.get("hits", 0) + hits
            counts["bytes_hit"] = counts.get("bytes_hit", 0) + nbytes
        for key, t in access.items():  # once written, the index holds these access times
            k = self._known.get(key)
            if k is not None:
                self._known[key] = (k[0], k[1], t)
        return access, counts
