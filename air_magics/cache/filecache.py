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
  served from the overflow window (:mod:`air_magics.cache.overflow`), a bounded part of the same
  byte limit, and a scan's resident subset (a dataset read every epoch)
  keeps hitting instead of thrashing.
* **Many processes**: the index and the statistics live in one SQLite database (WAL); fetches
  write to a temp name and rename; a striped file lock makes concurrent requests for one path
  fetch it once. Connections and locks are created lazily per process, so a ``FileCache``
  pickles into DataLoader workers under fork, spawn and forkserver.
* **Never deletes what it does not own**: ``clear()`` keeps pinned entries too (``force=True``
  does not: unsafe while training), and a file is unlinked only under its key's stripe lock, only
  if it is the cache's own ``<root>/files/...`` path for that key, reached through no link.
* **The index** (:mod:`air_magics.cache.index`) recovers from a damaged file, bounds its WAL, and
  reports a full disk as :class:`~air_magics.errors.CacheDiskFullError`.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from .. import settings
from ..events import Throttle
from ..io.units import parse_size
from ..snapshots import CacheInfo  # the value cache events carry; it lives below the events
from ..volumes.location import Location
from ..volumes.path import VolumePath
from ..volumes.resolved import VolumeFile, slot_of
from ..volumes.store import VolumeStore
from .check import CheckReport, run_check
from .claims import Claims
from .clearing import ClearListener, ClearProgress, ClearReport, drop_all
from .entries import Entries
from .evict import Evictor
from .hits import PIN_MARGIN, HitLog
from .limits import check_overflow_files, log_cap, split_limit
from .miss import MissPath
from .overflow import DEFAULT_OVERFLOW_FILES, OverflowWindow, Residency
from .reads import Reads
from .reports import StatusReports
from .rootguard import RootGuard
from .sources import SourceCheck
from .stripes import Stripes
from .validate import Validation

__all__ = ["FileCache", "CacheInfo", "ClearReport", "ClearProgress", "CheckReport", "Residency"]


