"""``StatusDocuments``: events -> the JSON documents under ``$AIR_HOME/run/`` (sidebar, notebook views).

Documents and their names (fields as in :meth:`air_magics.events.Event.to_dict` of each kind):

* ``job-copy-<job>``: a named copy (unnamed copies write nothing), at most 4 times a second;
* ``job-export-<id>``: an export, at most every 0.3 s;
* ``job-pack-<hash of the destination>``: a pack run, at most 4 times a second (one document per
  destination: packing it again replaces the document);
* ``cache``: the shared cache statistics (the cache samples them at most twice a second);
* ``loader-<pid>``: a DataLoader's timing, at most twice a second, with ``history``: its running
  totals over time and the shared cache's hits and misses (:class:`air_magics.charts.LoaderHistory`,
  bounded), which the training chart draws;
* ``checkpoints-<hash of the folder>``: a ``CheckpointManager``'s recent saves, each with when it
  entered each state (``uploading_at``...: the time line of :mod:`air_magics.charts.saves`).

(``probe-<volume>``, a volume's last measured rates, is written by the probe itself, not from events.)

The last event of every job (done, failed, interrupted, committed, end of epoch) is always written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..charts.history import LoaderHistory
from ..events import CacheEvent, CheckpointEvent, CopyEvent, Event, ExportEvent, LoaderEvent, PackEvent, throttled
from ..io.locks import ProcessFileLock
from ..status import read_status, run_dir, write_status

__all__ = ["StatusDocuments", "pack_status_name"]

_LOCKS: dict[tuple[int, str], ProcessFileLock] = {}
_HISTORIES_KEPT = 8  # loaders whose history a process keeps


def _cache_doc_lock() -> ProcessFileLock:
    """One lock file per run folder, opened once per process (and again after a fork)."""
    import os

    d = run_dir()
    key = (os.getpid(), str(d))
    lock = _LOCKS.get(key)
    if lock is None:
        d.mkdir(parents=True, exist_ok=True)
        lock = _LOCKS.setdefault(key, ProcessFileLock(d / ".cache-doc.lock"))
    return lock


def pack_status_name(dest: str) -> str:
    """``job-pack-<hash>``: the status document of the pack runs into folder *dest*."""
    import hashlib

    return f"job-pack-{hashlib.sha256(dest.encode()).hexdigest()[:16]}"


class StatusDocuments:
    """Writes each source's events as its status document (see the module docstring)."""

    def __init__(
        self, *, copy_interval: float = 0.25, export_interval: float = 0.3, loader_interval: float = 0.5
    ) -> None:
        # by loader: its pid, file count and workers (a loop's train and validation loaders differ in those,
        # and alternate in one process and one document: each keeps its own history)
        self._histories: dict[tuple[int, int, int], LoaderHistory] = {}
        self._handlers: dict[type, Callable[[Any], None]] = {
            CopyEvent: throttled(self._copy, copy_interval),
            ExportEvent: throttled(self._export, export_interval),
            PackEvent: throttled(self._pack, copy_interval),
            LoaderEvent: throttled(self._loader, loader_interval),
            CacheEvent: self._cache,
            CheckpointEvent: self._checkpoint,
        }

    def __call__(self, event: Event) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    @staticmethod
    def _copy(e: CopyEvent) -> None:
        if e.job:
            write_status(f"job-copy-{e.job}", e.to_dict())

    @staticmethod
    def _export(e: ExportEvent) -> None:
        write_status(f"job-export-{e.job}", e.to_dict())

    @staticmethod
    def _pack(e: PackEvent) -> None:
        write_status(pack_status_name(e.job or e.dest), e.to_dict())

    def _loader(self, e: LoaderEvent) -> None:
        doc = e.to_dict()
        key = (e.pid, e.files, e.num_workers)
        history = self._histories.get(key)
        if history is None:
            if len(self._histories) >= _HISTORIES_KEPT:  # bounded: the oldest loader's history goes
                del self._histories[next(iter(self._histories))]
            history = self._histories[key] = LoaderHistory()
        history.add(doc, e.time, read_status("cache"))  # the cache's counters: one small file, twice a second
        write_status(f"loader-{e.pid}", dict(doc, history=history.document()))

    @staticmethod
    def _cache(e: CacheEvent) -> None:
        """Every process writes the one ``cache`` document: under a lock, a snapshot older than the
        one already written (taken earlier, written later by a slower process) is dropped."""
        with _cache_doc_lock():
            old = read_status("cache")
            seen = old.get("snapshot_time") if old else None
            if isinstance(seen, (int, float)) and seen > e.time:
                return
            write_status("cache", dict(e.to_dict(), snapshot_time=e.time))

    @staticmethod
    def _checkpoint(e: CheckpointEvent) -> None:
        if e.saves is None:  # a bare writer's upload, or a manager announcing itself: no document
            return
        from ..checkpoints.commit import (
            status_name,  # light (no torch); imported late to keep `import air_magics` small
        )

        write_status(status_name(e.directory), e.to_dict())

    def __repr__(self) -> str:
        return "StatusDocuments()"
