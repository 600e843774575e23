"""``WriteBehind``: a fetched file's index row committed after its fetch has returned.

Why: a miss used to return only once its row was committed. The group commit kept that to one
transaction per burst, but every fetch thread still queued on the index's connection lock for its
turn, and on a 2-core machine each hand-over of that lock waits on the GIL: in a cold epoch of
64 fetches in flight, 44% of the fetch threads' time went to that wait (profile of 2026-12-05),
which is why the loader ran at 0.6-0.7 of a plain thread pool copying the same files.

Here one thread per process commits the rows while the fetch threads go on to their next file:
once a row is queued it gathers more for up to ``GATHER_S`` (or until ``GATHER_ROWS`` are
queued, or someone flushes) and commits them in one transaction. Committing as soon as it woke
made it one transaction per one to three rows in a cold epoch (a fetch lands every ~0.7 ms),
each waking the thread and taking the GIL: ~37 us of CPU a row against ~7 in batches of 32.
A fetch hands its key's stripe lock over with the row, and the writer releases it once the row
has landed, so another process never sees the file without its row (it waits on the stripe,
then finds the row: fetched once).
This process serves the file from its hit log meanwhile. :meth:`flush` waits for what is queued,
by every ``WriteBehind`` of this process on the same cache (two ``FileCache`` objects on one root,
e.g. a dataset's and the one ``%air_volume cache --clear`` opens): the cache calls it before its
totals are read, before a check or a clear, and at a stream's end.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..io.forksafe import ForkSafeLock

if TYPE_CHECKING:
    from .entries import Entries

__all__ = ["WriteBehind", "OnRow"]

Row = tuple[str, str, int, float, bool]  # key, local, size, source mtime, counted as a miss
OnRow = Callable[[BaseException | None], None]  # called once the row is committed (None) or failed
_MAKE_LOCK = ForkSafeLock()  # fresh in a forked child: the parent's threads may hold its copy
_BY_ROOT: dict[str, weakref.WeakSet[WriteBehind]] = {}  # every writer of this process, by cache root
GATHER_S = 0.02  # how long the writer gathers rows behind the first one queued ...
GATHER_ROWS = 256  # ... unless this many are queued (the stripes they hold stay under 2% of STRIPES)


class WriteBehind:
    """Rows of :class:`Entries` written by one thread per process, many per transaction."""

    def __init__(self, entries: Entries, root: str, after_batch: Callable[[], None] | None = None) -> None:
        self._entries = entries
        self._after_batch = after_batch  # e.g. a live snapshot of the cache: its rows are in now
        with _MAKE_LOCK:
            self._peers = _BY_ROOT.setdefault(os.path.realpath(root), weakref.WeakSet())
            self._peers.add(self)
        self._pid = 0
        self._cond = threading.Condition()
        self._queue: list[tuple[Row, OnRow]] = []
        self._busy = False
        self._waiting = 0  # flushes waiting: the writer commits what it has at once
        self._thread: threading.Thread | None = None

    def _here(self) -> threading.Condition:
        """This process's condition (queue and thread), made on first use (a forked child starts
        empty: its parent's queued rows are the parent's to write, and its thread did not come along)."""
        if self._pid != os.getpid():
            with _MAKE_LOCK:  # fetch threads race here on first use
                if self._pid != os.getpid():
                    self._cond, self._queue, self._busy, self._thread = threading.Condition(), [], False, None
                    self._waiting = 0
                    self._pid = os.getpid()
        return self._cond

    def put(self, row: Row, on_row: OnRow) -> None:
        """Queue *row*; ``on_row(error)`` runs on the writer thread once it is committed (``None``)
        or its transaction failed (the error, e.g. a full disk)."""
        cond = self._here()
        with cond:
            queue = self._queue
            queue.append((row, on_row))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="air-cache-rows", daemon=True)
                self._thread.start()
                atexit.register(self.flush_own)  # (a daemon thread: the rows still queued at exit land first)
            elif not self._busy and (len(queue) == 1 or len(queue) >= GATHER_ROWS):
                cond.notify_all()  # the first row wakes the writer; the rest wait for its gathering

    def flush(self) -> None:
        """Return once every row queued before the call, by any writer of this process on the same
        cache root, is committed (or has failed)."""
        with _MAKE_LOCK:
            peers = list(self._peers)
        for writer in peers:
            writer.flush_own()

    def flush_own(self) -> None:
        """Return once every row queued here before the call is committed (or has failed)."""
        if self._pid != os.getpid() or threading.current_thread() is self._thread:
            # nothing was queued in this process; or the writer itself asks (the index's first open
            # in this process runs the cache's repair, which flushes): its own batch cannot wait on it
            return
        cond = self._cond
        with cond:
            self._waiting += 1
            try:
                cond.notify_all()  # a writer gathering rows commits them now
                while self._queue or self._busy:
                    cond.wait(0.5)
            finally:
                self._waiting -= 1

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._queue:
                    cond.wait()
                cond.wait_for(lambda: len(self._queue) >= GATHER_ROWS or self._waiting > 0, GATHER_S)
                batch, self._queue = self._queue, []
                self._busy = True
            error: BaseException | None = None
            try:
                self._entries.write_rows([row for row, _ in batch])
            except BaseException as exc:  # every fetch of the batch learns it (see MissPath)
                error = exc
            for _, on_row in batch:
                try:
                    on_row(error)
                except Exception:  # one callback's failure must not keep the others' stripes held
                    pass
            if self._after_batch is not None:  # still busy: a flush returns after it
                try:
                    self._after_batch()
                except Exception:  # a status update must never stop the rows
                    pass
            with cond:
                self._busy = False
                cond.notify_all()