class FileCache:
    """Local copies of volume files. ``get(path)`` returns a local path valid for the current source.

    ``root`` defaults to ``$AIR_CACHE_DIR`` (``$AIR_HOME/cache``); ``limit`` to ``$AIR_CACHE_LIMIT``
    (``None``: only the reserve bounds it); ``reserve`` to ``$AIR_CACHE_RESERVE`` (1 GiB). Sizes
    accept ``"10GiB"``-style strings. ``overflow_files``: how many files a process may hold past a
    full cache, each valid until that many more files are handed out; ``overflow_bytes``: how many
    bytes all processes' windows may take together, a part of the limit (``None``: 1/8 of it; with
    no limit, the disk and the reserve bound them; see :mod:`.overflow`). One byte budget: the
    index counts at most :attr:`files_limit` (the limit less the window), so files and windows
    together stay within ``limit``.

    Faces: this class is the users' (:meth:`get` fetches on a miss, :meth:`try_hit` never does,
    :meth:`pin` renews a handed-out path's guarantee, :meth:`clear`, :meth:`check`, :meth:`info`,
    :attr:`limit`); :attr:`reads` is the input pipeline's (:class:`~.reads.Reads`: resolved files,
    no path parsed per item), :attr:`claims` the shards' (:class:`~.claims.Claims`: entries the
    caller writes itself). All three work on one set of parts, made anew in each process.
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
        # one spelling per folder (absolute, no ".."): the index stores paths under it, compared as text
        self.root = Path(os.path.abspath(root if root is not None else settings.cache_dir()))
        self.overflow_bytes = parse_size(overflow_bytes, "overflow_bytes")
        self.reserve = parse_size(reserve, "cache reserve") if reserve is not None else settings.cache_reserve()
        self._entries = Entries(self.root, self.reserve)
        self.limit = limit if limit is not None else settings.cache_limit()
        self.pin_seconds = pin_seconds
        self.overflow_files = check_overflow_files(overflow_files)
        self.retries = retries
        self.store = store or VolumeStore.shared()
        self._files_root = str(self.root / "files")
        self._stripes = Stripes(self.root)
        self._reset_process_state()

    @property
    def limit(self) -> int | None:
        """The byte limit (``None``: only the free-disk reserve bounds the cache)."""
        return self._limit

    @limit.setter
    def limit(self, value: int | str | None) -> None:
        """A new limit (bytes or ``"10GiB"``; ``None``: none) for this process's next misses,
        evictions and overflow decisions alike."""
        self._limit, self._window = split_limit(value, self.overflow_bytes)
        self._entries.wal_cap = log_cap(self._limit)
        if "_evictor" in self.__dict__:  # made after the first assignment (in __init__)
            self._evictor.limit = self.files_limit
            self._evictor.shrink(now=True)  # a lower limit evicts down to it at once, hits or not
            self._overflow.limit, self._overflow.max_bytes = self._limit, self._window

    @property
    def window(self) -> int | None:
        """Bytes all processes' overflow windows may hold together: ``overflow_bytes``, else 1/8 of
        the limit (``None``: no limit, only the disk's reserve bounds them)."""
        return self._window

    @property
    def window_bytes(self) -> int:
        """Bytes all processes' overflow windows hold now (the shared counter in the index)."""
        return self._entries.window_bytes()

    @property
    def overdrawn(self) -> int:
        """Files this process took past the windows' bound because every file its window held was
        still in flight (the soft edge of the bound, see :mod:`.overflow`); 0 while the bound held."""
        return self._overflow.overdrawn

    @property
    def files_limit(self) -> int | None:
        """Bytes the index may count (files, shards, extracted folders): the limit less the
        overflow window, so that everything the cache writes stays within the limit."""
        return None if self._limit is None else self._limit - (self._window or 0)

    # -- per-process state (never pickled) --------------------------------------------------------
    def _reset_process_state(self) -> None:
        self._reports = StatusReports(lambda flush: self.info(flush=flush), self.flush_hits)
        self._revalidated, self._revalidation_seconds = 0, 0.0  # this process's checks against the volume
        self._hits = HitLog(self.pin_seconds, flush=self.flush_hits)
        self._overflow = OverflowWindow(self.root, self.overflow_files, self.window, self.limit, self._entries)
        self._guard = RootGuard(self.root)
        self._entries.on_open = self._opened
        wal_check = Throttle(5.0)
        self._evictor = Evictor(
            self.root,
            self._entries,
            self._stripes,
            self.files_limit,
            self.reserve,
            self.pin_seconds,
            SourceCheck(self.store),  # (eviction spares a file whose source is gone)
            wal_check.ready,
        )
        self._miss = MissPath(
            self.root,
            self._files_root,
            entries=self._entries,
            stripes=self._stripes,
            evictor=self._evictor,
            hits=self._hits,
            overflow=self._overflow,
            guard=self._guard,
            bounds=self,
            publish=self._publish,
        )
        self._evictor.settle = self._miss.flush
        self.reads = Reads(
            self._files_root,
            hits=self._hits,
            overflow=self._overflow,
            miss=self._miss,
            entries=self._entries,
            on_validated=self._validated,
        )
        self.claims = Claims(
            slot=self.slot,
            bounds=self,
            entries=self._entries,
            stripes=self._stripes,
            evictor=self._evictor,
            overflow=self._overflow,
            guard=self._guard,
            hits=self._hits,
            miss=self._miss,
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in (
            "_reports",
            "_hits",
            "_overflow",
            "_evictor",
            "_miss",
            "_guard",
            "claims",
            "reads",
        ):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_process_state()

    def _opened(self) -> None:
        """This process opened the index: the root's identity is remembered (a later swap is named),
        and this process's presence lock is taken, sweeping dead processes' overflow folders; when it
        swept one (a crash: a process that exits cleanly removes its own), :meth:`check` repairs the
        rest of what a crash leaves (temp files, fetches never finished, half-extracted folders)."""
        self._guard.verify()
        self._overflow.folder()
        self._prune_windows()  # a process that left kept its row (its folder is gone): its bytes go back
        if self._overflow.swept:  # a process died without cleaning up: repair what it may have left
            self.check(repair=True)

    def _prune_windows(self) -> None:
        """Give back the overflow bytes of processes whose folder is gone (swept after a crash)."""
        base = self._overflow.base
        self._entries.window_prune(lambda owner: (base / owner).is_dir())

    def __repr__(self) -> str:
        return f"FileCache(root={str(self.root)!r}, limit={self.limit}, reserve={self.reserve})"

    # -- resolved files (the datasets' hot path) ----------------------------------------------------
    def slot(self, key: str) -> str:
        """The local path the cache keeps the volume path *key* (``/Volumes/...``, normalised) at."""
        return slot_of(self._files_root, key)

    def _validated(self, v: Validation) -> None:
        """A validation ended: what it asked the volume counts in :meth:`info` (the cache view's line)."""
        if v.requests:
            self._revalidated += v.revalidated
            self._revalidation_seconds += v.seconds
            self._publish(force=True)

    # -- paths (the public string forms) ------------------------------------------------------------
    def local_path(self, path: str | VolumePath) -> Path:
        vp = VolumePath.parse(path)
        return self.root.joinpath("files", vp.catalog, vp.schema, vp.volume, *vp.parts)

    def _resolve(
        self, path: str | VolumePath, size: int | None, mtime: float | None, src: Location | None
    ) -> VolumeFile:
        vp = VolumePath.parse(path)
        key = str(vp)
        known = size is not None and size >= 0 and mtime is not None
        f = VolumeFile(key, src or self.store.locate(vp), size if known else None, mtime if known else None)
        f.slot = self.slot(key)
        return f

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
        the process's overflow window instead of growing the cache (see :mod:`.overflow`).
        """
        return self.reads.fetch(self._resolve(path, size, mtime, src), keep)

    def try_hit(self, path: str | VolumePath, size: int, mtime: float) -> str | None:
        """The local path if *path* is cached and valid for this size/mtime, else ``None`` (no fetch)."""
        f = self._resolve(path, size, mtime, Location(""))
        if not self._miss.validated_hit(f):  # the local file is looked at: this form serves no missing path
            return None
        self._overflow.handed_out()
        return f.slot

    def pin(self, path: str | VolumePath) -> bool:
        """Renew the guarantee of a path handed out earlier: it stays for another ``pin_seconds``.
        False when the cache does not hold *path*."""
        key = str(VolumePath.parse(path))
        return bool(self._entries.pin({key: None}, time.time()))

    def flush_hits(self) -> None:
        """Write this process's batched hits (access times, counters) to the shared index. Called a
        few times a second while hits are served, and before the totals are read or entries cleared.
        The rows of this process's fetches, written behind them, land first."""
        self._miss.flush()
        access, counts = self._hits.take()
        if access or counts:
            self._entries.touch(access, counts)
            self._publish()
        self._evictor.shrink()  # a cache over a limit lowered since (or opened over it) comes down

    # -- inspection -------------------------------------------------------------------------------
    @property
    def total_bytes(self) -> int:
        """Bytes the cache's index counts now (every process's entries; the overflow windows aside)."""
        return self._entries.total_bytes()

    def info(self, *, flush: bool = True) -> CacheInfo:
        """The cache's totals and counters. ``flush=False``: as the index has them now, without
        waiting for this process's batched hits and queued rows (a live snapshot, taken on the row
        writer's thread once its rows are in, must not wait on writers)."""
        if flush:
            self.flush_hits()  # this process's batched hits count too
        counters, entries = self._entries.counters(), self._entries.count()
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
            self._revalidated,
            self._revalidation_seconds,
        )

    def check(self, repair: bool = False) -> CheckReport:
        """Compare the index with the files: rows without files, files without rows, size or mtime
        mismatches, temp files of dead writers, fetches never finished, dead processes' overflow
        folders and locks, extracted folders or markers without their entry (see :mod:`.check`).
        ``repair=True`` removes each (never what a live process holds) and recounts the total.
        Runs by itself, repairing, when a process opens the cache after another crashed."""
        self.flush_hits()
        report = run_check(self.root, self._entries, self._stripes, repair=repair, verify_root=self._guard.verify)
        if repair:
            self._entries.heal_totals()
            self._prune_windows()
        return report

    def clear(
        self, *, reset_stats: bool = False, force: bool = False, progress: ClearListener | None = None
    ) -> ClearReport:
        """Drop cached files (never the sources), keeping those used in the last ``pin_seconds``.

        A training loop may hold a path handed out moments ago: those entries are kept and counted
        in the report. ``force=True`` drops them too, which is unsafe while anything reads from the
        cache. ``reset_stats`` zeroes the hit/miss counters. ``progress`` (why: a large cache takes
        a while) is called with a :class:`ClearProgress` before the first batch and after each, on
        this thread, ``done`` rising to ``total``."""
        self.flush_hits()  # the pins of what this process handed out must be in the index
        self._guard.verify()
        cutoff = None if force else time.time() - self.pin_seconds * PIN_MARGIN
        removed, nbytes, kept = drop_all(self._entries, self._evictor, cutoff, progress)
        self._miss.forget_row_error()  # (its file was taken back when the row failed, before the flush above)
        self._entries.heal_totals(reset_stats)  # heal any drift while we are at it
        self.publish_status()
        return ClearReport(removed, nbytes, kept, 0.0 if force else self.pin_seconds)

    def publish_status(self, *, soon: bool = False) -> None:
        """Report the statistics now (a ``CacheEvent`` with ``state="done"``): the default listeners
        write the ``cache`` status document that the widgets and the sidebar read. This process's
        batched hits are written to the shared index first, listened to or not.

        ``soon``: the end of a stream. Within a second of the last report the report is made a
        second later on this process's flusher thread instead (once, however many streams end
        meanwhile): a loop of short epochs does not pay a statistics query and a status document
        per epoch (see :mod:`.reports`)."""
        self._reports.final(soon=soon)

    def _publish(self, force: bool = False) -> None:
        self._reports.progress(force)
