"""Eviction: which entries of a full :class:`~air_magics.cache.FileCache` go, and removing them safely.

Least recently used first, never an entry used in the last ``pin_seconds`` (a yielded path relies on
it), never one whose source is gone (it may be the only copy), never one of the caller's resident
subset (:class:`~air_magics.cache_overflow.Residency`). Rows and files are removed under the key's
stripe lock, and a file only if it is the cache's own.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..io.atomic import replace
from ..io.confined import is_within
from ..volumes.resolved import slot_of
from .entries import Entries
from .hits import PIN_MARGIN
from .index import wal_budget
from .overflow import Residency
from .stripes import Stripes

__all__ = ["Evictor", "unlink_owned", "AMPLE", "REMEASURE", "SMALL", "SHRINK_EVERY"]

_log = logging.getLogger(__name__)
_BATCH = 256  # stripes held at once while removing their entries
AMPLE = 2 << 30  # free disk above the reserve that lets a miss skip the check (other processes write too) ...
REMEASURE = 1.0  # ... for this many seconds after it was measured
SMALL = AMPLE >> 6  # files up to this size may skip it (64 fetch threads racing stay within AMPLE)
SHRINK_EVERY = 1.0  # seconds between two looks of shrink() at a cache over its limit


@dataclass
class Evictor:
    """Makes room in the cache at *root*: its rows (*entries*), locks (*stripes*), bounds and the
    question whether a key's source still exists (*source_exists*)."""

    root: Path
    entries: Entries
    stripes: Stripes
    limit: int | None
    reserve: int
    pin_seconds: float
    source_exists: Callable[[str], bool]
    wal_ready: Callable[[], bool]  # whether a checkpoint of an oversized WAL may be tried now (throttled)
    # lands this process's rows still written behind (:mod:`.writebehind`): without them the index
    # holds nothing to evict while a fast reader fills the disk (issue 49: 19 of 40 files, then ENOSPC)
    settle: Callable[[], None] | None = None
    # the free disk last measured, less what this process fetched since, and when it was measured
    _free: int = field(default=0, init=False, repr=False)
    _measured: float = field(default=-1e9, init=False, repr=False)
    _shrunk: float = field(default=-1e9, init=False, repr=False)  # when shrink() last looked

    def make_room(self, incoming: int, keep: Residency | None = None) -> bool:
        """Evict least recently used, unpinned entries whose source still exists and that are not in
        *keep* until *incoming* bytes fit within the limit, or with no limit above the reserve; False
        when they still do not (serve it as overflow, or wait for a pin to end).

        The index's WAL is bounded here too, and what it may still grow by is counted against the
        reserve (it shares the disk with the cached files). With no byte limit and the disk far from
        the reserve (``AMPLE`` more, measured within ``REMEASURE`` s), nothing is looked at: a cold
        miss skips the ``statvfs``, the WAL's ``stat`` and the index's lock."""
        if self.limit is None and incoming <= SMALL:  # (threads race on _free: each loses at most SMALL)
            free = self._free - incoming
            if free - self.reserve > AMPLE and time.monotonic() - self._measured < REMEASURE:
                self._free = free
                return True
        try:
            disk_free = shutil.disk_usage(self.root).free
        except FileNotFoundError:  # the cache folder was deleted under us: start it again
            self.root.mkdir(parents=True, exist_ok=True)
            disk_free = shutil.disk_usage(self.root).free
        self._free, self._measured = disk_free - incoming, time.monotonic()
        limit, headroom = wal_budget(self.root, disk_free, self.entries.wal_cap)  # shrinks with the space left
        self.entries.bound_wal(limit, headroom == 0 and self.wal_ready())
        free = disk_free - headroom
        over = self.entries.total_bytes() + incoming - self.limit if self.limit is not None else 0
        short = self.reserve - (free - incoming)  # bytes the disk lacks to keep the reserve
        need = max(over, short)
        if need <= 0:
            return True
        if self.settle is not None:
            self.settle()
        cutoff = time.time() - self.pin_seconds * PIN_MARGIN  # see .hits: hand-outs renew lazily
        lo, hi = keep.bounds() if keep is not None else ("", "")
        victims: list[str] = []
        for key, size in self.entries.lru(cutoff, (lo, hi, keep.since if keep is not None else 0.0)):
            if need <= 0:
                break
            try:
                if not self.source_exists(key):
                    continue  # the source is gone: this copy may be the only one left
            except Exception:  # an unreachable source is not proof of absence: keep it
                continue
            victims.append(key)
            need -= size
        # never wait here: the caller holds its own stripe, and a busy stripe is being fetched right now
        freed = self.drop(victims, cutoff, wait=0.0, evictions=True)[1] if victims else 0
        self._free += freed
        if self.limit is not None:  # the limit decides; the reserve only evicts (a limit bounds the disk)
            return self.entries.total_bytes() + incoming <= self.limit
        return short - freed <= 0

    def shrink(self, *, now: bool = False) -> None:
        """Evict down to the limit what no one holds, at most once every ``SHRINK_EVERY`` s (*now*:
        at once): a cache opened over its limit, or whose limit was lowered, would otherwise stay
        over it for as long as every read hits (issue 49: 4.05x the limit after two epochs)."""
        if self.limit is None:
            return
        t = time.monotonic()
        if not now and t - self._shrunk < SHRINK_EVERY:
            return
        self._shrunk = t
        if self.entries.total_bytes() > self.limit:
            self.make_room(0)

    def drop(
        self,
        keys: list[str],
        cutoff: float | None,
        *,
        wait: float,
        evictions: bool,
        progress: Callable[[int, int, int], None] | None = None,
    ) -> tuple[int, int, int]:
        """Remove the entries of *keys* and their files; ``(files removed, their bytes, entries kept)``.

        Each stripe's entries are removed under that stripe's lock, so a fetch of the same key can
        never land between deleting the row and unlinking the file. An entry used since *cutoff*
        (``None``: no pin) is kept, and so is every entry of a stripe not free within *wait* s.
        *progress* is called after each batch of stripes with (keys looked at, files removed, bytes)."""
        by_stripe: dict[int, list[str]] = {}
        for key in keys:
            by_stripe.setdefault(self.stripes.of(key), []).append(key)
        files, real_dirs = str(self.root / "files"), {"": os.path.realpath(self.root / "files")}
        cut = float("inf") if cutoff is None else cutoff
        removed = nbytes = kept = looked = 0
        order = sorted(by_stripe)
        for n in range(0, len(order), _BATCH):  # a batch of stripes held together: one transaction each
            batch = order[n : n + _BATCH]
            with self.stripes.all_held(batch, wait) as held:
                group = [k for i in batch if i in held for k in by_stripe[i]]
                kept += sum(len(by_stripe[i]) for i in batch if i not in held)
                owned: list[tuple[str, str, int]] = []  # unlinked before the rows' removal commits
                unlink = functools.partial(self._unlink, owned, files, real_dirs)
                gone = self.entries.remove(group, cut, evictions=evictions, before_commit=unlink) if group else []
            removed += len(owned)
            nbytes += sum(r[2] for r in owned)
            kept += len(group) - len(gone)
            looked += sum(len(by_stripe[i]) for i in batch)
            if progress is not None:
                progress(looked, removed, nbytes)
        return removed, nbytes, kept

    def _unlink(
        self, owned: list[tuple[str, str, int]], files: str, real_dirs: dict[str, str], rows: list[tuple[str, str, int]]
    ) -> None:
        owned.extend(r for r in rows if unlink_owned(self.root, r[0], r[1], files, real_dirs))


