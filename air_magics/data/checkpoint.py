"""``UCVolumeWriter`` / ``UCVolumeReader``: ``torch.distributed.checkpoint`` storage on volumes.

They extend torch's ``FileSystemWriter``/``FileSystemReader`` and keep torch's file layout, so a
checkpoint written here loads with plain torch from a mount and the other way round.

Commit protocol of one save (each rank, then the coordinator):

1. ``write_data``: torch writes this rank's data files to a local *staging* folder (fast local
   disk, ``thread_count`` files in parallel); then they are uploaded to the volume in parallel by
   the transfer engine (temp name + rename per file, transient errors retried). A rank returns
   only when its files are on the volume.
2. ``finish`` (coordinator, after every rank's ``write_data``): ``.metadata`` is written to staging
   and uploaded *last*. A checkpoint folder without ``.metadata`` is never loadable, so a crash
   at any earlier point leaves no checkpoint that looks complete.

Reads come through the :class:`~air_magics.cache.FileCache`: the data files the plan needs are
fetched in parallel (large files as parallel ranges), then torch reads local files.
Writing into a folder that already holds ``.metadata`` raises unless ``overwrite=True``; use
:class:`~air_magics.data.CheckpointManager` for new-folder-per-save, ``latest`` and retention.
"""
from __future__ import annotations

import os
import shutil
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.filesystem import FileSystem

from .. import config
from ..cache import FileCache
from ..errors import AirError
from ..transfer import CopyTask, copy_files, copy_one
from ..volumes.path import VolumePath
from ..volumes.store import Location, VolumeStore
from .commit import METADATA

__all__ = ["UCVolumeWriter", "UCVolumeReader", "CheckpointError", "METADATA"]

_STALE_STAGING = 24 * 3600


class CheckpointError(AirError, RuntimeError):
    """A checkpoint cannot be written or read (missing, incomplete, upload failed, ...)."""


def _staging_root() -> Path:
    return config.air_home() / "staging"


def _clean_stale_staging() -> None:
    """Remove staging folders of saves that died more than a day ago."""
    root = _staging_root()
    if not root.is_dir():
        return
    cutoff = time.time() - _STALE_STAGING
    for d in root.iterdir():
        try:
            if d.stat().st_mtime < cutoff:
                shutil.rmtree(d, ignore_errors=True)
        except FileNotFoundError:
            continue


