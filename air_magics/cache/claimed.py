"""Entries the caller writes itself (cached shards, extracted member folders), and what ``clear()`` reports.

Why a module of its own: a packed folder's shard is fetched by the shards package (parallel range
reads, verified as they land), not by the cache's copy; it still has to count against the limit
and be evicted as one unit. :class:`ClaimedEntries` is the part of :class:`~.filecache.FileCache`
that lets it: ``claim`` room, ``commit`` or ``release`` it, ``renew`` its pin while it is read.
Such a key is named after its content (``<volume path>@<crc32>``), so it is never stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io.units import fmt_bytes
from ..volumes.resolved import VolumeFile
from ..volumes.store import Location
from .overflow import Residency
from .sources import DERIVED

__all__ = ["ClaimedEntries", "ClearReport", "ClearProgress", "DERIVED", "CLEAR_WAIT"]

CLEAR_WAIT = 2.0  # seconds clear() waits for a stripe busy with a fetch; its entries are kept after that


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


@dataclass(frozen=True)
class ClearProgress:
    """Where a ``clear(progress=...)`` stands: entries looked at (removed or kept) of the total,
    files and bytes removed so far of the bytes the index held. Reported after each batch of
    stripes, from ``0`` up to ``done == total`` (why: a cache of a million files takes a while)."""

    done: int
    total: int
    removed: int
    bytes: int
    bytes_total: int

    def __str__(self) -> str:
        return (
            f"{self.done:,} / {self.total:,} entries · removed {self.removed:,} files "
            f"({fmt_bytes(self.bytes)} / {fmt_bytes(self.bytes_total)})"
        )


ClearListener = Callable[[ClearProgress], None]


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
        return self._entries.renew(key, time.time(), bytes_hit=hit)

    def drop_derived(self, keep: Collection[str] = ()) -> list[str]:
        """Remove the entries made with :meth:`claim` (cached shards, extracted folders) but those
        in *keep*, in use or not (unsafe while a loop reads them); the keys removed."""
        keys = [k for k in self._entries.keys() if DERIVED.search(k) and k not in keep]
        self._evictor.drop(keys, None, wait=CLEAR_WAIT, evictions=False)
        return [k for k in keys if self._entries.row(k) is None]

    def overflow_folder(self) -> Path:
        """This process's overflow folder (removed at exit, or swept once the process is dead)."""
        return self._overflow.folder()
