"""A cache's face for entries the caller writes itself (cached shards, extracted member folders).

Why a face of its own: a packed folder's shard is fetched by the shards package (parallel range
reads, verified as they land), not by the cache's copy; it still has to count against the limit
and be evicted as one unit. :class:`Claims` (``FileCache.claims``) lets it: ``claim`` room,
``commit`` or ``release`` it, ``renew`` its pin while it is read, and serve what finds no room past
the cache (``overflow_file``, ``count_past``). Such a key is named after its content
(``<volume path>@<crc32>``), so it is never stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from pathlib import Path

from ..volumes.location import Location
from ..volumes.resolved import VolumeFile
from .clearing import CLEAR_WAIT
from .entries import Entries
from .evict import Evictor
from .hits import HitLog
from .miss import Bounds, MissPath
from .overflow import OverflowWindow, Residency
from .rootguard import RootGuard
from .sources import DERIVED
from .stripes import Stripes

__all__ = ["Claims", "DERIVED"]


class Claims:
    """Room in a cache for copies the caller writes, over the cache's own parts (one per process)."""

    def __init__(
        self,
        *,
        slot: Callable[[str], str],
        bounds: Bounds,
        entries: Entries,
        stripes: Stripes,
        evictor: Evictor,
        overflow: OverflowWindow,
        guard: RootGuard,
        hits: HitLog,
        miss: MissPath,
    ) -> None:
        self.slot = slot
        self._bounds, self._entries, self._stripes, self._evictor = bounds, entries, stripes, evictor
        self._overflow, self._guard, self._hits, self._miss = overflow, guard, hits, miss

    def claim(self, key: str, size: int, keep: Residency | None = None) -> str | None:
        """Claim *size* bytes for *key*, a copy the caller writes (a shard: ``<volume path>@<crc32>``,
        never stale): its slot (file or folder), LRU entries evicted as for a miss; ``None``: no
        room (serve what is needed past the cache: :meth:`overflow_file`, :meth:`count_past`).
        Then :meth:`commit`, or :meth:`release`."""
        f = VolumeFile(key, Location(""), size, 0.0)
        f.slot = self.slot(key)
        files_limit = self._bounds.files_limit
        with self._stripes.held(key), self._entries.disk_full(f"fetching {key}"):
            self._guard.verify()  # nothing is written through a root swapped for a link
            if (files_limit is None or size <= files_limit) and self._miss.claim(f, keep):
                return f.slot
        return None

    def commit(self, key: str, size: int, mtime: float = 0.0) -> None:
        """The slot of *key*, claimed by :meth:`claim`, is complete: *size* bytes (counted as a miss)."""
        self._miss.recorded(key, self.slot(key), size, mtime)

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

    def overflow_file(self, key: str, size: int, mtime: float, write: Callable[[str], int]) -> str:
        """A local path for *key* (*size* bytes, version *mtime*) past the cache, in this process's
        overflow window: counted in the windows' bytes and valid as long as an overflow file is (see
        :mod:`.overflow`); made by ``write(dest) -> bytes written`` unless the window holds that
        version already. For what the caller reads itself (a packed member whose shard found no
        room: :mod:`air_magics.shards.direct`)."""
        local = self._miss.overflow(key, size, mtime, write)
        self._overflow.handed_out()
        return local

    def count_past(self, nbytes: int) -> None:
        """Count *nbytes* read past the cache for a caller that reads them itself (a packed member
        served from the volume when its shard found no room): an overflow, as a miss."""
        self._hits.count(misses=1, bytes_fetched=nbytes, overflows=1)
