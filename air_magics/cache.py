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
  the only copy left).
* **Many processes**: the index and the statistics live in one SQLite database (WAL); fetches
  write to a temp name and rename; a striped file lock makes concurrent requests for one path
  fetch it once. Connections and locks are created lazily per process, so a ``FileCache``
  pickles into DataLoader workers under fork, spawn and forkserver.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from . import config
from .errors import CacheLimitError
from .status import Throttle, write_status
from .transfer import CopyTask, copy_one
from .volumes.path import VolumePath
from .volumes.store import Location, VolumeStore
from .volumes.summary import fmt_bytes

__all__ = ["FileCache", "CacheInfo"]

_STRIPES = 256
_OPEN_LOCK = threading.Lock()
_MTIME_TOLERANCE = 1e-3
_COUNTERS = ("hits", "misses", "bytes_hit", "bytes_fetched", "evictions", "total_bytes")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries(key TEXT PRIMARY KEY, local TEXT NOT NULL, size INTEGER NOT NULL,
                                   mtime REAL NOT NULL, last_access REAL NOT NULL);
CREATE INDEX IF NOT EXISTS entries_lru ON entries(last_access);
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


@dataclass(frozen=True)
class CacheInfo:
    """A snapshot of the cache: contents, bounds and the statistics all processes add to."""

    root: str
    entries: int
    bytes: int
    limit: int | None
    reserve: int
    free_disk: int
    hits: int
    misses: int
    bytes_hit: int
    bytes_fetched: int
    evictions: int

    @property
    def hit_rate(self) -> float:
        n = self.hits + self.misses
        return self.hits / n if n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(asdict(self), hit_rate=self.hit_rate)

    def __repr__(self) -> str:
        limit = fmt_bytes(self.limit) if self.limit else "none"
        return (f"cache {self.root}: {self.entries:,} files, {fmt_bytes(self.bytes)} (limit {limit}, free disk "
                f"{fmt_bytes(self.free_disk)}); hit rate {self.hit_rate:.1%} ({self.hits:,} hits, {self.misses:,} misses); "
                f"{fmt_bytes(self.bytes_hit)} served, {fmt_bytes(self.bytes_fetched)} fetched; {self.evictions:,} evictions")


