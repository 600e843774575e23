"""``UCVolumeWriter`` / ``UCVolumeReader``: ``torch.distributed.checkpoint`` storage on volumes.

They extend torch's ``FileSystemWriter``/``FileSystemReader`` and keep torch's file layout, so a
checkpoint written here loads with plain torch from a mount and the other way round.

Commit protocol of one save (each rank, then the coordinator):

1. ``write_data``: torch writes this rank's data files to a local *staging* folder (fast local
   disk, ``thread_count`` files in parallel); then they are uploaded to the volume in parallel by
   the transfer engine (temp name + rename per file, transient errors retried). A rank returns
   only when its files are on the volume.
   Each rank hashes its staged files (sha256) while they upload and hands the digests to the
   coordinator with its write results.
2. ``finish`` (coordinator, after every rank's ``write_data``): ``.metadata`` is written to staging,
   the manifest ``.checksums.json`` (size + sha256 of every data file and of ``.metadata``) is
   uploaded, then ``.metadata`` *last*. A checkpoint folder without ``.metadata`` is never
   loadable, so a crash at any earlier point leaves no checkpoint that looks complete.

Reads come through the :class:`~air_magics.cache.FileCache`: the data files the plan needs are
fetched in parallel (large files as parallel ranges), then torch reads local files. When the
folder records checksums (in the manager's ``_COMMITTED``, else in ``.checksums.json``) every file
read is hashed from its local copy first; a missing, truncated or changed file raises
:class:`~air_magics.errors.CheckpointCorruptError`, never a confusing "state does not match".
Folders without checksums (older saves, plain torch) load as before, with presence and size checks.
Writing into a folder that already holds ``.metadata`` raises unless ``overwrite=True``; use
:class:`~air_magics.data.CheckpointManager` for new-folder-per-save, ``latest`` and retention.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch
from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.filesystem import FileSystem

from .. import settings
from ..cache import FileCache
from ..errors import CheckpointCorruptError, CheckpointError
from ..events import CheckpointEvent, Listener, channel
from ..io.pools import threads
from ..transfer import CopyTask, copy_files, copy_one
from ..volumes.path import VolumePath
from ..volumes.resolved import VolumeFile
from ..volumes.store import VolumeStore
from .commit import CHECKSUMS, COMMITTED, METADATA, STEP_RE, checksums_json, file_digest, parse_checksums, read_text

__all__ = ["UCVolumeWriter", "UCVolumeReader", "CheckpointError", "CheckpointCorruptError", "METADATA"]

_STALE_STAGING = 24 * 3600


@dataclasses.dataclass(frozen=True)
class _Checked:
    """torch's storage info for one item (its own object, untouched) and its file's digest, on its
    way from a rank to the coordinator in ``WriteResult.storage_data``; :meth:`UCVolumeWriter.finish`
    takes torch's object back out, so ``.metadata`` holds only torch's own types and no private
    torch class is named here."""

    info: Any
    file_size: int
    sha256: str


def _staging_root() -> Path:
    return settings.air_home() / "staging"


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
    staging copy). ``upload_workers`` bounds parallel uploads. The upload is reported as
    :class:`~air_magics.events.CheckpointEvent`s (``uploading`` with ``files``/``bytes``,
    ``uploaded`` with ``bytes``) to ``listeners`` and :data:`air_magics.events.channel`.
    """

    def __init__(
        self,
        path: str | VolumePath,
        *,
        upload_workers: int = 32,
        thread_count: int = 8,
        sync_files: bool = False,
        overwrite: bool = False,
        store: VolumeStore | None = None,
        listeners: Sequence[Listener] = (),
        **kwargs: Any,
    ) -> None:
        """A writer for the volume folder *path* (its defaults differ from ``FileSystemWriter``'s).

        Args:
            path: the ``/Volumes/...`` folder the checkpoint is saved into.
            upload_workers: parallel uploads from the staging folder to the volume. Default 32.
            thread_count: ``FileSystemWriter`` files written per rank into the staging folder. Default 8.
            sync_files: fsync each staged file. Default False here: the staging copy is transient
                (``FileSystemWriter`` defaults to True).
            overwrite: allow saving into a volume folder that already holds ``.metadata``. Default False.
            store: the :class:`~air_magics.volumes.VolumeStore` that resolves *path* (default: a new one).
            listeners: :class:`~air_magics.events.CheckpointEvent` listeners.
            **kwargs: passed to ``FileSystemWriter`` (e.g. ``single_file_per_rank``).
        """
        self.store = store or VolumeStore.shared()
        self.upload_workers = upload_workers
        self.listeners = tuple(listeners)
        self.volume_path = VolumePath.parse(path)
        self.dest = self.store.locate(self.volume_path)
        self.bytes_uploaded = 0
        self.checksums: dict[str, dict[str, Any]] = {}  # coordinator, after finish: every file written
        _clean_stale_staging()
        self.staging = _staging_root() / uuid.uuid4().hex
        super().__init__(self.staging, thread_count=thread_count, sync_files=sync_files, overwrite=overwrite, **kwargs)

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        if checkpoint_id and str(checkpoint_id) != str(self.staging):
            self.volume_path = VolumePath.parse(str(checkpoint_id))
            self.dest = self.store.locate(self.volume_path)
            checkpoint_id = None
        super().reset(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
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
                f"or pass overwrite=True"
            )
        return super().prepare_local_plan(plan)

    def write_data(self, plan: Any, planner: Any) -> Future[list[Any]]:
        results = super().write_data(plan, planner).wait()  # torch.futures.Future
        names = sorted({wr.storage_data.relative_path for wr in results})
        digests = self._upload(names)

        def checked(wr: Any) -> Any:  # the digest rides to the coordinator with torch's own results
            d = digests[wr.storage_data.relative_path]
            return dataclasses.replace(wr, storage_data=_Checked(wr.storage_data, d["size"], d["sha256"]))

        fut: Any = torch.futures.Future()
        fut.set_result([checked(wr) for wr in results])
        return fut

    def _upload(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """Upload staged files in parallel; returns their digests, hashed from the staged copies
        meanwhile (the hashing overlaps the upload instead of re-reading the volume)."""
        tasks = []
        for name in names:
            tasks.append(CopyTask(VolumeFile.staged(str(self.staging / name)), self.dest.join(name)))
        self._emit("uploading", files=len(tasks), bytes=sum(t.size for t in tasks))
        with ThreadPoolExecutor(max_workers=max(1, min(len(names), threads("cpu")))) as hasher:
            hashing = hasher.map(lambda n: (n, file_digest(self.staging / n)), names)
            report = copy_files(  # job="": no job of its own, the sidebar shows it as the checkpoint's
                tasks, workers=self.upload_workers, overwrite=True, dest=str(self.volume_path), job=""
            )
            digests = dict(hashing)
        if not report.ok:
            f = report.failed[0]
            raise CheckpointError(f"uploading {f.src} to {f.dst} failed after {f.attempts} attempts: {f.reason}")
        self.bytes_uploaded += report.bytes_copied
        for name in names:
            (self.staging / name).unlink(missing_ok=True)
        return digests

    def finish(self, metadata: Any, results: list[list[Any]]) -> None:
        files: dict[str, dict[str, Any]] = {}
        complete = True  # every rank's results carry digests (all ranks wrote with this class)
        plain = []
        for wr_list in results:
            plain.append([])
            for wr in wr_list:
                sd = wr.storage_data
                if isinstance(sd, _Checked):
                    files[sd.info.relative_path] = {"size": sd.file_size, "sha256": sd.sha256}
                    wr = dataclasses.replace(wr, storage_data=sd.info)
                else:
                    complete = False
                plain[-1].append(wr)
        super().finish(metadata, plain)  # .metadata written to staging (temp + rename)
        last = [METADATA]
        if complete:
            files[METADATA] = file_digest(self.staging / METADATA)
            (self.staging / CHECKSUMS).write_text(checksums_json(files))
            files[CHECKSUMS] = file_digest(self.staging / CHECKSUMS)
            last.insert(0, CHECKSUMS)
        for name in last:  # the manifest, then .metadata last
            task = CopyTask(VolumeFile.staged(str(self.staging / name)), self.dest.join(name))
            copy_one(task)
            self.bytes_uploaded += task.size or 0
        self.checksums = files if complete else {}
        self._emit("uploaded", bytes=self.bytes_uploaded)
        shutil.rmtree(self.staging, ignore_errors=True)

    def _emit(self, state: str, **detail: Any) -> None:
        channel.emit(
            CheckpointEvent(state=state, directory=str(self.volume_path), detail=MappingProxyType(detail)),
            self.listeners,
        )


class _CachedVolumeFS(FileSystem):
    """Opens ``/Volumes/...`` files for reading through the cache."""

    def __init__(self, cache: FileCache) -> None:
        self.cache = cache
        self.fetched: dict[str, str] = {}  # volume path -> local copy the reader just fetched (and verified)

    def concat_path(self, path: str | os.PathLike[str], suffix: str) -> str:
        return f"{str(path).rstrip('/')}/{suffix}"

    def init_path(self, path: str | os.PathLike[str]) -> str:
        return str(path)

    def create_stream(self, path: str | os.PathLike[str], mode: str) -> Any:
        if "r" not in mode or "+" in mode:
            raise CheckpointError(f"UCVolumeReader opens files read-only, not {mode!r}")
        local = self.fetched.get(str(path)) or self.cache.get(str(path))
        return FileSystem.create_stream(self, local, mode)

    def exists(self, path: str | os.PathLike[str]) -> bool:
        return self.cache.store.exists(str(path))


class UCVolumeReader(FileSystemReader):
    """Load a DCP checkpoint from a volume folder, fetching its files in parallel through the cache.

    If the folder records checksums, each file is verified (hashed from its local copy) before
    torch reads it; ``remedy`` is appended to a :class:`CheckpointCorruptError`'s message.
    """

    def __init__(
        self,
        path: str | VolumePath,
        *,
        cache: FileCache | None = None,
        workers: int = 16,
        store: VolumeStore | None = None,
        remedy: str = "load another checkpoint or save this one again",
        **kwargs: Any,
    ) -> None:
        vp = VolumePath.parse(path)
        self.store = store or (cache.store if cache is not None else VolumeStore.shared())
        self.cache = cache or FileCache(store=self.store)
        self.workers = workers
        self.remedy = remedy
        super().__init__(str(vp), **kwargs)
        self.fs = _CachedVolumeFS(self.cache)
        self._locate(vp)

    def _locate(self, path: str | os.PathLike[str] | VolumePath) -> None:
        """Point at checkpoint folder *path*: check it is complete and read its recorded checksums."""
        self.volume_path = VolumePath.parse(str(path))
        self.path = str(self.volume_path)
        name = self.volume_path.name
        self.label = name if STEP_RE.match(name) else str(self.volume_path)  # step_N, as the manager names it
        store = self.store
        if not store.exists(self.volume_path.joinpath(METADATA)):
            what = (
                "does not exist"
                if not store.exists(self.volume_path)
                else "has no .metadata (incomplete or not a checkpoint)"
            )
            raise CheckpointError(
                f"checkpoint {self.volume_path} {what}; pick a complete one (CheckpointManager.latest())"
            )
        self.checksums = self._recorded_checksums()

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return str(checkpoint_id).startswith("/Volumes/")

    # -- integrity --------------------------------------------------------------------------------
    def _corrupt(self, name: str, problem: str) -> CheckpointCorruptError:
        return CheckpointCorruptError(self.label, name, problem, self.remedy)

    def _recorded_checksums(self) -> dict[str, dict[str, Any]] | None:
        """Checksums from ``_COMMITTED`` (the manager's), else ``.checksums.json``; ``None``: none recorded."""
        for name in (COMMITTED, CHECKSUMS):
            text = read_text(self.store.locate(self.volume_path.joinpath(name)))
            if text is None:
                continue
            try:
                files = parse_checksums(text)
            except ValueError as exc:
                raise self._corrupt(name, f"unreadable ({exc})") from None
            if files is not None:
                return files
        return None

    def _fetch(self, name: str) -> str:
        """Local copy of file *name*, verified against its recorded checksum. A bad copy is fetched
        once more before the checkpoint is called corrupt (the cache's copy may be the bad one)."""
        vp = self.volume_path.joinpath(name)
        want = None if self.checksums is None else self.checksums.get(name)
        if self.checksums is not None and want is None:
            raise self._corrupt(name, f"not listed in the checkpoint's checksums ({len(self.checksums)} files)")
        for attempt in (0, 1):
            try:
                local = self.cache.get(vp)
            except FileNotFoundError:
                raise self._corrupt(name, "missing") from None
            if want is None:
                self.fs.fetched[str(vp)] = local
                return local
            got = file_digest(local)
            if got == want:
                self.fs.fetched[str(vp)] = local
                return local
            if attempt == 0:
                Path(local).unlink(missing_ok=True)  # forces a fresh fetch from the volume
        size = (
            "" if got["size"] == want["size"] else f" (size {got['size']} bytes, {want['size']} recorded: truncated?)"
        )
        raise self._corrupt(name, f"checksum mismatch{size}")

    def _fetch_all(self, names: list[str]) -> dict[str, str]:
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(names)))) as pool:
            return dict(zip(names, pool.map(self._fetch, names), strict=True))

    def verify(self) -> list[str]:
        """Check every file of the checkpoint: against its checksum if recorded, else that each file
        ``.metadata`` refers to exists and is long enough. Returns the names checked."""
        if self.checksums is not None:
            return sorted(self._fetch_all(sorted(self.checksums)))
        need = self._extents((self.read_metadata().storage_data or {}).values())
        self._check_sizes(self._fetch_all(sorted(need)), need)
        return [METADATA, *sorted(need)]

    @staticmethod
    def _extents(infos: Any) -> dict[str, int]:
        """Bytes each file must hold at least, from the items' offsets and lengths in ``.metadata``."""
        need: dict[str, int] = {}
        for sd in infos:
            need[sd.relative_path] = max(need.get(sd.relative_path, 0), sd.offset + sd.length)
        return need

    def _check_sizes(self, local: dict[str, str], need: dict[str, int]) -> None:
        for name, end in need.items():
            size = os.path.getsize(local[name])
            if size < end:
                raise self._corrupt(name, f"truncated ({size} bytes, the checkpoint's items need {end})")

    # -- torch's StorageReader --------------------------------------------------------------------
    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        super().reset(checkpoint_id)
        self.fs.fetched.clear()
        if checkpoint_id and str(checkpoint_id) != str(self.volume_path):  # dcp.load(checkpoint_id=...): another folder
            self._locate(checkpoint_id)

    def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
        self._fetch(os.path.basename(str(self._get_metadata_path(kwargs.get("rank")))))
        return super().read_metadata(*args, **kwargs)

    def read_data(self, plan: Any, planner: Any) -> Future[None]:
        need = self._extents(self.storage_data[item.storage_index] for item in plan.items)
        self._check_sizes(self._fetch_all(sorted(need)), need)
        return super().read_data(plan, planner)
