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
out by this process. What the cache holds stays within its limit (plus, at most, one file per
thread that was fetching at the same moment: room is checked per fetch, not reserved); the overflow
window adds at most ``size`` files per process; and the resident subset keeps hitting every epoch.

Lifetime of an overflow path: valid until the process hands out ``size`` more files (hits or
misses). Consumers of a loader open a file long before that (a DataLoader has at most
``num_workers x prefetch_factor`` items plus the dataset's ``prefetch`` in flight). A folder left by
a process that died is removed by the next process that overflows.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .io.process import pid_alive

__all__ = ["OverflowWindow", "Residency", "DEFAULT_OVERFLOW_FILES"]

DEFAULT_OVERFLOW_FILES = 256


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


class OverflowWindow:
    """This process's overflow files, oldest first; see the module docstring."""

    def __init__(self, root: Path, size: int = DEFAULT_OVERFLOW_FILES) -> None:
        self.base = root / "overflow"
        self.size = size
        self._lock = threading.Lock()
        self._dir: Path | None = None
        self._files: deque[tuple[int, str]] = deque()  # (hand-out count when added, local path)
        self._count = 0
        self.added = 0

    def path_for(self, rel: str) -> Path:
        """Where an overflow copy of the volume path ``/Volumes/<rel>`` goes in this process's folder."""
        with self._lock:
            if self._dir is None:
                self._sweep_dead()
                self._dir = self.base / f"{os.getpid()}-{secrets.token_hex(4)}"
                self._dir.mkdir(parents=True, exist_ok=True)
                atexit.register(shutil.rmtree, self._dir, True)
            return self._dir / rel

    def add(self, local: str) -> None:
        """*local* (from :meth:`path_for`) was just fetched and is being handed out."""
        with self._lock:
            self._files.append((self._count, local))
            self.added += 1

    def handed_out(self) -> None:
        """Count one file handed out by this process; delete overflow files now out of the window."""
        with self._lock:
            self._count += 1
            files, limit = self._files, self._count - self.size
            while files and files[0][0] < limit:
                _unlink(files.popleft()[1])

    def fetch(self, rel: str, copy: Callable[[str], int]) -> tuple[str, int]:
        """Fetch into the window with ``copy(dest) -> bytes``; returns (local path, bytes)."""
        local = str(self.path_for(rel))
        n = copy(local)
        self.add(local)
        return local, n

    def _sweep_dead(self) -> None:
        """Remove the overflow folders of processes that no longer exist (killed workers)."""
        try:
            names = os.listdir(self.base)
        except FileNotFoundError:
            return
        for name in names:
            pid, _, _token = name.partition("-")
            if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
                shutil.rmtree(self.base / name, ignore_errors=True)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
