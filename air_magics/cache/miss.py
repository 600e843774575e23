"""The miss path of :class:`~air_magics.cache.FileCache`: how one file not at hand gets into the cache.

Why a module of its own: the cache's public API (hits, validation, statistics, clearing) and the
fetch of one missing file are two concepts. A miss is validated against the index (a local
``stat`` first), then, under the key's stripe lock and the index's full-disk translation (in that
order), validated again (another process may have fetched it meanwhile: fetch once across
processes), room is claimed within the limit (or the file is served from the overflow window),
and the file is copied in by the copy engine and recorded. :class:`MissPath` holds the cache's
parts it works on, given explicitly; it is per-process state, made anew in every process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol

from ..errors import CacheLimitError, VolumeNotFoundError
from ..io.stageclock import STAGES
from ..io.units import fmt_bytes
from ..transfer import CopyTask, Landed, copy_one
from ..transfer.file import DirMaker, source_stat
from ..volumes.location import Location
from ..volumes.resolved import VolumeFile
from .entries import Entries
from .evict import Evictor
from .hits import PIN_MARGIN, HitLog
from .index import wal_headroom
from .overflow import OverflowWindow, Residency
from .rootguard import RootGuard
from .stripes import Stripes
from .validate import timed_stat
from .writebehind import WriteBehind

__all__ = ["MissPath", "Bounds", "PIN_WAIT"]

_log = logging.getLogger(__name__)
PIN_WAIT = 2.0  # a miss with no room waits for a pin that ends within this many seconds, not longer


class Bounds(Protocol):
    """What a miss reads of its cache at the moment it needs it: public attributes a caller may
    change after the cache was made (a :class:`~air_magics.cache.FileCache` is one)."""

    limit: int | None  # bytes everything the cache writes may take (None: only the reserve bounds it)
    files_limit: int | None  # of which the index may count (the limit less the overflow window)
    window: int | None  # of which all processes' overflow windows may hold
    reserve: int  # free disk always left
    retries: int  # per copy
    pin_seconds: float  # how long a handed-out path is promised to stay


class MissPath:
    """Fetches files not at hand into the cache at *root* (its files under *files_root*).

    *entries*, *stripes*, *evictor*, *hits*, *overflow* and *guard* (the root's identity) are the cache's parts; *bounds* its
    limit, reserve and retries (read when a miss needs them, so they follow the cache's
    attributes); *publish*: the cache's (throttled) status report after a change. The cache's
    folders are kept open in one :class:`DirMaker` per process.
    """

    def __init__(
        self,
        root: Path,
        files_root: str,
        *,
        entries: Entries,
        stripes: Stripes,
        evictor: Evictor,
        hits: HitLog,
        overflow: OverflowWindow,
        guard: RootGuard,
        bounds: Bounds,
        publish: Callable[[], None],
    ) -> None:
        self._root, self._files_root = root, files_root
        self._entries, self._stripes, self._evictor = entries, stripes, evictor
        self._hits, self._overflow, self._guard = hits, overflow, guard
        self._bounds, self._publish = bounds, publish
        self._dirs = DirMaker()  # the cache's folders, verified once per process (see copy_one)
        # the rows of this process's fetches; the writer publishes a snapshot once they land
        self._behind = WriteBehind(entries, str(root), after_batch=publish)
        self._row_error: BaseException | None = None  # a row the writer could not commit (raised by the next fetch)
        self._warned = False  # (a miss waited for pins to expire: said once per process)

    def fetch(self, f: VolumeFile, keep: Residency | None, landed: Landed | None = None) -> str:
        """*f*'s cached path for its current version, fetched on a miss; a source gone since it was
        listed is a :class:`~air_magics.errors.VolumeNotFoundError` naming it. *landed*: filled
        when a copy was made (its content too, when it asks: see :meth:`FileCache.read`)."""
        if self._row_error is not None:
            self._raise_row_error()
        try:
            key, local = f.key, f.slot
            if f.size is None or f.mtime is None:
                # with a byte limit, room is made for the file's size before it is fetched: stat first
                try:
                    if f.src.is_local and self._bounds.limit is None and self._unindexed_fetch(f, landed):
                        return local
                    f.size, f.mtime = timed_stat(f.src)
                except FileNotFoundError:
                    raise VolumeNotFoundError(
                        f"{key!r} does not exist; check the path with `%air_volume ls {key.rsplit('/', 1)[0]}`"
                    ) from None
            size, mtime = f.size, f.mtime
            if self.validated_hit(f):
                return local
            release = self._stripes.take(key)  # handed to the row's writer once the copy is in place
            try:
                with self._entries.disk_full(f"fetching {key}"):
                    if self.validated_hit(f):  # another process fetched it meanwhile
                        return local
                    self._guard.verify()  # nothing is written through a root swapped for a link
                    limit, files = self._bounds.limit, self._bounds.files_limit
                    if limit is not None and files is not None and size > max(files, self._bounds.window or 0):
                        raise CacheLimitError(
                            f"{key} is {fmt_bytes(size)} but the cache limit of {fmt_bytes(limit)} keeps at most "
                            f"{fmt_bytes(files)} for files (the rest is the overflow window); raise the limit "
                            f"(FileCache(limit=...), AIR_CACHE_LIMIT or %config AirMagics.cache_limit) so that it "
                            f"leaves more than {fmt_bytes(size)} for files"
                        )
                    if files is None:  # no limit: only the reserve bounds it (the window shares that disk)
                        if not self.claim(f, keep):
                            # past the reserve by this file at most; a full disk is a CacheDiskFullError
                            self._claim_when_unpinned(f)
                    elif size > files or not self.claim(f, keep):
                        try:
                            return self._overflow_fetch(f, landed)
                        except CacheLimitError:  # the window cannot take it either: only a pin's end can
                            if size > files or not self._claim_when_unpinned(f):
                                raise
                    try:
                        n = self._copy(CopyTask(f, Location(local, root=self._files_root), landed))
                    except BaseException:
                        self._entries.forget(key)  # the claimed bytes go back
                        raise
                # a row claimed within a byte limit is pinned as a fetch under way until its final
                # write: written behind, the next miss could not evict it, so it lands now
                behind, release = (release, None) if files is None else (None, release)
                self.recorded(key, local, n, mtime, behind)
            finally:
                if release is not None:
                    release()
            return local
        except FileNotFoundError as exc:
            raise self._vanished(f, exc) from None

    def _vanished(self, f: VolumeFile, exc: FileNotFoundError) -> FileNotFoundError:
        """The error for a fetch that found no file: named (:class:`VolumeNotFoundError`) when the
        source is gone, e.g. removed after a dataset listed it; the original when it is still there
        (then the cache's own side failed)."""
        if isinstance(exc, VolumeNotFoundError):
            return exc
        try:
            source_stat(f.src)
        except FileNotFoundError:
            return VolumeNotFoundError(
                f"{f.key!r} does not exist (removed from the volume after it was listed?); check the path with "
                f"`%air_volume ls {f.key.rsplit('/', 1)[0]}`, or pass on_error='skip' to a dataset to leave such "
                f"files out"
            )
        except Exception:  # the source cannot be asked: report what the fetch saw
            pass
        return exc

    def _copy(self, task: CopyTask) -> int:
        """One source file copied in (a storage request, timed for the loader's verdict)."""
        t0 = time.perf_counter()
        n = copy_one(task, retries=self._bounds.retries, dirs=self._dirs)  # (a cache folder removed since: made again)
        STAGES.request(time.perf_counter() - t0, n)
        return n

    def claim(self, f: VolumeFile, keep: Residency | None) -> bool:
        """Room for *f* within the limit, claimed in the index (two tries: another process may take
        the room between the eviction and the claim); False: serve it from the overflow window.
        The caller holds *f*'s stripe."""
        limit = self._bounds.files_limit
        if limit is None:  # only the free-disk reserve bounds it: no claim to race for
            return self._evictor.make_room(f.size or 0, keep)
        for _ in range(2):
            if self._evictor.make_room(f.size or 0, keep) and self._entries.reserve_room(
                f.key, f.slot, f.size or 0, limit
            ):
                return True
        return False

    def _claim_when_unpinned(self, f: VolumeFile) -> bool:
        """Room for *f* claimed once a pin ends: the cache is full of entries handed out in the last
        ``pin_seconds`` and the overflow window cannot take *f* (larger than the window, or the disk
        at its reserve). A pin that ends within ``PIN_WAIT`` s is waited for (issue 49: a 60 kB
        cache shared by two processes failed most reads of 10 kB files with ``pin_seconds=0.05``);
        a longer one is a refusal (False), as is a cache with nothing that a pin's end would free.
        The caller's resident subset is no reason to wait: it may be evicted here."""
        start = time.monotonic()
        deadline = start + 2 * PIN_WAIT  # (processes waiting beside this one take turns)
        delay = 0.002
        while True:
            if self.claim(f, None):
                return True
            now = time.time()
            soon = now - self._bounds.pin_seconds * PIN_MARGIN + PIN_WAIT
            if time.monotonic() >= deadline or not self._entries.lru(soon, ("", "", 0.0), limit=1):
                return False
            if not self._warned and time.monotonic() - start > 1.0:
                self._warned = True
                _log.warning(
                    "cache %s is full of files handed out in the last %g s (pin_seconds): %s waits for the "
                    "oldest pin to end (said once): raise the limit, give the cache more disk, or lower pin_seconds",
                    self._root,
                    self._bounds.pin_seconds,
                    f.key,
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def _unindexed_fetch(self, f: VolumeFile, landed: Landed | None) -> bool:
        """Fetch *f* without knowing its size when the index has no entry for it (the cold case of a
        names-only listing); False when there is an entry to validate instead. Size and mtime come
        from the copy (the opened source's ``fstat``), not from a ``stat`` of the result."""
        key, local = f.key, f.slot
        # looked at under the stripe only: a cold miss pays one stat, not one before and one after
        release = self._stripes.take(key)  # handed to the row's writer once the copy is in place
        try:
            with self._entries.disk_full(f"fetching {key}"):
                if os.path.exists(local) and self._entries.row(key) is not None:  # fetched (by another process)
                    return False
                self._guard.verify()
                if not self._evictor.make_room(0):  # the disk is at the reserve (no limit is set here) ...
                    return False  # ... and nothing could go: the full path, knowing the size, decides
                landed = landed or Landed()
                n = self._copy(CopyTask(f, Location(local, root=self._files_root), landed))
                mtime = landed.mtime if landed.mtime is not None else os.stat(local).st_mtime
                f.size, f.mtime = n, mtime  # (stamped on the copy: what a later validation compares)
            self.recorded(key, local, n, mtime, release)
            release = None
        finally:
            if release is not None:
                release()
        return True

    def _overflow_fetch(self, f: VolumeFile, landed: Landed | None) -> str:
        """Serve from the overflow window: no room within the limit without evicting what is in use."""
        root = str(self._overflow.base)

        def copy(dest: str) -> int:
            return self._copy(CopyTask(f, Location(dest, root=root), landed))

        return self.overflow(f.key, f.size or 0, f.mtime or 0.0, copy)

    def overflow(self, key: str, size: int, mtime: float, copy: Callable[[str], int]) -> str:
        """*key*'s local path in this process's overflow window (*size* bytes of version *mtime*),
        made by ``copy(dest) -> bytes`` unless the window still holds that version; counted as an
        overflow (or a hit, reused)."""
        headroom = wal_headroom(self._root, self._entries.wal_cap)  # the index's log shares the disk
        local, n, reused = self._overflow.fetch(
            key[9:], size, mtime, copy, reserve=self._bounds.reserve, headroom=headroom
        )
        if reused:  # still in the window, same version: no second copy (counted with the next flush)
            self._hits.count(hits=1, bytes_hit=size)
        else:
            self._hits.count(misses=1, bytes_fetched=n, overflows=1)
        return local

    def validated_hit(self, f: VolumeFile) -> bool:
        """Serve from the cache if valid. Entries this process validated recently are served from
        process-local state (:mod:`.hits`; LRU time and counters batched); others take one read
        and one write transaction on the shared index. The local file is looked at first: a cold
        miss costs one ``stat`` and never waits for the index's lock."""
        key, size, mtime = f.key, f.size, f.mtime
        try:
            here = os.stat(f.slot).st_size == size
        except OSError:
            here = False
        if not here:
            self._hits.forget(key)
            return False
        if self._hits.serve(key, size, mtime):  # type: ignore[arg-type]
            return True
        now = time.time()
        if not self._entries.touch_if_same(key, size, mtime, now):  # type: ignore[arg-type]
            return False
        self._hits.remember(key, size, mtime, now)  # type: ignore[arg-type]
        self._publish()
        return True

    def recorded(
        self, key: str, local: str, size: int, mtime: float, release: Callable[[], None] | None = None
    ) -> None:
        """*key*'s file is in place at *local*: served from this process's hits, its entry written.

        With *release* (the caller's hold on *key*'s stripe, handed over) the entry is written behind
        (:mod:`.writebehind`) and the stripe released once it has landed; without, before returning."""
        if release is None:
            self._entries.record(key, local, size, mtime)
            self._hits.remember(key, size, mtime, time.time())
            self._publish()
            return
        self._hits.remember(key, size, mtime, time.time())
        try:  # the writer publishes the cache's snapshot once the row is in (never this fetch thread)
            self._behind.put((key, local, size, mtime, True), partial(self._row_landed, key, local, release))
        except BaseException:  # not queued (no thread could start): the stripe is still ours
            self._hits.forget(key)
            release()
            raise

    def _row_landed(self, key: str, local: str, release: Callable[[], None], error: BaseException | None) -> None:
        """The writer committed *key*'s row (or failed to: then the file goes too, so nothing sits in
        the cache uncounted, and the next fetch raises the error)."""
        try:
            if error is not None:
                self._hits.forget(key)
                with contextlib.suppress(OSError):
                    os.unlink(local)
                self._row_error = error
        finally:
            release()

    def flush(self) -> None:
        """Wait until the rows of this process's fetches are in the index."""
        self._behind.flush()

    def forget_row_error(self) -> None:
        """Drop a row error not yet raised: ``clear()`` removed every file such a row was about, so
        the next fetch after it has nothing of the past to answer for (it raised a disk-full
        error from before the clear, made after the caller had already seen one)."""
        self._row_error = None

    def _raise_row_error(self) -> None:
        error, self._row_error = self._row_error, None
        if error is not None:
            raise error
