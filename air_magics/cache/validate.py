"""``Validation``: a stream's cached files checked against their sources, wide and ahead of the consumer.

Why: a new process (a restarted kernel, a DataLoader worker) may not serve a cached file before it
has checked that the source is unchanged (the reference never re-checks and serves stale data).
Checked one at a time, as each item comes up, that costs a source round trip plus a write
transaction on the shared index per file: a warm restart ran at a fifth of the same-process warm
epoch. Here the index is read once for the whole folder, the sources are asked on a pool as wide
as the copy engine's (only for files the cache holds and whose version the listing did not carry),
and the entries that match are pinned in one transaction per batch and handed to the process's
hit log, in the stream's order, so the first items are served while later ones are still checked.

It also keeps a long epoch cheap: what it validates is pinned just ahead of the consumer (at most
``ahead`` items), so a hit never needs a transaction of its own however slowly the loop runs.
Never stale: a file is served only when the index's version equals the source's current one and
the local copy has the recorded size; anything else is left to the fetch path, which re-fetches.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from ..io.pools import job_pool, threads
from ..io.stageclock import STAGES
from ..io.versions import same_version
from ..transfer.file import source_stat
from ..volumes.filelist import FileList
from ..volumes.location import Location
from ..volumes.resolved import VolumeFile
from .entries import Entries, Row
from .hits import HitLog

__all__ = ["Validation", "VALIDATION_THREADS", "timed_stat"]

VALIDATION_THREADS = 2 * threads(
    "remote-io"
)  # 128 requests in flight: the knee on a 10 ms FUSE volume here (64: 5k stats/s, 128: 8-9k)
_BATCH = 256  # entries pinned per index transaction


def timed_stat(src: Location) -> tuple[int, float]:
    """``source_stat`` counted as a storage request for the loader's verdict."""
    t0 = time.perf_counter()
    try:
        return source_stat(src)
    finally:
        STAGES.request(time.perf_counter() - t0, 0)


