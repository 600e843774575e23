"""The cache's SQLite index (``<root>/index.sqlite``): opening, recovery, transactions, a full disk.

Why a module of its own: the index must survive what disks do to it.

* **A damaged file** (not a database, malformed) is moved aside to ``index.sqlite.corrupt-<time>``
  and an empty index is built, with one warning naming both files. The cached files stay on disk
  but unindexed, so nothing is served unchecked: they are fetched again (and replaced) on use.
* **The write-ahead log is bounded relative to the space left** (:func:`wal_limit`: 1/32 of the
  free space, between 32 KiB and 4 MiB, and with a cache limit at most 1/32 of that limit, so
  what the index keeps outside the byte budget stays small beside it): :func:`tune_wal` sets SQLite's automatic checkpoint and
  ``journal_size_limit`` to it (at open and before every fetch), so on a small disk it is
  checkpointed every few kilobytes instead of growing to 4 MiB and filling it;
  :func:`checkpoint` truncates it outright when no reader holds it, and :func:`wal_headroom` (what
  it may still grow by) is counted against the cache's free-disk reserve.
* **A full disk** surfaces as :class:`CacheDiskFullError` naming the cache root, the free space and
  the fix. SQLite rolls a transaction back by itself on ``SQLITE_FULL``; :func:`transaction` does
  not then bury that error under "cannot rollback - no transaction is active".
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

from ..errors import CacheDiskFullError
from ..io.atomic import replace
from ..io.units import fmt_bytes

__all__ = [
    "INDEX_NAME",
    "WAL_LIMIT",
    "WAL_MIN",
    "COUNTERS",
    "open_index",
    "transaction",
    "checkpoint",
    "wal_headroom",
    "wal_budget",
    "wal_limit",
    "tune_wal",
    "is_disk_full",
    "disk_full_error",
    "translate_disk_full",
]

INDEX_NAME = "index.sqlite"
WAL_LIMIT = 4 << 20  # the most the WAL may grow to before a checkpoint, on a disk with room to spare
WAL_MIN = 32 << 10  # the least: a few transactions (a miss writes about 16 KiB of log)
_WAL_SHARE = 32  # the WAL may take this fraction (1/32) of the space it and the free disk have
COUNTERS = ("hits", "misses", "bytes_hit", "bytes_fetched", "evictions", "total_bytes", "overflows")
_BUSY_MS = 60_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries(key TEXT PRIMARY KEY, local TEXT NOT NULL, size INTEGER NOT NULL,
                                   mtime REAL NOT NULL, last_access REAL NOT NULL,
                                   checked REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS entries_lru ON entries(last_access);
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS windows(owner TEXT PRIMARY KEY, bytes INTEGER NOT NULL);
"""
# the number of rows, kept by the index itself: a COUNT(*) walks every row (tens of ms under the
# connection's lock at a million entries, twice a second for the status report); with
# recursive_triggers on (every connection sets it), a REPLACE's implicit delete fires the second
_ENTRY_TRIGGERS = """
CREATE TRIGGER entries_added AFTER INSERT ON entries BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'entries'; END;
CREATE TRIGGER entries_removed AFTER DELETE ON entries BEGIN
  UPDATE counters SET value = value - 1 WHERE name = 'entries'; END;
"""
_SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_IOERR, _SQLITE_NOTADB = 11, 13, 10, 26


def open_index(root: Path, reserve: int, wal_cap: int | None = None) -> sqlite3.Connection:
    """A connection to *root*'s index (created if missing, rebuilt empty if damaged); *wal_cap*:
    the most its log may reach (see :func:`wal_budget`)."""
    with translate_disk_full(root, reserve, "opening its index"):
        root.mkdir(parents=True, exist_ok=True)
        try:
            return _connect(root, wal_cap)
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
        from filelock import FileLock

        (root / "locks").mkdir(exist_ok=True)
        with FileLock(str(root / "locks" / "index.lock")):  # one process moves it aside; the others reopen
            try:
                return _connect(root, wal_cap)
            except sqlite3.DatabaseError as exc:
                if not _is_corrupt(exc):
                    raise
                damage = exc
            aside = _move_aside(root)
            warnings.warn(
                f"air_magics cache index {root / INDEX_NAME} is damaged ({damage}); moved it to {aside} "
                f"and started an empty index (cached files are fetched again on use)",
                RuntimeWarning,
                stacklevel=2,
            )
            return _connect(root, wal_cap)