def unlink_owned(root: Path, key: str, local: str, files: str, real_dirs: dict[str, str]) -> bool:
    """Unlink *local* only if it is this cache's own file for *key* (``<root>/files`` + the key's
    path, no ``..``) in a folder whose real path is inside ``files`` (no link out of it). An index
    entry is data: it may be crafted or damaged. *real_dirs* caches real paths per folder."""
    own = key.startswith("/Volumes/") and local == slot_of(files, key) and os.path.normpath(local) == local
    if own:
        parent = os.path.dirname(local)
        if parent not in real_dirs:
            real_dirs[parent] = os.path.realpath(parent)
        own = is_within(real_dirs[parent], real_dirs[""])
    if not own:
        _log.warning(
            "cache %s: index entry %r names %r, which is not the cache's own file for it; "
            "dropped the entry, left the file",
            root,
            key,
            local,
        )
        return False
    try:
        os.unlink(local)
    except FileNotFoundError:
        pass  # removed behind the cache's back: nothing left to free
    except IsADirectoryError:  # a folder entry (an extracted shard): moved aside at once, then removed
        aside = f"{local}.evicted-{os.getpid()}-{time.monotonic_ns()}"
        try:
            replace(local, aside)
        except FileNotFoundError:
            return True
        shutil.rmtree(aside, ignore_errors=True)
    return True