class Validation:
    """Checks ``files[i]`` for ``i`` in *order* in the background; see the module docstring.

    ``advance(n)`` tells it the consumer has taken *n* items; ``wait(i)`` blocks until file *i* is
    decided (valid and in the hit log, or left to the fetch path). ``revalidated``: entries checked
    against a source request; ``requests``: those requests; ``valid``: entries found valid and
    pinned; ``seconds``: how long it worked (its waits for the consumer to come within ``ahead``
    items left out, so a long epoch does not count as validation time). ``on_done(self)`` runs
    once it has ended, on its thread. It starts with the first ``wait`` (the stream's first item
    not at hand in the hit log) or :meth:`start`."""

    def __init__(
        self,
        entries: Entries,
        hits: HitLog,
        files: Sequence[VolumeFile],
        order: Sequence[int],
        *,
        ahead: int = 512,
        threads: int = VALIDATION_THREADS,
        trusted_since: float = float("inf"),
        on_done: Callable[[Validation], None] | None = None,
    ) -> None:
        self._entries, self._hits, self._files, self._order = entries, hits, files, order
        self._ahead, self._threads = max(ahead, _BATCH), threads
        # an entry another process compared with its source at or after this time (a sibling worker
        # of the same loader run) is taken as checked: no second request for it
        self._trusted_since = trusted_since
        self._decided = bytearray(len(files))
        self._cond = threading.Condition()
        self._consumed = 0
        self._stop = False
        self._on_done = on_done
        self._waited = 0.0  # seconds spent waiting for the consumer (not validation time)
        self._needs_room = False  # the thread waits for the consumer to come within ``ahead``
        self.revalidated = self.requests = self.valid = 0
        self.seconds = 0.0
        self.done = False
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None  # started by the first wait(): see start()
        self._start_lock = threading.Lock()

    @property
    def started(self) -> bool:
        """Whether it has begun checking (a warm stream served from the hit log never starts it)."""
        return self._thread is not None

    def start(self) -> None:
        """Begin checking (once). A stream starts it at its first item not at hand in the hit log
        (and the first :meth:`wait` would): a stream whose items are all at hand (a warm epoch in
        the same process) never needs it, and a thread started at every epoch's first item
        competed with the consumer for the interpreter."""
        if self._thread is None:
            with self._start_lock:
                if self._thread is None and not self._stop:
                    self._thread = threading.Thread(target=self._run, name="air-cache-validate", daemon=True)
                    self._thread.start()

    # -- the consumer's side ---------------------------------------------------------------------
    def advance(self, consumed: int) -> None:
        """The consumer has taken *consumed* items of the order."""
        self._consumed = consumed
        if self._needs_room:
            with self._cond:
                self._cond.notify_all()

    def wait(self, i: int, timeout: float | None = None) -> bool:
        """Block until file *i* is decided (or the validation ended); True when it was decided."""
        if self._decided[i]:
            return True
        self.start()  # (once: a check of one attribute after that)
        with self._cond:
            return self._cond.wait_for(lambda: self._decided[i] or self.done, timeout) and bool(self._decided[i])

    def close(self) -> None:
        """Stop early (the consumer left); what is decided stays valid."""
        with self._start_lock:  # never started: nothing will run, so it is done now
            self._stop = True
            if self._thread is None:
                self.done = True
        with self._cond:
            self._cond.notify_all()

    # -- the background side ---------------------------------------------------------------------
    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            self._validate()
        except BaseException as exc:  # the fetch path re-checks everything left: never fatal here
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - t0 - self._waited
            if self._on_done is not None:  # before `done`: whoever sees it done sees the counts too
                try:
                    self._on_done(self)
                except Exception:  # a counter or status update must never break the stream
                    pass
            with self._cond:
                self.done = True
                self._cond.notify_all()

    def _validate(self) -> None:
        files, order = self._files, self._order
        if not order:
            return
        hits, now = self._hits, time.time()
        if isinstance(files, FileList):  # no item made per file (a million-file epoch)
            sizes, key = files.sizes, files.key
            warm = all(sizes[i] >= 0 and hits.recent(key(i), now) for i in order)
        else:
            warm = all(files[i].size is not None and hits.recent(files[i].key, now) for i in order)
        if warm:
            for i in order:  # a warm epoch in the same process: everything pinned moments ago
                self._decided[i] = 1
            return
        key = files.key if isinstance(files, FileList) else (lambda i: files[i].key)
        # the index's rows of the files whose version the list does not carry (a source may have to
        # be asked), one window of the order at a time and held until its batch settles: a worker
        # of a million-file epoch never holds a row per file
        rows: dict[str, Row] = {}
        made: list[ThreadPoolExecutor] = []

        def pool() -> ThreadPoolExecutor:  # made on the first request (a warm epoch asks nothing)
            if not made:
                made.append(job_pool("remote-io", "air-cache-validate", self._threads))
            return made[0]

        asked: dict[int, Future] = {}
        sent = 0  # requests are sent for order[:sent]; the pool works on them while batches settle

        def send(upto: int) -> None:
            nonlocal sent
            window = order[sent:upto]
            if isinstance(files, FileList):
                sizes = files.sizes
                unknown = [i for i in window if sizes[i] < 0]
            else:
                unknown = [i for i in window if files[i].size is None]
            if unknown:
                rows.update(self._entries.rows_for([key(i) for i in unknown]))
            for i in unknown:
                if self._must_ask(key(i), rows):
                    asked[i] = pool().submit(timed_stat, files[i].src)
                    self.requests += 1
            sent = max(sent, upto)

        try:
            for start in range(0, len(order), _BATCH):
                if not self._room_for(start):
                    return
                send(min(len(order), start + self._ahead))  # a sliding window: the pool never drains
                keys = self._settle(order[start : start + _BATCH], rows, asked)
                if rows:
                    for k in keys:
                        rows.pop(k, None)
        finally:
            for p in made:
                p.shutdown(wait=False, cancel_futures=True)

    def _columns(self, items: Sequence[int]) -> tuple[list[str], list[int], list[float]]:
        """The keys, sizes and mtimes of ``files[i]`` for *items* (a size of -1: not known), made at
        once (no item made for a :class:`~air_magics.volumes.filelist.FileList`)."""
        files = self._files
        if isinstance(files, FileList):
            return files.run(items)[1:]
        run = [files[i] for i in items]
        sizes = [-1 if f.size is None else f.size for f in run]
        return [f.key for f in run], sizes, [f.mtime for f in run]  # type: ignore[misc]

    def _room_for(self, start: int) -> bool:
        """Wait until the consumer is within one window of *start* (pins stay just ahead of it)."""
        if self._consumed + self._ahead >= start:
            return not self._stop
        t0 = time.perf_counter()
        with self._cond:
            self._needs_room = True
            ok = self._cond.wait_for(lambda: self._stop or self._consumed + self._ahead >= start)
            self._needs_room = False
        self._waited += time.perf_counter() - t0
        return bool(ok) and not self._stop

    def _must_ask(self, key: str, rows: dict) -> bool:
        """A source request only for a file (of a version the list does not carry) that the cache
        holds, whose version is known neither here nor from a check made during this run."""
        row = rows.get(key)
        return row is not None and row[3] < self._trusted_since and self._hits.version(key) is None

    def _settle(self, items: Sequence[int], rows: dict, asked: dict[int, Future]) -> list[str]:
        """Decide *items*: fill in the versions asked for, pin and remember the valid entries; their keys.

        The pins are one transaction that finds each row at the version wanted (see
        :meth:`Entries.pin`); a local copy is looked at (its size) only for an entry this process has
        not validated at that version (a new process): what it validated stays served unlooked-at
        while pinned, and re-pinning it (an epoch longer than ``pin_seconds / 4``) costs the index
        alone."""
        files, hits, now, trusted = self._files, self._hits, time.time(), self._trusted_since
        keys, sizes, mtimes = self._columns(items)
        want: dict[str, tuple[int, float]] = {}
        checked: list[str] = []
        for i, k, size, mtime in zip(items, keys, sizes, mtimes, strict=True):
            listed = size >= 0
            if listed and hits.recent(k, now):
                continue  # validated and pinned here moments ago (a warm epoch): nothing to do
            v: tuple[int, float] | None = (size, mtime) if listed else None
            fut = asked.pop(i, None)
            if fut is not None:
                try:
                    v = fut.result()
                except OSError:
                    continue  # gone or unreadable: the fetch path says which, with its own request
                self.revalidated += 1
                checked.append(k)
            elif v is None:
                v = hits.version(k)
                row = rows.get(k)
                if v is None and row is not None and row[3] >= trusted:
                    v = (row[0], row[1])  # checked against the source during this run
                if v is None:
                    continue  # not cached: nothing to validate
            if fut is not None or not listed:  # what was learnt stays known for the fetch
                f = files[i]
                f.mtime = v[1]  # mtime first: a reader that sees the size also sees the mtime
                f.size = v[0]
            known = hits.version(k)
            if known is None or not same_version(*known, *v):
                try:
                    if os.stat(files[i].slot).st_size != v[0]:
                        continue
                except OSError:
                    continue
            want[k] = v
        if want:
            now = time.time()
            pinned = self._entries.pin(want, now, checked)
            for k in pinned:
                size, mtime = want[k]
                hits.remember(k, size, mtime, now)
            self.valid += len(pinned)
        decided = self._decided
        for i in items:
            decided[i] = 1
        with self._cond:
            self._cond.notify_all()
        return keys
