"""Entries the caller writes itself (cached shards, extracted member folders).

Why a module of its own: a packed folder's shard is fetched by the shards package (parallel range
reads, verified as they land), not by the cache's copy; it still has to count against the limit
and be evicted as one unit. :class:`ClaimedEntries` is the part of :class:`~.filecache.FileCache`
that lets it: ``claim`` room, ``commit`` or ``release`` it, ``renew`` its pin while it is read.
Such a key is named after its content (``<volume path>@<crc32>``), so it is never stale.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..volumes.location import Location
from ..volumes.resolved import VolumeFile
from .clearing import CLEAR_WAIT
from .overflow import Residency
from .sources import DERIVED

__all__ = ["ClaimedEntries", "DERIVED"]


class ClaimedEntries:
    """The claim API of :class:`~.filecache.FileCache` (a mixin: it works on the cache's own parts)."""

    _entries: Any
    _stripes: Any
    _evictor: Any
    _overflow: Any
    _guard: Any
    limit: int | None
    files_limit: int | None
    reserve: int
    store: Any

    def claim(self, key: str, size: int, keep: Residency | None = None) -> str | None:
        """Claim *size* bytes for *key*, a copy the caller writes (a shard: ``<volume path>@<crc32>``,
        never stale): its :meth:`slot` (file or folder), LRU entries evicted as for a miss; ``None``:
        no room (serve what is needed past the cache: :meth:`overflow_file`, :meth:`count_past`).
        Then :meth:`commit`, or :meth:`release`."""
        f = VolumeFile(key, Location(""), size, 0.0)
        f.slot = self.slot(key)
        with self._stripes.held(key), self._entries.disk_full(f"fetching {key}"):
            self._guard.verify()  # nothing is written through a root swapped for a link
            if (self.files_limit is None or size <= self.files_limit) and self._claim(f, keep):
                return f.slot
        return None

    def commit(self, key: str, size: int, mtime: float = 0.0) -> None:
        """The slot of *key*, claimed by :meth:`claim`, is complete: *size* bytes (counted as a miss)."""
        self._recorded(key, self.slot(key), size, mtime)

    def release(self, key: str) -> None:
        """Give back the bytes claimed for *key*: writing its slot failed (the caller removed it)."""
        self._entries.forget(key)

    def renew(self, key: str, *, hit: int = 0) -> bool:
        """Renew the pin of *key* (a :meth:`claim` entry in use; every few seconds); *hit*: bytes
        newly served from it, a hit. False: no entry for *key* (evicted: write it again)."""
        found = self._entries.renew(key, time.time(), bytes_hit=hit)
        self._evictor.shrink()  # (a packed epoch served from cached shards renews, and misses nothing)
        return found

    def drop_derived(self, keep: Collection[str] = ()) -> list[str]:
        """Remove the entries made with :meth:`claim` (cached shards, extracted folders) but those
        in *keep*, in use or not (unsafe while a loop reads them); the keys removed."""
        keys = [k for k in self._entries.keys() if DERIVED.search(k) and k not in keep]
        self._evictor.drop(keys, None, wait=CLEAR_WAIT, evictions=False)
        return [k for k in keys if self._entries.row(k) is None]

    def overflow_folder(self) -> Path:
        """This process's overflow folder (removed at exit, or swept once the process is dead)."""
        return self._overflow.folder()
