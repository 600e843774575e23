"""The cache index's rows and counters behind one handle: every SQL statement the cache runs is here.

Why one handle: the cache's lookup, its eviction, its validation and its statistics all read and
write the same two tables. Each used to take the connection and its lock from the cache's private
state; now they call these methods, and the connection (opened lazily, once per process, so a
cache pickles into DataLoader workers under any start method) stays inside.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..io.forksafe import ForkSafeLock
from ..io.versions import same_version
from .index import checkpoint, open_index, transaction, translate_disk_full, tune_wal

__all__ = ["Entries", "Row", "PENDING", "FETCH_PIN"]

Row = tuple[int, float, float, float]  # (size, source mtime, last access, last checked against the source)
_OPEN_LOCK = ForkSafeLock()  # fresh in a forked child: the parent's threads may hold its copy

_CHUNK = 500  # keys per query (SQLite allows 999 parameters in old builds)
PENDING = -1.0  # the mtime of a row whose fetch is under way (no source has it)
FETCH_PIN = 60.0  # s: a row being fetched (PENDING) and renewed this recently is never evicted under its fetch


class Entries:
    """The index of the cache at *root* (its ``entries`` and ``counters`` tables), one connection per process."""

    def __init__(self, root: Path, reserve: int) -> None:
        self.root, self.reserve = root, reserve
        self.wal_cap: int | None = None  # the most the index's log may reach (a cache limit's share)
        self._pid = 0
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._queue: list[_Pending] = []  # rows waiting for a group commit (see record) ...
        self._qlock, self._qpid = threading.Lock(), 0  # ... and its lock, made anew in each process
        self.on_open: Callable[[], None] | None = None  # run once per process after the index opens

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "reserve": self.reserve}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"], state["reserve"])  # type: ignore[misc]

    @contextmanager
    def _open(self) -> Iterator[sqlite3.Connection]:
        """The connection, under this process's lock (SQLite connections are not shared by threads at once)."""
        if self._db is None or self._pid != os.getpid():
            opened = False
            with _OPEN_LOCK:  # prefetch threads race here on first use
                if self._db is None or self._pid != os.getpid():
                    self._lock = threading.Lock()  # a forked child's copy may be held by a dead thread
                    self._db, self._pid = open_index(self.root, self.reserve, self.wal_cap), os.getpid()
                    opened = True
            if opened and self.on_open is not None:  # (outside the locks: it may use the index itself)
                self.on_open()
        with self._lock:
            yield self._db  # type: ignore[misc]

    def disk_full(self, doing: str) -> AbstractContextManager[None]:
        """Report a full disk inside the block as :class:`~air_magics.errors.CacheDiskFullError`."""
        return translate_disk_full(self.root, self.reserve, doing)

    # -- reads ---------------------------------------------------------------------------------------
    def row(self, key: str) -> Row | None:
        with self._open() as db:
            return db.execute("SELECT size, mtime, last_access, checked FROM entries WHERE key=?", (key,)).fetchone()

    def rows_for(self, keys: Sequence[str]) -> dict[str, Row]:
        """The entries of *keys* (those the index holds), a few hundred keys per query: a stream
        asks for one window of its order at a time, so what it holds stays bounded however many
        files the dataset has (one query for a whole folder held a row per file in every worker)."""
        out: dict[str, Row] = {}
        with self._open() as db:
            for i in range(0, len(keys), _CHUNK):
                part = keys[i : i + _CHUNK]
                found = db.execute(
                    "SELECT key, size, mtime, last_access, checked FROM entries WHERE key IN "
                    f"({','.join('?' * len(part))})",
                    part,
                ).fetchall()
                out.update((k, (s, m, a, c)) for k, s, m, a, c in found)
        return out

    def all_rows(self) -> list[tuple[str, str, int, float]]:
        """Every entry as ``(key, local, size, source mtime)`` (a check compares them with the files)."""
        with self._open() as db:
            return db.execute("SELECT key, local, size, mtime FROM entries").fetchall()

    def keys(self) -> list[str]:
        with self._open() as db:
            return [k for (k,) in db.execute("SELECT key FROM entries")]

    def count(self) -> int:
        """Rows in the index (its ``entries`` counter, kept by triggers: no walk over the rows)."""
        with self._open() as db:
            return db.execute("SELECT value FROM counters WHERE name='entries'").fetchone()[0]

    def counters(self) -> dict[str, int]:
        with self._open() as db:
            return dict(db.execute("SELECT name, value FROM counters").fetchall())

    def total_bytes(self) -> int:
        with self._open() as db:
            return db.execute("SELECT value FROM counters WHERE name='total_bytes'").fetchone()[0]

    def lru(self, cutoff: float, keep: tuple[str, str, float], limit: int = 1024) -> list[tuple[str, int]]:
        """Least recently used entries not used since *cutoff* and not in *keep* (``lo``, ``hi``,
        ``since``: a resident subset's key range and start): ``(key, size)``, oldest first. A row
        being fetched (a shard's folder being extracted: its fetch renews it) is never one of them."""
        with self._open() as db:
            return db.execute(
                "SELECT key, size FROM entries WHERE last_access < ? "
                "AND NOT (key >= ? AND key < ? AND last_access >= ?) "
                "AND NOT (mtime = ? AND last_access >= ?) ORDER BY last_access LIMIT ?",
                (cutoff, *keep, PENDING, time.time() - FETCH_PIN, limit),
            ).fetchall()

    # -- writes --------------------------------------------------------------------------------------
    def touch(self, access: dict[str, float], counts: dict[str, int]) -> None:
        """Write access times (never moving one back) and counter deltas, in one transaction."""
        if not access and not any(counts.values()):
            return
        with self._open() as db, self.disk_full("recording hits"), transaction(db):
            db.executemany(
                "UPDATE entries SET last_access = MAX(last_access, ?) WHERE key = ?",
                [(t, k) for k, t in access.items()],
            )
            _add(db, counts)

    def renew(self, key: str, now: float, *, bytes_hit: int = 0) -> bool:
        """Access time *now* for *key* (never moved back), and a hit of *bytes_hit* when given, in
        one transaction; False when there is no row (evicted). One statement decides: a look-up
        first and a write after let an eviction in another thread land between them, and the pin
        was taken for a folder already gone."""
        with self._open() as db, self.disk_full("renewing a pin"), transaction(db):
            if not db.execute(
                "UPDATE entries SET last_access = MAX(last_access, ?) WHERE key = ?", (now, key)
            ).rowcount:
                return False
            if bytes_hit:
                _add(db, {"hits": 1, "bytes_hit": bytes_hit})
        return True

    def touch_if_same(self, key: str, size: int, mtime: float, now: float) -> bool:
        """One hit on *key* validated against the index: True (access time written, counted) when the
        entry holds this version; False when absent, another version, or gone."""
        with self._open() as db:
            row = db.execute("SELECT size, mtime FROM entries WHERE key=?", (key,)).fetchone()
            if row is None or not same_version(row[0], row[1], size, mtime):
                return False
            with self.disk_full("recording a hit"), transaction(db):
                if not db.execute("UPDATE entries SET last_access=? WHERE key=?", (now, key)).rowcount:
                    return False  # cleared or evicted since the read
                _add(db, {"hits": 1, "bytes_hit": size})
        return True

    def reserve_room(self, key: str, local: str, size: int, limit: int | None) -> bool:
        """Claim *size* bytes for *key* before fetching it: its row is written (access now, so nobody
        evicts it mid-fetch) and counted in ``total_bytes`` in the same transaction that checks the
        limit, so concurrent fetches in any process never take the cache past it. False: no room.
        The row's mtime is ``PENDING`` until :meth:`record`: no version matches it, so nobody serves
        the old local file as the new version meanwhile."""
        with self._open() as db, self.disk_full(f"indexing {key}"), transaction(db):
            old = db.execute("SELECT size FROM entries WHERE key=?", (key,)).fetchone()
            grow = size - (old[0] if old else 0)
            if limit is not None and grow > 0:
                total = db.execute("SELECT value FROM counters WHERE name='total_bytes'").fetchone()[0]
                if total + grow > limit:
                    return False
            db.execute(
                "INSERT OR REPLACE INTO entries(key, local, size, mtime, last_access) VALUES (?,?,?,?,?)",
                (key, local, size, PENDING, time.time()),
            )
            _add(db, {"total_bytes": grow})
        return True

    def record(self, key: str, local: str, size: int, mtime: float, *, miss: bool = True) -> None:
        """*key* now holds *size* bytes of the source version *mtime*; a fetch (``miss``) is counted.

        Returns once the row is committed (the caller still holds the key's stripe, so no other
        process sees the file without its row). Group commit: the rows of this process's threads
        that arrive while the index is busy are written in one transaction by whichever thread
        takes the connection next: one write transaction per file cost ~0.8 ms of wall time under
        the connection's lock, which capped a cold epoch near a thousand misses a second."""
        pending = _Pending((key, local, size, mtime, miss))
        if self._qpid != os.getpid():
            with _OPEN_LOCK:
                if self._qpid != os.getpid():  # (a parent's queued rows are the parent's to write)
                    self._qlock, self._queue, self._qpid = threading.Lock(), [], os.getpid()
        with self._qlock:
            self._queue.append(pending)
        with self._open() as db:
            if not pending.done:  # nobody took it yet: write everything queued, this row among it
                with self._qlock:
                    batch, self._queue = self._queue, []
                try:
                    with self.disk_full(f"indexing {batch[0].row[0]}"), transaction(db):
                        _write_rows(db, [p.row for p in batch])
                except BaseException as exc:
                    for p in batch:
                        p.error = exc
                    raise
                finally:
                    for p in batch:
                        p.done = True
        if pending.error is not None:
            raise pending.error

    def write_rows(self, rows: list[tuple[str, str, int, float, bool]]) -> None:
        """Fetched files' rows (``key, local, size, mtime, miss``) in one transaction (for
        :class:`~air_magics.cache.writebehind.WriteBehind`, which commits them behind the fetches)."""
        with self._open() as db, self.disk_full(f"indexing {rows[0][0]}"), transaction(db):
            _write_rows(db, rows)

    def forget(self, key: str) -> None:
        """Drop *key*'s row (a reserved fetch that failed)."""
        with self._open() as db, self.disk_full("removing a failed fetch"), transaction(db):
            old = db.execute("SELECT size FROM entries WHERE key=?", (key,)).fetchone()
            if old is not None:
                db.execute("DELETE FROM entries WHERE key=?", (key,))
                _add(db, {"total_bytes": -old[0]})

    def remove(
        self,
        keys: list[str],
        cutoff: float,
        *,
        evictions: bool,
        before_commit: Callable[[list[tuple[str, str, int]]], None] | None = None,
    ) -> list[tuple[str, str, int]]:
        """Delete the rows of *keys* not used since *cutoff* and not being fetched (unless *cutoff*
        is infinite: ``clear(force=True)``); their ``(key, local, size)``.

        *before_commit* gets those rows inside the transaction (the evictor unlinks their files
        there): the bytes leave the index's total only once they have left the disk, so a claim in
        another process never counts room that is still taken."""
        gone: list[tuple[str, str, int]] = []
        fetching = time.time() - FETCH_PIN if cutoff != float("inf") else float("inf")
        with self._open() as db, self.disk_full("removing cached files"), transaction(db):
            for n in range(0, len(keys), _CHUNK):
                chunk = keys[n : n + _CHUNK]
                # "+last_access": look rows up by key, not by scanning the LRU index
                where = (
                    f"+last_access < ? AND NOT (mtime = ? AND last_access >= ?) "
                    f"AND key IN ({','.join('?' * len(chunk))})"
                )
                args = (cutoff, PENDING, fetching, *chunk)
                gone += db.execute(f"SELECT key, local, size FROM entries WHERE {where}", args).fetchall()
                db.execute(f"DELETE FROM entries WHERE {where}", args)
            if before_commit is not None and gone:
                before_commit(gone)
            _add(db, {"evictions": len(gone) if evictions else 0, "total_bytes": -sum(r[2] for r in gone)})
        return gone

    # -- the overflow windows' shared byte budget (one row per live process's window) -------------
    def window_take(self, owner: str, size: int, cap: int) -> bool:
        """Take *size* bytes for *owner*'s overflow window if all windows together stay within *cap*."""
        with self._open() as db, self.disk_full("taking room in the overflow window"), transaction(db):
            used = db.execute("SELECT COALESCE(SUM(bytes), 0) FROM windows").fetchone()[0]
            if used + size > cap:
                return False
            db.execute(
                "INSERT INTO windows(owner, bytes) VALUES (?, ?) "
                "ON CONFLICT(owner) DO UPDATE SET bytes = bytes + excluded.bytes",
                (owner, size),
            )
        return True

    def window_give(self, owner: str, size: int) -> None:
        """Give back *size* bytes of *owner*'s window (files it removed)."""
        with self._open() as db, self.disk_full("giving back overflow room"), transaction(db):
            db.execute("UPDATE windows SET bytes = MAX(0, bytes - ?) WHERE owner = ?", (size, owner))

    def window_bytes(self) -> int:
        """Bytes all processes' overflow windows hold (or are fetching) now."""
        with self._open() as db:
            return db.execute("SELECT COALESCE(SUM(bytes), 0) FROM windows").fetchone()[0]

    def window_prune(self, alive: Callable[[str], bool]) -> None:
        """Drop the rows of windows whose owner is gone (its folder swept after a crash)."""
        with self._open() as db:
            owners = [o for (o,) in db.execute("SELECT owner FROM windows")]
        dead = [o for o in owners if not alive(o)]
        if dead:
            with self._open() as db, self.disk_full("pruning overflow rows"), transaction(db):
                db.executemany("DELETE FROM windows WHERE owner = ?", [(o,) for o in dead])

    def heal_totals(self, reset_stats: bool = False) -> None:
        """Recount ``total_bytes`` from the rows (heals drift); ``reset_stats`` zeroes the other counters."""
        with self._open() as db:
            with self.disk_full("clearing"), transaction(db):
                db.execute(
                    "UPDATE counters SET value = (SELECT COALESCE(SUM(size), 0) FROM entries) WHERE name = 'total_bytes'"
                )
                db.execute("UPDATE counters SET value = (SELECT COUNT(*) FROM entries) WHERE name = 'entries'")
                if reset_stats:
                    db.execute("UPDATE counters SET value = 0 WHERE name NOT IN ('total_bytes', 'entries')")
            checkpoint(db)

    def bound_wal(self, limit: int, checkpoint_now: bool) -> None:
        """Keep the WAL within *limit* bytes; ``checkpoint_now``: it is past that already."""
        with self._open() as db:
            tune_wal(db, limit)
            if checkpoint_now:
                checkpoint(db)

    def pin(self, want: Mapping[str, tuple[int, float] | None], now: float, checked: Iterable[str] = ()) -> list[str]:
        """Access time *now* for the entries of *want* that the index holds at the version given
        (``key -> (size, mtime)``, or None: any version), in one transaction; their keys.

        Why one transaction that reads and writes: eviction unlinks a file before its row's deletion
        commits, so a row found here has its file on disk, and once this commits it is spared for
        ``PIN_MARGIN x pin_seconds``. A row read before and pinned after could be evicted between the
        two and its path still handed out. The keys of *checked* were compared with their sources
        just now: those pinned record it (siblings may trust their version; a row of another
        version records nothing)."""
        keys = list(want)
        pinned: list[str] = []
        if not keys:
            return pinned
        with self._open() as db, self.disk_full("recording hits"), transaction(db):
            for i in range(0, len(keys), _CHUNK):
                part = keys[i : i + _CHUNK]
                found = db.execute(
                    f"SELECT rowid, key, size, mtime FROM entries WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                same = [r for r in found if (v := want[r[1]]) is None or same_version(r[2], r[3], *v)]
                if same:  # by rowid: a second lookup by key cost a third of the pin
                    db.execute(
                        "UPDATE entries SET last_access = MAX(last_access, ?) "
                        f"WHERE rowid IN ({','.join('?' * len(same))})",
                        (now, *(r[0] for r in same)),
                    )
                    pinned += [r[1] for r in same]
            took = set(pinned)  # a row of another version was not checked: a sibling must not trust it
            checked = [k for k in checked if k in took]
            for i in range(0, len(checked), _CHUNK):
                part = checked[i : i + _CHUNK]
                db.execute(
                    f"UPDATE entries SET checked = MAX(checked, ?) WHERE key IN ({','.join('?' * len(part))})",
                    (now, *part),
                )
        return pinned


class _Pending:
    """One row waiting for a group commit: ``(key, local, size, mtime, miss)``, and how it went."""

    __slots__ = ("row", "done", "error")

    def __init__(self, row: tuple[str, str, int, float, bool]) -> None:
        self.row, self.done, self.error = row, False, None


def _write_rows(db: sqlite3.Connection, rows: list[tuple[str, str, int, float, bool]]) -> None:
    """Fetched files' rows (``key, local, size, mtime, miss``), counters added up once."""
    now, grow, misses, fetched = time.time(), 0, 0, 0
    for key, local, size, mtime, miss in rows:
        old = db.execute("SELECT size FROM entries WHERE key=?", (key,)).fetchone()
        db.execute(
            "INSERT OR REPLACE INTO entries(key, local, size, mtime, last_access, checked) VALUES (?,?,?,?,?,?)",
            (key, local, size, mtime, now, now),
        )
        grow += size - (old[0] if old else 0)
        if miss:
            misses, fetched = misses + 1, fetched + size
    _add(db, {"total_bytes": grow, "misses": misses, "bytes_fetched": fetched})


def _add(db: sqlite3.Connection, deltas: dict[str, int]) -> None:
    db.executemany("UPDATE counters SET value = value + ? WHERE name = ?", [(v, k) for k, v in deltas.items() if v])