class UCVolumeWriter(FileSystemWriter):
    """Save a DCP checkpoint to a volume folder: stage locally, upload in parallel, ``.metadata`` last.

    ``path`` is a ``/Volumes/...`` folder. Other keyword arguments go to ``FileSystemWriter``
    (defaults here: ``thread_count=8`` files per rank, ``sync_files=False`` for the transient
    staging copy). ``upload_workers`` bounds parallel uploads; ``on_event(kind, **info)`` is told
    about ``uploading`` and ``uploaded`` (used by the checkpoint manager for status).
    """

    def __init__(self, path: "str | VolumePath", *, upload_workers: int = 32, thread_count: int = 8,
                 sync_files: bool = False, overwrite: bool = False, store: VolumeStore | None = None,
                 on_event: Callable[..., None] | None = None, **kwargs: Any) -> None:
        self.store = store or VolumeStore()
        self.upload_workers = upload_workers
        self.on_event = on_event
        self.volume_path = VolumePath.parse(path)
        self.dest = self.store.locate(self.volume_path)
        self.bytes_uploaded = 0
        _clean_stale_staging()
        self.staging = _staging_root() / uuid.uuid4().hex
        super().__init__(self.staging, thread_count=thread_count, sync_files=sync_files, overwrite=overwrite, **kwargs)

    def reset(self, checkpoint_id: "str | os.PathLike[str] | None" = None) -> None:
        if checkpoint_id and str(checkpoint_id) != str(self.staging):
            self.volume_path = VolumePath.parse(str(checkpoint_id))
            self.dest = self.store.locate(self.volume_path)
            checkpoint_id = None
        super().reset(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: "str | os.PathLike[str]") -> bool:
        return str(checkpoint_id).startswith("/Volumes/")

    @property
    def checkpoint_id(self) -> str:
        return str(self.volume_path)

    def _remote_exists(self, rel: str) -> bool:
        loc = self.dest.join(rel)
        return os.path.exists(loc.path) if loc.is_local else loc.fs.exists(loc.path)

    def prepare_local_plan(self, plan: Any) -> Any:
        if not self.overwrite and self._remote_exists(METADATA):
            raise CheckpointError(
                f"{self.volume_path} already holds a checkpoint; save each step to a new folder (CheckpointManager does) "
                f"or pass overwrite=True")
        return super().prepare_local_plan(plan)

    def write_data(self, plan: Any, planner: Any) -> "Future[list[Any]]":
        fut = super().write_data(plan, planner)
        results = fut.wait()  # torch.futures.Future
        names = sorted({wr.storage_data.relative_path for wr in results})
        self._upload(names)
        return fut

    def _upload(self, names: list[str]) -> None:
        tasks = []
        for name in names:
            local = self.staging / name
            st = local.stat()
            tasks.append(CopyTask(Location(str(local)), self.dest.join(name), st.st_size, st.st_mtime))
        if self.on_event:
            self.on_event("uploading", files=len(tasks), bytes=sum(t.size for t in tasks))
        report = copy_files(tasks, workers=self.upload_workers, overwrite=True, dest=str(self.volume_path))
        if not report.ok:
            f = report.failed[0]
            raise CheckpointError(f"uploading {f.src} to {f.dst} failed after {f.attempts} attempts: {f.reason}")
        self.bytes_uploaded += report.bytes_copied
        for name in names:
            (self.staging / name).unlink(missing_ok=True)

    def finish(self, metadata: Any, results: list[list[Any]]) -> None:
        super().finish(metadata, results)  # .metadata written to staging (temp + rename)
        local = self.staging / METADATA
        st = local.stat()
        copy_one(CopyTask(Location(str(local)), self.dest.join(METADATA), st.st_size, st.st_mtime))
        self.bytes_uploaded += st.st_size
        if self.on_event:
            self.on_event("uploaded", bytes=self.bytes_uploaded)
        shutil.rmtree(self.staging, ignore_errors=True)


class _CachedVolumeFS(FileSystem):
    """Opens ``/Volumes/...`` files for reading through the cache."""

    def __init__(self, cache: FileCache) -> None:
        self.cache = cache

    def concat_path(self, path: "str | os.PathLike[str]", suffix: str) -> str:
        return f"{str(path).rstrip('/')}/{suffix}"

    def init_path(self, path: "str | os.PathLike[str]") -> str:
        return str(path)

    def create_stream(self, path: "str | os.PathLike[str]", mode: str) -> Any:
        if "r" not in mode or "+" in mode:
            raise CheckpointError(f"UCVolumeReader opens files read-only, not {mode!r}")
        return FileSystem.create_stream(self, self.cache.get(str(path)), mode)

    def exists(self, path: "str | os.PathLike[str]") -> bool:
        return self.cache.store.exists(str(path))


class UCVolumeReader(FileSystemReader):
    """Load a DCP checkpoint from a volume folder, fetching its files in parallel through the cache."""

    def __init__(self, path: "str | VolumePath", *, cache: FileCache | None = None, workers: int = 16,
                 store: VolumeStore | None = None, **kwargs: Any) -> None:
        self.volume_path = VolumePath.parse(path)
        store = store or (cache.store if cache is not None else VolumeStore())
        self.cache = cache or FileCache(store=store)
        self.workers = workers
        if not store.exists(self.volume_path.joinpath(METADATA)):
            what = "does not exist" if not store.exists(self.volume_path) else "has no .metadata (incomplete or not a checkpoint)"
            raise CheckpointError(f"checkpoint {self.volume_path} {what}; pick a complete one (CheckpointManager.latest())")
        super().__init__(str(self.volume_path), **kwargs)
        self.fs = _CachedVolumeFS(self.cache)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: "str | os.PathLike[str]") -> bool:
        return str(checkpoint_id).startswith("/Volumes/")

    def read_data(self, plan: Any, planner: Any) -> "Future[None]":
        names = sorted({self.storage_data[item.storage_index].relative_path for item in plan.items})
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(names)))) as pool:
            list(pool.map(lambda n: self.cache.get(self.fs.concat_path(self.path, n)), names))
        return super().read_data(plan, planner)
