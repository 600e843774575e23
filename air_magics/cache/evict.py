"""Eviction: which entries of a full :class:`~air_magics.cache.FileCache` go, and removing them safely.

Least recently used first, never an entry used in the last ``pin_seconds`` (a yielded path relies on
it), never one whose source is gone (it may be the only copy), never one of the caller's resident
subset (:class:`~air_magics.cache_overflow.Residency`). Rows and files are removed under the key's
stripe lock, and a file only if it is the cache's own.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import zlib
from typing import TYPE_CHECKING

from .cache_index import checkpoint, transaction, tune_wal, wal_budget
from .cache_overflow import Residency
from .io.confined import is_within

if TYPE_CHECKING:
    from .cache import FileCache

__all__ = ["make_room", "drop", "total_bytes", "stripe_of"]

STRIPES = 256  # a key's stripe lock: fetches of one path and its removal never interleave

_log = logging.getLogger(__name__)


def make_room(cache: FileCache, incoming: int, keep: Residency | None = None) -> bool:
    """Evict least recently used, unpinned entries whose source still exists and that are not in
    *keep*; False when the limit still leaves no room for *incoming* bytes (serve it as overflow).

    The index's WAL is bounded here too, and what it may still grow by is counted against the
    reserve (it shares the disk with the cached files)."""
    db, lock = cache._conn()
    disk_free = shutil.disk_usage(cache.root).free
    limit, headroom = wal_budget(cache.root, disk_free)  # shrinks with the space left: a small disk checkpoints often
    with lock:
        tune_wal(db, limit)
        if headroom == 0 and cache._wal_check.ready():  # past it: readers held it back, or the disk filled
            checkpoint(db)
    free = disk_free - headroom
    over = total_bytes(cache) + incoming - cache.limit if cache.limit is not None else 0
    need = max(over, cache.reserve - (free - incoming))
    if need <= 0:
        return True
    cutoff = time.time() - cache.pin_seconds
    lo, hi = keep.bounds() if keep is not None else ("", "")
    with lock:
        rows = db.execute(
            "SELECT key, local, size FROM entries WHERE last_access < ? "
            "AND NOT (key >= ? AND key < ? AND last_access >= ?) ORDER BY last_access LIMIT 1024",
            (cutoff, lo, hi, keep.since if keep is not None else 0.0),
        ).fetchall()
    victims: list[str] = []
    for key, _local, size in rows:
        if need <= 0:
            break
        try:
            if not cache.store.exists(key):
                continue  # the source is gone: this copy may be the only one left
        except Exception:  # an unreachable source is not proof of absence: keep it
            continue
        victims.append(key)
        need -= size
    # never wait here: the caller holds its own stripe, and a busy stripe is being fetched right now
    if victims:
        drop(cache, victims, cutoff, wait=0.0, evictions=True)
    return cache.limit is None or total_bytes(cache) + incoming <= cache.limit


def total_bytes(cache: FileCache) -> int:
    db, lock = cache._conn()
    with lock:
        return db.execute("SELECT value FROM counters WHERE name='total_bytes'").fetchone()[0]


def drop(
    cache: FileCache, keys: list[str], cutoff: float | None, *, wait: float, evictions: bool
) -> tuple[int, int, int]:
    """Remove the entries of *keys* and their files; ``(files removed, their bytes, entries kept)``.

    Each stripe's entries are removed under that stripe's lock, so a fetch of the same key can
    never land between deleting the row and unlinking the file. An entry used since *cutoff*
    (``None``: no pin) is kept, and so is every entry of a stripe not free within *wait* s."""
    by_stripe: dict[int, list[str]] = {}
    for key in keys:
        by_stripe.setdefault(stripe_of(key), []).append(key)
    db, lock = cache._conn()
    files, real_dirs = str(cache.root / "files"), {"": os.path.realpath(cache.root / "files")}
    cut = float("inf") if cutoff is None else cutoff
    removed = nbytes = kept = 0
    for i, group in by_stripe.items():
        locks = cache._try_stripe(i, wait)
        if locks is None:
            kept += len(group)
            continue
        try:
            gone: list[tuple[str, str, int]] = []
            with lock, cache._disk_full("removing cached files"), transaction(db):
                for n in range(0, len(group), 500):  # SQLite allows 999+ parameters per statement
                    chunk = group[n : n + 500]
                    # "+last_access": look rows up by key, not by scanning the LRU index
                    where = f"+last_access < ? AND key IN ({','.join('?' * len(chunk))})"
                    gone += db.execute(f"SELECT key, local, size FROM entries WHERE {where}", (cut, *chunk)).fetchall()
                    db.execute(f"DELETE FROM entries WHERE {where}", (cut, *chunk))
                cache._add(db, evictions=len(gone) if evictions else 0, total_bytes=-sum(r[2] for r in gone))
            owned = [r for r in gone if unlink_owned(cache, r[0], r[1], files, real_dirs)]
        finally:
            locks[1].release()
            locks[0].release()
        removed += len(owned)
        nbytes += sum(r[2] for r in owned)
        kept += len(group) - len(gone)
    return removed, nbytes, kept


def unlink_owned(cache: FileCache, key: str, local: str, files: str, real_dirs: dict[str, str]) -> bool:
    """Unlink *local* only if it is this cache's own file for *key* (``<root>/files`` + the key's
    path, no ``..``) in a folder whose real path is inside ``files`` (no link out of it). An index
    entry is data: it may be crafted or damaged. *real_dirs* caches real paths per folder."""
    own = key.startswith("/Volumes/") and local == files + key[len("/Volumes") :] and os.path.normpath(local) == local
    if own:
        parent = os.path.dirname(local)
        if parent not in real_dirs:
            real_dirs[parent] = os.path.realpath(parent)
        own = is_within(real_dirs[parent], real_dirs[""])
    if not own:
        _log.warning(
            "cache %s: index entry %r names %r, which is not the cache's own file for it; "
            "dropped the entry, left the file",
            cache.root,
            key,
            local,
        )
        return False
    try:
        os.unlink(local)
    except FileNotFoundError:
        pass  # removed behind the cache's back: nothing left to free
    return True


def stripe_of(key: str) -> int:
    """The stripe (lock) of *key*; eviction groups its removals by it."""
    return zlib.crc32(key.encode()) % STRIPES