def _connect(root: Path, wal_cap: int | None) -> sqlite3.Connection:
    db = sqlite3.connect(root / INDEX_NAME, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        for attempt in range(100):  # switching to WAL ignores the busy timeout: another process may hold it
            try:
                if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                tune_wal(db, wal_limit(root, cap=wal_cap), new=True)
                db.execute("PRAGMA recursive_triggers=ON")
                db.executescript(_SCHEMA)
                _add_checked(db)
                db.executemany("INSERT OR IGNORE INTO counters(name, value) VALUES (?, 0)", [(c,) for c in COUNTERS])
                _count_entries(db)
                return db
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 99:
                    raise
                time.sleep(0.05)
    except BaseException:
        db.close()
        raise
    raise AssertionError("unreachable")  # pragma: no cover


def _count_entries(db: sqlite3.Connection) -> None:
    """The ``entries`` counter and the triggers that keep it, made once (an index made before them
    is counted once, in the same transaction)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type='trigger' AND name='entries_removed'").fetchone():
        return
    with transaction(db):
        if not db.execute("SELECT 1 FROM sqlite_master WHERE type='trigger' AND name='entries_removed'").fetchone():
            for statement in _ENTRY_TRIGGERS.split("END;")[:-1]:
                db.execute(statement + "END;")
            db.execute("INSERT OR REPLACE INTO counters(name, value) SELECT 'entries', COUNT(*) FROM entries")


def _add_checked(db: sqlite3.Connection) -> None:
    """An index made before ``checked`` (when an entry was last compared with its source) gains it."""
    if "checked" not in [r[1] for r in db.execute("PRAGMA table_info(entries)")]:
        try:
            db.execute("ALTER TABLE entries ADD COLUMN checked REAL NOT NULL DEFAULT 0")
        except sqlite3.OperationalError as exc:  # another process added it meanwhile
            if "duplicate column" not in str(exc):
                raise


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    return any(s in str(exc) for s in ("file is not a database", "malformed"))  # pragma: no cover


def _move_aside(root: Path) -> Path:
    """Rename the damaged index (and its WAL, which belongs to it) out of the way; drop its shm."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = root / f"{INDEX_NAME}.corrupt-{stamp}-{os.getpid()}"
    replace(root / INDEX_NAME, aside)
    with contextlib.suppress(FileNotFoundError):
        replace(root / f"{INDEX_NAME}-wal", f"{aside}-wal")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(root / f"{INDEX_NAME}-shm")
    return aside


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; on error roll back if SQLite has not already, and re-raise
    the *first* error (SQLite rolls back by itself on a full disk: a second ROLLBACK would hide why)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


def checkpoint(db: sqlite3.Connection) -> None:
    """Copy the WAL into the database and truncate it; skipped (never waited for) while a reader holds it."""
    db.execute("PRAGMA busy_timeout=0")
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.OperationalError:
        pass  # busy or out of space: the next checkpoint tries again
    finally:
        db.execute(f"PRAGMA busy_timeout={_BUSY_MS}")


def wal_budget(root: Path, free: int | None = None, cap: int | None = None) -> tuple[int, int]:
    """(limit, headroom) of the WAL, from one stat of it: the bytes it may reach before it is
    checkpointed (1/32 of the space it and the free disk have, between 32 KiB and 4 MiB, and at
    most *cap*, a cache limit's share, when given; *free*: ``disk_usage(root).free`` when already
    known) and what it may still grow by (counted against the reserve)."""
    size = _wal_size(root)
    most = WAL_LIMIT if cap is None else min(WAL_LIMIT, cap)
    limit = max(WAL_MIN, min(most, ((_free(root) if free is None else free) + size) // _WAL_SHARE))
    return limit, max(0, limit - size)


def wal_limit(root: Path, free: int | None = None, cap: int | None = None) -> int:
    """Bytes the WAL may reach before it is checkpointed (see :func:`wal_budget`)."""
    return wal_budget(root, free, cap)[0]


def wal_headroom(root: Path, cap: int | None = None) -> int:
    """Bytes the WAL may still grow by before a checkpoint resets it (see :func:`wal_budget`)."""
    return wal_budget(root, cap=cap)[1]


_TUNED: dict[int, int] = {}  # id(connection) -> the limit applied to it (set anew on every new connection)


def tune_wal(db: sqlite3.Connection, limit: int, *, new: bool = False) -> None:
    """Checkpoint *db* automatically once its WAL reaches *limit* bytes, and truncate it back to
    that after each checkpoint (per connection: each process tunes its own). Called before every
    fetch, it changes the connection only when the limit moved; ``new``: a connection just opened."""
    if not new and _TUNED.get(id(db)) == limit:
        return
    page = db.execute("PRAGMA page_size").fetchone()[0] or 4096
    db.execute(f"PRAGMA wal_autocheckpoint={max(1, limit // (page + 24))}")  # frames: a page + header
    db.execute(f"PRAGMA journal_size_limit={limit}")
    _TUNED[id(db)] = limit


def _wal_size(root: Path) -> int:
    try:
        return os.stat(root / f"{INDEX_NAME}-wal").st_size
    except OSError:
        return 0


def is_disk_full(exc: BaseException, root: Path) -> bool:
    """Whether *exc* means the disk of *root* is full (or the user's quota there is used up)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if isinstance(exc, sqlite3.Error):
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code == _SQLITE_FULL or "database or disk is full" in str(exc):
            return True
        if code == _SQLITE_IOERR:  # growing the WAL index (shm) on a full disk is an I/O error
            return _free(root) < WAL_LIMIT
    return False


def disk_full_error(root: Path, reserve: int, doing: str) -> CacheDiskFullError:
    """The error that names the cache, its free space and the three ways out."""
    exc = CacheDiskFullError(
        f"the disk of the cache at {root} is full ({fmt_bytes(_free(root))} free) while {doing}: raise "
        f"AIR_CACHE_RESERVE (now {fmt_bytes(reserve)}; or FileCache(reserve=...)) so the cache evicts before the "
        f"disk fills, clear it (FileCache().clear() or %air_volume cache --clear; clear(force=True) also drops "
        f"files used in the last seconds), or move AIR_CACHE_DIR to a larger disk"
    )
    exc.errno = errno.ENOSPC
    return exc


@contextlib.contextmanager
def translate_disk_full(root: Path, reserve: int, doing: str) -> Iterator[None]:
    """Turn a disk-full ``OSError``/``sqlite3.Error`` inside the block into :class:`CacheDiskFullError`."""
    try:
        yield
    except CacheDiskFullError:
        raise
    except (OSError, sqlite3.Error) as exc:
        if is_disk_full(exc, root):
            raise disk_full_error(root, reserve, doing) from exc
        raise


def _free(root: Path) -> int:
    try:
        return shutil.disk_usage(root).free
    except OSError:
        return 0
