"""Files served past a full cache: a per-process window of the last few, each valid for a bounded count.

Why: a cache limit smaller than the data used to mean one of two bad things. With time-based pins
on a fast epoch everything handed out in the last 30 s was pinned, so nothing could be evicted and
the cache grew past its limit (400 files of 64 KiB through a 12.5 MiB limit left 25 MiB on disk).
Evicting instead is plain LRU over a cyclic scan, which thrashes: every file is evicted just before
it is read again, so epoch 2 hits nothing.

So when the cache is at its limit and every entry it could evict is in use (or is part of the
current scan's resident subset, see :class:`Residency`), a miss is not added to the cache: it is
fetched into this process's overflow folder ``<root>/overflow/<pid>-<token>/<catalog>/<schema>/
<volume>/...`` (the original file name kept) and deleted once ``size`` more files have been handed
out by this process. What the cache holds stays within its files' share of the limit (room is
claimed per fetch in the index); the windows take the rest of it, by bytes (below); and the
resident subset keeps hitting every epoch.

Lifetime of an overflow path: valid until the process hands out ``size`` more files (hits or
misses), or, when the window's bytes are needed, at least ``size // 8`` more (``keep``: more than a
stream hands out ahead of its reader, 64 hits per look-up plus its prefetch). Consumers of a loader open a file long before that (a DataLoader has at most
``num_workers x prefetch_factor`` items plus the dataset's ``prefetch`` in flight). Every hand-out
owns its place in the window: the same file overflowing twice is one copy with two references, and
it is deleted when the last of them leaves (a window file still valid for its size and mtime is
handed out again without a copy).

Bytes: all processes' windows together hold ``max_bytes`` (the cache's ``window``: 1/8 of its
limit by default, the rest being the files' share, so files and windows stay within the limit;
``None``: bounded by the disk alone), counted in one row per process of the index (``budget``), and
never take the disk below the cache's free-disk reserve. With the bound reached, this process's
files past ``keep`` go first; when every file left is still in flight (handed out within ``keep``),
the window goes past the bound rather than fail a loader (counted in ``overdrawn``). The bound is
exact while each process's share of it holds more than ``keep`` files plus those it has in flight;
a process only gives room back when it needs room or hands out more, so one that has stopped (its
epochs done) keeps its files until it exits, and a second process may then go past the bound by
what it has in flight. A file larger than the whole window, or one the disk has no
room for above the reserve, is refused with a :class:`~air_magics.errors.CacheLimitError` naming
it, its size, the limit and the settings to raise.

Liveness (which processes' folders are dead): :mod:`.liveness`.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import CacheLimitError
from ..io.forksafe import renew_after_fork
from ..io.units import fmt_bytes
from ..io.versions import same_version
from .liveness import own_folder, sweep_dead

__all__ = ["OverflowWindow", "Residency", "Budget", "DEFAULT_OVERFLOW_FILES"]

DEFAULT_OVERFLOW_FILES = 1024  # more than a default DataLoader keeps in flight (2 workers x 2 messages x 128)
_FULL = "the overflow windows hold their bound"  # (_room's answer when only the shared budget is short)


@dataclass(frozen=True)
class Residency:
    """A scan's resident subset: entries under ``prefix`` used since ``since`` (a wall-clock time).

    A dataset reading the same files every epoch passes this with its misses: they never evict
    those entries (they would be read again later this epoch, or next epoch), so a cache of half
    the data keeps hitting on a stable half instead of thrashing. Other entries are evicted least
    recently used first, as always.
    """

    prefix: str
    since: float = 0.0

    def bounds(self) -> tuple[str, str]:
        """The key range ``[lo, hi)`` of the prefix (a folder's keys, or the one file's)."""
        lo = self.prefix.rstrip("/")
        return lo, lo + "0"  # "0" follows "/" in ASCII: every "lo/..." key and "lo" itself are in range


class Budget(Protocol):
    """The shared byte counter of all processes' windows (the cache's index, :class:`.entries.Entries`)."""

    def window_take(self, owner: str, size: int, cap: int) -> bool: ...

    def window_give(self, owner: str, size: int) -> None: ...

    def window_prune(self, alive: Callable[[str], bool]) -> None: ...


class OverflowWindow:
    """This process's overflow files, oldest first; see the module docstring.

    *size*: hand-outs a file stays valid for while the window has room; *max_bytes*: bytes all
    processes' windows may hold together (``None``: no bound but the disk's reserve), counted in
    *budget*; *limit*: the cache's byte limit (named in errors only)."""

    def __init__(
        self,
        root: Path,
        size: int = DEFAULT_OVERFLOW_FILES,
        max_bytes: int | None = None,
        limit: int | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.base = root / "overflow"
        self.size = size
        self.keep = max(1, size // 8)  # hand-outs a file lives at least, however full the window is
        self.max_bytes = max_bytes
        self.limit = limit
        self.budget = budget
        self.overdrawn = 0  # files this process took past the windows' bound (all in flight)
        # reentrant: the first use of the index in a process may come from inside take() (a packed
        # member's overflow file), and opening the index makes sure this process's folder exists
        self._lock = threading.RLock()
        self._pid = 0
        self._dir: Path | None = None
        self._files: deque[tuple[int, str]] = deque()  # (hand-out count when handed out, local path)
        self._held: dict[str, list[int]] = {}  # local path -> [references in the window, bytes]
        self._bytes = 0  # bytes of the files in self._held
        self._pending = 0  # bytes being fetched into the window right now
        self._count = 0
        self.added = 0
        self.swept: list[str] = []  # dead processes' folders this process's first use removed
        renew_after_fork(self)

    def hold_ahead(self, n: int) -> None:
        """This process's consumer may be up to *n* hand-outs behind (a DataLoader worker's queued
        messages): every file lives at least that long, however full the window is, and the
        window's length grows to it if shorter. Bytes in flight beyond the window's bound are then
        taken past it (``overdrawn``) rather than a path deleted before it was opened."""
        self.keep = max(self.keep, n)
        self.size = max(self.size, self.keep)

    def after_fork(self) -> None:
        """A forked child: a fresh lock (another thread of the parent may hold its copy)."""
        self._lock = threading.RLock()

    @property
    def bytes(self) -> int:
        """Bytes the window holds now."""
        return self._bytes

    def handed_out(self, n: int = 1) -> None:
        """Count *n* files handed out by this process; delete overflow files now out of the window."""
        # no lock for the count: two threads counting at once may lose one, which only lets a
        # window file live one hand-out longer (the hot path of a warm epoch takes no lock here)
        self._count += n
        files = self._files
        if files and files[0][0] < self._count - self.size:
            with self._lock:
                limit = self._count - self.size
                while files and files[0][0] < limit:
                    self._release(files.popleft()[1])

    def fetch(
        self,
        rel: str,
        size: int,
        mtime: float,
        copy: Callable[[str], int],
        *,
        reserve: int = 0,
        headroom: int = 0,
    ) -> tuple[str, int, bool]:
        """Serve ``/Volumes/<rel>`` (*size* bytes, source *mtime*) from the window, fetching it with
        ``copy(dest) -> bytes`` unless the window holds it already; returns (local path, bytes
        fetched, reused). Raises :class:`CacheLimitError` when it does not fit (see the module): the
        disk must keep *reserve* bytes plus *headroom* (what the cache's index may still grow by)."""
        with self._lock:
            local = str(self._folder() / rel)
            held = self._held.get(local)
            if held is not None and _same(local, size, mtime):
                held[0] += 1
                self._files.append((self._count, local))
                return local, 0, True
        self.take(f"/Volumes/{rel}", size, reserve=reserve, headroom=headroom)
        with self._lock:
            self._pending += size
            held = self._held.get(local)
            if held is None:
                held = self._held[local] = [0, 0]
            held[0] += 1
        try:
            n = copy(local)
        except BaseException:
            with self._lock:
                self._pending -= size
                self._release(local)
            self.give(size)
            raise
        with self._lock:
            self._pending -= size
            self._bytes += size - held[1]
            self.give(held[1])  # a copy of an older version replaced: its bytes go back
            held[1] = size
            self._files.append((self._count, local))
            self.added += 1
        return local, n, False

    def take(self, name: str, size: int, *, reserve: int = 0, headroom: int = 0) -> None:
        """Room for *size* bytes of *name* in the window (the shared budget and the disk above the
        reserve plus *headroom*). When the windows hold their bound, this process's files handed out
        at least ``keep`` hand-outs ago go first, oldest first (early: the window's bytes are
        needed); when every file left is still in flight, the window goes past its bound rather
        than fail a loader (``overdrawn`` counts it). An item larger than the whole window, or one
        the disk has no room for above the reserve, is a :class:`CacheLimitError`."""
        cap = self.max_bytes
        if cap is not None and size > cap:
            raise self._refused(name, size, f"it is larger than the whole overflow window ({fmt_bytes(cap)})")
        with self._lock:
            self._folder()
            why = self._room(size, reserve, headroom)
            if why and self._release_early():
                why = self._room(size, reserve, headroom)
            if why is _FULL:  # all in flight: past the bound (the disk's reserve still holds)
                if self.budget is not None and self._dir is not None:
                    self.budget.window_take(self._dir.name, size, 1 << 62)
                self.overdrawn += 1
                return
        if why:
            raise self._refused(name, size, why)

    def give(self, size: int) -> None:
        """Give back *size* bytes taken with :meth:`take` (a file removed, or never written)."""
        if self.budget is not None and self.max_bytes is not None and size > 0 and self._dir is not None:
            self.budget.window_give(self._dir.name, size)

    def folder(self) -> Path:
        """This process's folder (made on first use; removed at exit, or swept once the process is dead)."""
        with self._lock:
            return self._folder()

    # -- inside the lock ----------------------------------------------------------------------
    def _folder(self) -> Path:
        """This process's folder, made (after sweeping dead ones) on first use in each process."""
        if self._dir is None or self._pid != os.getpid():
            if self._pid != os.getpid():  # a forked child: the parent's files are the parent's
                self._files.clear()
                self._held.clear()
                self._bytes = self._pending = 0
            self.base.mkdir(parents=True, exist_ok=True)
            self.swept = sweep_dead(self.base)
            self._dir = own_folder(self.base)
            self._pid = os.getpid()
        return self._dir

    def _room(self, size: int, reserve: int, headroom: int) -> str:
        """Take *size* bytes if the disk and the shared budget have them; else why not ("": taken)."""
        free = _free(self.base) - self._pending
        if free - size < reserve + headroom:
            return (
                f"the disk has {fmt_bytes(max(free, 0))} free and must keep the reserve of {fmt_bytes(reserve)} "
                f"(AIR_CACHE_RESERVE) plus {fmt_bytes(headroom)} for the index's log"
            )
        cap = self.max_bytes
        if cap is None or self._dir is None:
            return ""
        if self.budget is None:  # (no shared index: this process's window alone)
            if self._bytes + self._pending + size <= cap:
                return ""
        elif self.budget.window_take(self._dir.name, size, cap):
            return ""
        return _FULL

    def _release_early(self) -> bool:
        """Release this process's files handed out at least ``keep`` hand-outs ago (all of them:
        the window is full); True when any bytes went back."""
        files, before, horizon = self._files, self._bytes, self._count - self.keep
        while files and files[0][0] < horizon:
            self._release(files.popleft()[1])
        return self._bytes < before

    def _refused(self, name: str, size: int, why: str) -> CacheLimitError:
        limit = "no limit" if self.limit is None else f"a limit of {fmt_bytes(self.limit)}"
        return CacheLimitError(
            f"no room for {name} ({fmt_bytes(size)}): the cache at {self.base.parent} ({limit}) is full of "
            f"files in use and {why}; raise the limit (FileCache(limit=...), AIR_CACHE_LIMIT or %config "
            f"AirMagics.cache_limit) or overflow_bytes, lower pin_seconds or the loader's prefetch so fewer "
            f"files are held, or move AIR_CACHE_DIR to a larger disk"
        )

    def _release(self, local: str) -> None:
        held = self._held.get(local)
        if held is None:
            return
        held[0] -= 1
        if held[0] <= 0:
            del self._held[local]
            self._bytes -= held[1]
            _unlink(local)
            self.give(held[1])


def _same(local: str, size: int, mtime: float) -> bool:
    """Whether the window's copy at *local* is still the source's version (size, mtime)."""
    try:
        st = os.stat(local)
    except OSError:
        return False
    return same_version(st.st_size, st.st_mtime, size, mtime)


def _free(path: Path) -> int:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