class FileCache:
    """Local copies of volume files. ``get(path)`` returns a local path valid for the current source.

    ``root`` defaults to ``$AIR_CACHE_DIR`` (``$AIR_HOME/cache``); ``limit`` to ``$AIR_CACHE_LIMIT``
    (``None``: only the reserve bounds it); ``reserve`` to ``$AIR_CACHE_RESERVE`` (1 GiB). Sizes
    accept ``"10GiB"``-style strings.
    """

    def __init__(self, root: "str | os.PathLike[str] | None" = None, *, limit: "int | str | None" = None,
                 reserve: "int | str | None" = None, pin_seconds: float = 30.0, store: VolumeStore | None = None,
                 retries: int = 4) -> None:
        self.root = Path(root) if root is not None else config.cache_dir()
        self.limit = config.parse_size(limit, "cache limit") if limit is not None else config.cache_limit()
        self.reserve = config.parse_size(reserve, "cache reserve") if reserve is not None else config.cache_reserve()
        if self.limit is not None and self.limit <= 0:
            raise CacheLimitError(f"cache limit {limit!r} must be positive: give e.g. '10GiB', or None for no limit")
        self.pin_seconds = pin_seconds
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

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in ("_pid", "_db", "_db_lock", "_stripes", "_status"):
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
        self.root.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.root / "index.sqlite", timeout=60, isolation_level=None, check_same_thread=False)
        for attempt in range(100):  # switching to WAL ignores the busy timeout: another process may hold it
            try:
                if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
                db.executemany("INSERT OR IGNORE INTO counters(name, value) VALUES (?, 0)", [(c,) for c in _COUNTERS])
                return db
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 99:
                    raise
                time.sleep(0.05)
        raise AssertionError("unreachable")  # pragma: no cover

    def _stripe(self, key: str) -> tuple[threading.Lock, Any]:
        from filelock import FileLock

        i = zlib.crc32(key.encode()) % _STRIPES
        if i not in self._stripes:
            (self.root / "locks").mkdir(parents=True, exist_ok=True)
            self._stripes[i] = (threading.Lock(), FileLock(str(self.root / "locks" / f"{i:03d}.lock")))
        return self._stripes[i]

    # -- the cache --------------------------------------------------------------------------------
    def local_path(self, path: "str | VolumePath") -> Path:
        vp = VolumePath.parse(path)
        return self.root.joinpath("files", vp.catalog, vp.schema, vp.volume, *vp.parts)

    def get(self, path: "str | VolumePath", *, size: int | None = None, mtime: float | None = None,
            src: Location | None = None) -> str:
        """Local path of *path*'s current content, fetching it on a miss.

        Pass the source's ``size``/``mtime`` when known (saves a round trip) and ``src`` when
        the caller has already located it.
        """
        vp = VolumePath.parse(path)
        key = str(vp)
        if size is None or mtime is None:
            info = self.store.stat(vp)
            size, mtime = info.size, info.mtime
        local = self.local_path(vp)
        if self._hit(key, local, size, mtime):
            return str(local)
        tlock, flock = self._stripe(key)
        with tlock, flock:
            if self._hit(key, local, size, mtime):  # another process fetched it meanwhile
                return str(local)
            if self.limit is not None and size > self.limit:
                raise CacheLimitError(
                    f"{key} is {fmt_bytes(size)} but the cache limit is {fmt_bytes(self.limit)}; raise the limit "
                    f"(FileCache(limit=...) or AIR_CACHE_LIMIT) above the largest file")
            self._make_room(size)
            task = CopyTask(src or self.store.locate(vp), Location(str(local)), size, mtime)
            n = copy_one(task, retries=self.retries)
            self._record(key, local, n, mtime)
        return str(local)

    def try_hit(self, path: "str | VolumePath", size: int, mtime: float) -> str | None:
        """The local path if *path* is cached and valid for this size/mtime, else ``None`` (no fetch)."""
        vp = VolumePath.parse(path)
        local = self.local_path(vp)
        return str(local) if self._hit(str(vp), local, size, mtime) else None

    def _hit(self, key: str, local: Path, size: int, mtime: float) -> bool:
        """Serve from the cache if valid: one read, then one write transaction (LRU + counters)."""
        db, lock = self._conn()
        now = time.time()
        with lock:
            row = db.execute("SELECT size, mtime FROM entries WHERE key=?", (key,)).fetchone()
            if row is None or row[0] != size or abs(row[1] - mtime) > _MTIME_TOLERANCE:
                return False
            try:
                if os.stat(local).st_size != size:
                    return False
            except FileNotFoundError:
                return False
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("UPDATE entries SET last_access=? WHERE key=?", (now, key))
                self._add(db, hits=1, bytes_hit=size)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self._publish()
        return True

    def _record(self, key: str, local: Path, size: int, mtime: float) -> None:
        db, lock = self._conn()
        with lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                old = db.execute("SELECT size FROM entries WHERE key=?", (key,)).fetchone()
                db.execute("INSERT OR REPLACE INTO entries(key, local, size, mtime, last_access) VALUES (?,?,?,?,?)",
                           (key, str(local), size, mtime, time.time()))
                self._add(db, misses=1, bytes_fetched=size, total_bytes=size - (old[0] if old else 0))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self._publish()

    def _count(self, **deltas: int) -> None:
        db, lock = self._conn()
        with lock:
            self._add(db, **deltas)
        self._publish()

    @staticmethod
    def _add(db: sqlite3.Connection, **deltas: int) -> None:
        db.executemany("UPDATE counters SET value = value + ? WHERE name = ?", [(v, k) for k, v in deltas.items() if v])

    def _make_room(self, incoming: int) -> None:
        """Evict least recently used, unpinned entries whose source still exists."""
        db, lock = self._conn()
        with lock:
            total = db.execute("SELECT value FROM counters WHERE name='total_bytes'").fetchone()[0]
        free = shutil.disk_usage(self.root).free
        need = max((total + incoming - self.limit) if self.limit is not None else 0, self.reserve - (free - incoming))
        if need <= 0:
            return
        cutoff = time.time() - self.pin_seconds
        with lock:
            rows = db.execute("SELECT key, local, size FROM entries WHERE last_access < ? ORDER BY last_access LIMIT 1024",
                              (cutoff,)).fetchall()
        for key, local, size in rows:
            if need <= 0:
                break
            try:
                if not self.store.exists(key):
                    continue  # the source is gone: this copy may be the only one left
            except Exception:  # an unreachable source is not proof of absence: keep it
                continue
            with lock:
                db.execute("BEGIN IMMEDIATE")
                gone = db.execute("DELETE FROM entries WHERE key=? AND last_access < ?", (key, cutoff)).rowcount
                if gone:
                    self._add(db, evictions=1, total_bytes=-size)
                db.execute("COMMIT")
            if gone:
                Path(local).unlink(missing_ok=True)
                need -= size

    # -- inspection -------------------------------------------------------------------------------
    def info(self) -> CacheInfo:
        db, lock = self._conn()
        with lock:
            counters = dict(db.execute("SELECT name, value FROM counters").fetchall())
            entries = db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        return CacheInfo(str(self.root), entries, counters["total_bytes"], self.limit, self.reserve,
                         shutil.disk_usage(self.root).free, counters["hits"], counters["misses"],
                         counters["bytes_hit"], counters["bytes_fetched"], counters["evictions"])

    def clear(self, *, reset_stats: bool = False) -> int:
        """Drop every cached file (not the sources); returns how many. ``reset_stats`` zeroes counters."""
        db, lock = self._conn()
        with lock:
            rows = db.execute("SELECT local FROM entries").fetchall()
            db.execute("DELETE FROM entries")
            db.execute("UPDATE counters SET value = 0 WHERE name = 'total_bytes'")
            if reset_stats:
                db.execute("UPDATE counters SET value = 0")
        for (local,) in rows:
            Path(local).unlink(missing_ok=True)
        self.publish_status()
        return len(rows)

    def publish_status(self) -> None:
        """Write the statistics document for widgets and the sidebar now."""
        write_status("cache", self.info().to_dict())

    def _publish(self, force: bool = False) -> None:
        if force or self._status.ready():  # at most twice a second per process
            self.publish_status()
