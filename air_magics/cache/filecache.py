"""A persistent, cross-process cache of volume files on local disk.

Why: reading many small files from a remote volume pays a round trip per file; training reads
every file every epoch. The cache keeps one local copy per volume path and serves it while the
source is unchanged.

* **Keyed by volume path**, stored readably under ``<root>/files/<catalog>/<schema>/<volume>/...``.
* **Never stale**: an entry is valid only while the source's size and mtime match those recorded
  when it was fetched; callers pass the source's current size/mtime (a dataset has them from its
  listing) or the cache stats the source.
* **Bounded**: a byte ``limit`` and a free-disk ``reserve``; least recently used entries go first.
  An entry handed out in the last ``pin_seconds`` is never evicted (that is the guarantee a
  yielded path relies on), and an entry whose source no longer exists is never evicted (it may be
  the only copy left). When nothing may be evicted, a miss is not added past the limit: it is
  served from a bounded per-process overflow window (:mod:`air_magics.cache_overflow`), so the
  limit holds within that window, and a scan's resident subset (a dataset read every epoch)
  keeps hitting instead of thrashing.
* **Many processes**: the index and the statistics live in one SQLite database (WAL); fetches
  write to a temp name and rename; a striped file lock makes concurrent requests for one path
  fetch it once. Connections and locks are created lazily per process, so a ``FileCache``
  pickles into DataLoader workers under fork, spawn and forkserver.
* **Never deletes what it does not own**: ``clear()`` keeps pinned entries too (``force=True``
  does not: unsafe while training), and a file is unlinked only under its key's stripe lock, only
  if it is the cache's own ``<root>/files/...`` path for that key, reached through no link.
* **The index** (:mod:`air_magics.cache_index`) recovers from a damaged file, bounds its WAL, and
  reports a full disk as :class:`~air_magics.errors.CacheDiskFullError`.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config
from .cache_evict import drop, make_room, stripe_of
from .cache_hits import HitLog
from .cache_index import checkpoint, open_index, transaction, translate_disk_full, wal_headroom
from .cache_overflow import DEFAULT_OVERFLOW_FILES, OverflowWindow, Residency
from .errors import CacheLimitError, VolumeNotFoundError
from .events import CacheEvent, Throttle, channel
from .io.locks import ProcessFileLock
from .io.units import fmt_bytes
from .io.versions import same_version
from .snapshots import CacheInfo  # the value cache events carry; it lives below the events
from .transfer import CopyTask, copy_one
from .transfer.file import source_stat
from .volumes.path import VolumePath
from .volumes.store import Location, VolumeStore

__all__ = ["FileCache", "CacheInfo", "ClearReport", "Residency"]

_OPEN_LOCK = threading.Lock()
_CLEAR_WAIT = 2.0  # seconds clear() waits for a stripe busy with a fetch; its entries are kept after that


@dataclass(frozen=True)
class ClearReport:
    """What ``clear()`` did: files removed, and entries kept because a reader may hold their path."""

    removed: int
    bytes: int
    kept: int
    pin_seconds: float

    def __str__(self) -> str:
        text = f"removed {self.removed:,} cached files ({fmt_bytes(self.bytes)})"
        if self.kept:
            text += (
                f"; kept {self.kept:,} in use (used in the last {self.pin_seconds:g} s or being fetched; "
                f"clear(force=True) removes them too, unsafe while a training loop reads them)"
            )
        return text


class FileCache:
    """Local copies of volume files. ``get(path)`` returns a local path valid for the current source.

    ``root`` defaults to ``$AIR_CACHE_DIR`` (``$AIR_HOME/cache``); ``limit`` to ``$AIR_CACHE_LIMIT``
    (``None``: only the reserve bounds it); ``reserve`` to ``$AIR_CACHE_RESERVE`` (1 GiB). Sizes
    accept ``"10GiB"``-style strings. ``overflow_files``: how many files a process may hold past a
    full cache, each valid until that many more files are handed out; ``overflow_bytes``: how many
    bytes they may take (``None``: bounded by the disk and the reserve; see :mod:`.cache_overflow`).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        limit: int | str | None = None,
        reserve: int | str | None = None,
        pin_seconds: float = 30.0,
        store: VolumeStore | None = None,
        retries: int = 4,
        overflow_files: int = DEFAULT_OVERFLOW_FILES,
        overflow_bytes: int | str | None = None,
    ) -> None:
        self.root = Path(root) if root is not None else config.cache_dir()
        self.limit = config.parse_size(limit, "cache limit") if limit is not None else config.cache_limit()
        self.reserve = config.parse_size(reserve, "cache reserve") if reserve is not None else config.cache_reserve()
        if self.limit is not None and self.limit <= 0:
            raise CacheLimitError(f"cache limit {limit!r} must be positive: give e.g. '10GiB', or None for no limit")
        if overflow_files < 1:
            raise CacheLimitError(
                f"overflow_files={overflow_files!r} must be at least 1: it bounds how many files past a full "
                f"cache stay valid, and should exceed the items a loader keeps in flight (default "
                f"{DEFAULT_OVERFLOW_FILES})"
            )
        self.pin_seconds = pin_seconds
        self.overflow_files = overflow_files
        self.overflow_bytes = config.parse_size(overflow_bytes, "overflow_bytes")
        self.retries = retries
        self.store = store or VolumeStore()
        self._reset_process_state()

    # -- per-process state (never pickled) --------------------------------------------------------
    def _reset_process_state(self) -> None:
        self._pid: int | None = None
        self._db: sqlite3.Connection | None = None
        self._db_lock: threading.Lock | None = None
        self._stripes: dict[int, tuple[threading.Lock, Any]] = {}
        self._status = Throttle(0.5)
        self._wal_check = Throttle(5.0)
        self._hits = HitLog(self.pin_seconds, flush=self.flush_hits)
        self._overflow = OverflowWindow(self.root, self.overflow_files, self.overflow_bytes, self.limit)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in ("_pid", "_db", "_db_lock", "_stripes", "_status", "_wal_check", "_hits", "_overflow"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_process_state()

    def __repr__(self) -> str:
        return f"FileCache(root={str(self.root)!r}, limit={self.limit}, reserve={self.reserve})"

    def _conn(self) -> tuple[sqlite3.Connection, threading.Lock]:
        if self._db is None or self._pid != os.getpid():
            with _OPEN_LOCK:  # prefetch threads race here on first use
                if self._db is None or self._pid != os.getpid():
                    self._reset_process_state()
                    self._db, self._db_lock, self._pid = self._open(), threading.Lock(), os.getpid()
        assert self._db is not None and self._db_lock is not None
        return self._db, self._db_lock

    def _open(self) -> sqlite3.Connection:
        return open_index(self.root, self.reserve)

    def _stripe(self, key: str) -> tuple[threading.Lock, Any]:
        return self._stripe_at(stripe_of(key))

    def _stripe_at(self, i: int) -> tuple[threading.Lock, Any]:
        if i not in self._stripes:
            with _OPEN_LOCK:  # two threads creating stripe i at once must still end up sharing one lock
                if i not in self._stripes:
                    (self.root / "locks").mkdir(parents=True, exist_ok=True)
                    self._stripes[i] = (threading.Lock(), ProcessFileLock(self.root / "locks" / f"{i:03d}.lock"))
        return self._stripes[i]

    def _try_stripe(self, i: int, wait: float) -> tuple[threading.Lock, Any] | None:
        """Stripe *i*'s locks if they can be had within *wait* seconds (0: only if free now), else None."""
        tlock, flock = self._stripe_at(i)
        if not (tlock.acquire(timeout=wait) if wait > 0 else tlock.acquire(blocking=False)):
            return None
        try:
            flock.acquire(timeout=wait)
        except TimeoutError:
            tlock.release()
            return None
        return tlock, flock

    # -- the cache --------------------------------------------------------------------------------
    def local_path(self, path: str | VolumePath) -> Path:
        vp = VolumePath.parse(path)
        return self.root.joinpath("files", vp.catalog, vp.schema, vp.volume, *vp.parts)

    def get(
        self,
        path: str | VolumePath,
        *,
        size: int | None = None,
        mtime: float | None = None,
        src: Location | None = None,
        keep: Residency | None = None,
    ) -> str:
        """Local path of *path*'s current content, fetching it on a miss.

        Pass the source's ``size``/``mtime`` when known (saves a round trip) and ``src`` when
        the caller has already located it. Unknown (``None`` or a size of -1) for a local or
        mounted source: a path the index does not hold is fetched at once when no byte limit is
        set (size and mtime come from the opened file, no separate stat); otherwise the source is
        stat'ed first (one round trip) and validated or fetched as usual.

        ``keep``: the caller's resident subset (a dataset's files read since its previous epoch),
        which this miss must not evict. A miss that finds no room within the limit is served from
        the process's overflow window instead of growing the cache (see :mod:`.cache_overflow`).
        """
        try:
            local = self._get(path, size, mtime, src, keep)
        except FileNotFoundError as exc:
            raise self._vanished(path, src, exc) from None
        self._overflow.handed_out()
        return local

    def _vanished(self, path: str | VolumePath, src: Location | None, exc: FileNotFoundError) -> FileNotFoundError:
        """The error for a fetch that found no file: named (:class:`VolumeNotFoundError`) when the
        source is gone, e.g. removed after a dataset listed it; the original when it is still there
        (then the cache's own side failed)."""
        if isinstance(exc, VolumeNotFoundError):
            return exc
        try:
            source_stat(src or self.store.locate(path))
        except FileNotFoundError:
            vp = VolumePath.parse(path)
            return VolumeNotFoundError(
                f"{str(vp)!r} does not exist (removed from the volume after it was listed?); check the path with "
                f"`%air_volume ls {vp.parent}`, or pass on_error='skip' to a dataset to leave such files out"
            )
        except Exception:  # the source cannot be asked: report what the fetch saw
            pass
        return exc

    def _get(
        self,
        path: str | VolumePath,
        size: int | None,
        mtime: float | None,
        src: Location | None,
        keep: Residency | None,
    ) -> str:
        vp = VolumePath.parse(path)
        key = str(vp)
        local = self.local_path(vp)
        if size is None or mtime is None or size < 0:
            if src is None:
                src = self.store.locate(vp)
            # with a byte limit, room is made for the file's size before it is fetched: stat first
            try:
                if src.is_local and self.limit is None and self._unindexed_fetch(key, local, src):
                    return str(local)
                size, mtime = source_stat(src)
            except FileNotFoundError:
                raise VolumeNotFoundError(
                    f"{key!r} does not exist; check the path with `%air_volume ls {vp.parent}`"
                ) from None
        if self._hit(key, local, size, mtime):
            return str(local)
        tlock, flock = self._stripe(key)
        with tlock, flock, translate_disk_full(self.root, self.reserve, f"fetching {key}"):
            if self._hit(key, local, size, mtime):  # another process fetched it meanwhile
                return str(local)
            if self.limit is not None and size > self.limit:
                raise CacheLimitError(
                    f"{key} is {fmt_bytes(size)} but the cache limit is {fmt_bytes(self.limit)}; raise the limit "
                    f"(FileCache(limit=...) or AIR_CACHE_LIMIT) above the largest file"
                )
            if not make_room(self, size, keep):
                return self._overflow_fetch(vp, src or self.store.locate(vp), size, mtime)
            task = CopyTask(
                src or self.store.locate(vp), Location(str(local), root=str(self.root / "files")), size, mtime
            )
            n = copy_one(task, retries=self.retries)
            self._record(key, local, n, mtime)
        return str(local)

    def _unindexed_fetch(self, key: str, local: Path, src: Location) -> bool:
        """Fetch *key* without knowing its size when the index has no entry for it (the cold
        case of a names-only listing); False when there is an entry to validate instead. Without a
        local file there is nothing to validate: fetched without asking the index."""
        if os.path.exists(local) and self._indexed(key):
            return False
        tlock, flock = self._stripe(key)
        with tlock, flock, translate_disk_full(self.root, self.reserve, f"fetching {key}"):
            if os.path.exists(local) and self._indexed(key):  # another process fetched it meanwhile
                return False
            make_room(self, 0)  # the reserve (no limit is set here): at most this one file's size over it
            n = copy_one(CopyTask(src, Location(str(local), root=str(self.root / "files"))), retries=self.retries)
            self._record(key, local, n, os.stat(local).st_mtime)  # the copy carries the source's mtime
        return True

    def _overflow_fetch(self, vp: VolumePath, src: Location, size: int, mtime: float) -> str:
        """Serve from the overflow window: no room within the limit without evicting what is in use."""
        root = str(self._overflow.base)

        def copy(dest: str) -> int:
            return copy_one(CopyTask(src, Location(dest, root=root), size, mtime), retries=self.retries)

        rel = "/".join((vp.catalog, vp.schema, vp.volume, *vp.parts))
        headroom = wal_headroom(self.root)  # the index's log shares the disk
        local, n, reused = self._overflow.fetch(rel, size, mtime, copy, reserve=self.reserve, headroom=headroom)
        if reused:  # still in the window, same version: no second copy
            self._count(hits=1, bytes_hit=size)
        else:
            self._count(misses=1, bytes_fetched=n, overflows=1)
        return local

    def _indexed(self, key: str) -> bool:
        db, lock = self._conn()
        with lock:
            return db.execute("SELECT 1 FROM entries WHERE key=?", (key,)).fetchone() is not None

    def known_version(self, path: str | VolumePath) -> tuple[int, float] | None:
        """The source (size, mtime) this process last fetched or validated *path* against, or None:
        a dataset whose listing had no sizes validates later hits against it without a round trip."""
        return self._hits.version(str(VolumePath.parse(path)))

    def try_hit(self, path: str | VolumePath, size: int, mtime: float) -> str | None:
        """The local path if *path* is cached and valid for this size/mtime, else ``None`` (no fetch)."""
        vp = VolumePath.parse(path)
        local = self.local_path(vp)
        if not self._hit(str(vp), local, size, mtime):
            return None
        self._overflow.handed_out()
        return str(local)

    def _hit(self, key: str, local: Path, size: int, mtime: float) -> bool:
        """Serve from the cache if valid. Entries this process validated recently are served from
        process-local state (:mod:`air_magics.cache_hits`; LRU time and counters batched); others
        take one read and one write transaction on the shared index. The local file is looked at
        first: a cold miss costs one ``stat`` and never waits for the index's lock, which the
        fetching threads hold while they record their files."""
        try:
            here = os.stat(local).st_size == size
        except OSError:
            here = False
        if not here:
            self._hits.forget(key)
            return False
        db, lock = self._conn()
        now = time.time()
        if self._hits.valid(key, size, mtime, now):
            if self._hits.note(key, size, now):
                self.flush_hits()
            return True
        with lock:
            row = db.execute("SELECT size, mtime FROM entries WHERE key=?", (key,)).fetchone()
            if row is None or not same_version(row[0], row[1], size, mtime):
                return False
            with self._disk_full("recording a hit"), transaction(db):
                if not db.execute("UPDATE entries SET last_access=? WHERE key=?", (now, key)).rowcount:
                    return False  # cleared or evicted since the read: fetch it again (under its stripe lock)
                self._add(db, hits=1, bytes_hit=size)
        self._hits.remember(key, size, mtime, now)
        self._publish()
        return True

    def flush_hits(self) -> None:
        """Write this process's batched hits (access times, counters) to the shared index. Called a
        few times a second while hits are served, and before the totals are read or entries cleared."""
        access, hits, nbytes = self._hits.take()
        if not access and not hits:
            return
        db, lock = self._conn()
        with lock, self._disk_full("recording hits"), transaction(db):
            db.executemany(
                "UPDATE entries SET last_access = MAX(last_access, ?) WHERE key = ?",
                [(t, k) for k, t in access.items()],
            )
            self._add(db, hits=hits, bytes_hit=nbytes)
        self._publish()

    def _record(self, key: str, local: Path, size: int, mtime: float) -> None:
        db, lock = self._conn()
        with lock, self._disk_full(f"indexing {key}"), transaction(db):
            old = db.execute("SELECT size FROM entries WHERE key=?", (key,)).fetchone()
            db.execute(
                "INSERT OR REPLACE INTO entries(key, local, size, mtime, last_access) VALUES (?,?,?,?,?)",
                (key, str(local), size, mtime, time.time()),
            )
            self._add(db, misses=1, bytes_fetched=size, total_bytes=size - (old[0] if old else 0))
        self._hits.remember(key, size, mtime, time.time())
        self._publish()

    def _count(self, **deltas: int) -> None:
        db, lock = self._conn()
        with lock, self._disk_full("counting"):
            self._add(db, **deltas)
        self._publish()

    @staticmethod
    def _add(db: sqlite3.Connection, **deltas: int) -> None:
        db.executemany("UPDATE counters SET value = value + ? WHERE name = ?", [(v, k) for k, v in deltas.items() if v])

    def _disk_full(self, doing: str) -> Any:
        return translate_disk_full(self.root, self.reserve, doing)

    # -- inspection -------------------------------------------------------------------------------
    def info(self) -> CacheInfo:
        self.flush_hits()  # this process's batched hits count too
        db, lock = self._conn()
        with lock:
            counters = dict(db.execute("SELECT name, value FROM counters").fetchall())
            entries = db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        return CacheInfo(
            str(self.root),
            entries,
            counters["total_bytes"],
            self.limit,
            self.reserve,
            shutil.disk_usage(self.root).free,
            counters["hits"],
            counters["misses"],
            counters["bytes_hit"],
            counters["bytes_fetched"],
            counters["evictions"],
            counters["overflows"],
        )

    def clear(self, *, reset_stats: bool = False, force: bool = False) -> ClearReport:
        """Drop cached files (never the sources), keeping those used in the last ``pin_seconds``.

        A training loop may hold a path handed out moments ago: those entries are kept and counted
        in the report. ``force=True`` drops them too, which is unsafe while anything reads from the
        cache. ``reset_stats`` zeroes the hit/miss counters."""
        self.flush_hits()  # the pins of what this process handed out must be in the index
        db, lock = self._conn()
        with lock:
            keys = [k for (k,) in db.execute("SELECT key FROM entries")]
        cutoff = None if force else time.time() - self.pin_seconds
        removed, nbytes, kept = drop(self, keys, cutoff, wait=_CLEAR_WAIT, evictions=False)
        with lock:
            with self._disk_full("clearing"), transaction(db):
                db.execute(
                    "UPDATE counters SET value = (SELECT COALESCE(SUM(size), 0) FROM entries) "
                    "WHERE name = 'total_bytes'"
                )  # heal any drift while we are at it
                if reset_stats:
                    db.execute("UPDATE counters SET value = 0 WHERE name != 'total_bytes'")
            checkpoint(db)
        self.publish_status()
        return ClearReport(removed, nbytes, kept, 0.0 if force else self.pin_seconds)

    def publish_status(self) -> None:
        """Report the statistics now (a ``CacheEvent`` with ``state="done"``): the default listeners
        write the ``cache`` status document that the widgets and the sidebar read."""
        self._emit("done")

    def _publish(self, force: bool = False) -> None:
        # a snapshot costs a database query: sampled at most twice a second per process, and only
        # when someone listens (the status documents do, by default)
        if force or (channel.listening() and self._status.ready()):
            self._emit("running")

    def _emit(self, state: str) -> None:
        if channel.listening():
            channel.emit(CacheEvent(state=state, stats=self.info()))
