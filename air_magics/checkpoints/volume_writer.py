"""``UCVolumeWriter`` / ``UCVolumeReader``: ``torch.distributed.checkpoint`` storage on volumes.

They extend torch's ``FileSystemWriter``/``FileSystemReader`` and keep torch's file layout, so a
checkpoint written here loads with plain torch from a mount and the other way round.

Commit protocol of one save (each rank, then the coordinator):

1. ``write_data``: on a mounted or local volume, torch's ``thread_count`` writer threads write this
   rank's data files straight onto the volume through
   :class:`~air_magics.checkpoints.direct_write.DirectVolumeFS` (each file under a hidden temp name,
   renamed when complete; its checksum computed from the bytes as they stream). On a remote (fsspec)
   volume they are written to a local *staging* folder and uploaded in parallel, each file once
   under its final name (:mod:`.staged_upload`: large ones in parallel parts; no rename, which an
   object store makes a copy and a delete), hashed from the staged copies meanwhile. Either way a
   rank returns only when its files are on the volume, and hands the digests to the coordinator
   with its write results (``CheckpointManager``'s steps on an object store carry no manifest: their
   ``_COMMITTED``, written last, records every checksum).
2. ``finish`` (coordinator, after every rank's ``write_data``): ``.metadata`` is written, the
   manifest ``.checksums.json`` (size + xxh3-128 of every data file and of ``.metadata``) is put on
   the volume, then ``.metadata`` is published *last*. A checkpoint folder without ``.metadata`` is
   never loadable, so a crash at any earlier point leaves no checkpoint that looks complete.

Loads: :class:`~air_magics.checkpoints.volume_reader.UCVolumeReader` (re-exported here). Writing into a folder that already holds ``.metadata`` raises unless ``overwrite=True``; use
:class:`~air_magics.data.CheckpointManager` for new-folder-per-save, ``latest`` and retention.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch
from torch.distributed.checkpoint import FileSystemWriter

from .. import settings
from ..errors import CheckpointCorruptError, CheckpointError
from ..events import CheckpointEvent, Listener, channel
from ..volumes.location import Location
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .commit import CHECKSUMS, METADATA, write_text_atomic
from .digests import ALGORITHM, checksums_json, file_digest, text_digest
from .direct_write import DirectVolumeFS
from .staged_upload import upload_last, upload_staged
from .tensor_layout import data_layout, planned_bytes
from .volume_reader import UCVolumeReader
from .zipcrc import StagingFS

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
    digest: str  # of ALGORITHM
    items: dict[str, list[Any]] | None = None  # item offset -> [data offset, bytes, dtype] (data_layout)


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
    """Save a DCP checkpoint to a volume folder: files in parallel, checksummed, ``.metadata`` last.

    ``path`` is a ``/Volumes/...`` folder. Other keyword arguments go to ``FileSystemWriter``
    (defaults here: ``thread_count=8`` files per rank, ``sync_files=False``). On a mounted or local
    volume the files are written straight onto it; on a remote one they are staged locally and
    uploaded (``upload_workers`` in parallel). The writing is reported as
    :class:`~air_magics.events.CheckpointEvent`s (``uploading`` with ``files``/``bytes``,
    ``uploaded`` with ``bytes``) to ``listeners`` and :data:`air_magics.events.channel`.
    """

    def __init__(
        self,
        path: str | VolumePath,
        *,
        upload_workers: int = 32,
        thread_count: int = 8,
        direct: bool | None = None,
        sync_files: bool = False,
        overwrite: bool = False,
        zip_crc32: bool = False,
        store: VolumeStore | None = None,
        listeners: Sequence[Listener] = (),
        location: Location | None = None,
        make_folder: Callable[[], int | None] | None = None,
        marker: tuple[str, Callable[[dict[str, Any] | None], str]] | None = None,
        **kwargs: Any,
    ) -> None:
        """A writer for the volume folder *path* (its defaults differ from ``FileSystemWriter``'s).

        Args:
            path: the ``/Volumes/...`` folder the checkpoint is saved into.
            upload_workers: parallel uploads from a staging folder to a remote volume. Default 32.
            thread_count: files written in parallel per rank (torch's writer threads). Default 8.
            direct: write straight onto the volume (``None``, the default: whenever it is mounted
                or local; ``False``: stage locally and upload, as for a remote volume).
            sync_files: fsync each data file. Default False here, as the transfer engine's uploads
                (``FileSystemWriter`` defaults to True); the manifest is always fsynced.
            overwrite: allow saving into a volume folder that already holds ``.metadata``. Default False.
            zip_crc32: keep the CRC32 ``torch.save`` computes for each item's zip record. Default
                False: each file's own checksum in the manifest is what a load verifies, and the
                CRC cost as much CPU as the writing (:mod:`air_magics.checkpoints.zipcrc`: set in torch's
                writer threads only).
            store: the :class:`~air_magics.volumes.VolumeStore` that resolves *path* (default: a new one).
            listeners: :class:`~air_magics.events.CheckpointEvent` listeners.
            location: where *store* puts *path*, when the caller has just located it (e.g.
                ``CheckpointManager``, whose save is on the training loop's clock): a lookup less
                (one ``lstat`` per path part on the mount, 2-3 ms on a volume at 2 ms a request).
            make_folder: makes *path*'s folder and returns its descriptor, verified inside the
                volume (None: make it by path), for a caller that publishes the folder itself once
                the save is done (``CheckpointManager``'s pending step, made relative to its held
                folder): nothing in such a folder is seen before, so no ``.metadata`` is looked for
                in it and each file is written under its own name (no temp name and rename).
            marker: with *make_folder*, the caller's marker file as (name, text from the checksums
                of every file, None where a rank wrote without them), written (fsynced) beside
                ``.metadata`` and the manifest, the three side by side (``CheckpointManager``'s
                ``_COMMITTED``). ``marker_written`` says whether it
                was; where the folder was not written in place, the caller writes it.
            **kwargs: passed to ``FileSystemWriter`` (e.g. ``single_file_per_rank``).
        """
        self.store = store or VolumeStore.shared()
        self.upload_workers = upload_workers
        self.zip_crc32 = zip_crc32
        self.listeners = tuple(listeners)
        self.volume_path = VolumePath.parse(path)
        self.dest = location if location is not None else self.store.locate(self.volume_path)
        self.make_folder = make_folder
        self.marker = marker
        self.marker_written = False
        self.is_coordinator = True  # see set_up_storage_writer
        if direct and not self.dest.is_local:
            raise CheckpointError(
                f"direct=True writes through a mount, and {self.volume_path} is on a remote file system "
                f"({self.dest}); leave direct unset to stage and upload"
            )
        self.direct = self.dest.is_local if direct is None else direct
        self.bytes_uploaded = 0
        # the manifest is fsynced before .metadata is published (a power cut must not leave a checkpoint
        # whose checksums are lost); False where a later fsynced marker records them too (the manager's)
        self.manifest_fsync = True
        self.checksums: dict[str, dict[str, Any]] = {}  # coordinator, after finish: every file written
        self.rank_bytes: list[int] = []  # coordinator, after finish: data bytes each rank wrote
        self.staging = None if self.direct else _staging_root() / uuid.uuid4().hex
        kw = dict(thread_count=thread_count, sync_files=sync_files, overwrite=overwrite, **kwargs)
        if self.direct:
            super().__init__(self.dest.path, **kw)
            self.fs = self.direct_fs = DirectVolumeFS(self.dest.root, zip_crc32=zip_crc32)
            # .metadata written by _finish_direct, beside the manifest (with sync_files torch fsyncs it
            # through its own descriptor: written by torch then)
            self.direct_fs.keep_metadata = not sync_files
        else:
            _clean_stale_staging()
            super().__init__(self.staging, **kw)
            self.fs = StagingFS(zip_crc32)

    def reset(self, checkpoint_id: str | os.PathLike[str] | None = None) -> None:
        if checkpoint_id and str(checkpoint_id) not in (str(self.staging), str(self.volume_path)):
            self.volume_path = VolumePath.parse(str(checkpoint_id))
            self.dest = self.store.locate(self.volume_path)
            if self.direct and not self.dest.is_local:
                raise CheckpointError(
                    f"this writer writes through a mount and {self.volume_path} is on a remote file system; "
                    f"make a writer for it"
                )
        self.marker_written = False
        if self.direct:
            self.direct_fs.release_folders()  # a new save verifies its folders again
            self.direct_fs.in_place = self.direct_fs.data_in_place = False
            self.direct_fs.root = self.dest.root
            self.direct_fs.digests.clear()
            self.direct_fs.kept.clear()
            self.direct_fs.absent.clear()
            self.direct_fs.writes.clear()
            self.direct_fs.failures.clear()
            checkpoint_id = self.dest.path
        else:
            checkpoint_id = None
        super().reset(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return str(checkpoint_id).startswith("/Volumes/")

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        self.is_coordinator = is_coordinator  # (the one rank that writes .metadata and the manifest)
        super().set_up_storage_writer(is_coordinator, *args, **kwargs)

    @property
    def checkpoint_id(self) -> str:
        return str(self.volume_path)

    def _remote_exists(self, rel: str) -> bool:
        loc = self.dest.join(rel)
        if self.direct:  # the folder made and held now (torch's own check and every file then use it)
            fd = self.make_folder() if self.make_folder is not None else None
            if fd is not None:  # the caller's to publish: nothing in it is seen before (see __init__)
                self.direct_fs.adopt(self.dest.path, fd)
                self.direct_fs.in_place = True
                return False
            self.direct_fs.mkdir(self.dest.path)
            return self.direct_fs.exists(loc.path)
        if self.make_folder is not None and not self.dest.is_local:
            return False  # the caller's step, just cleared and published by its marker (an object store's)
        return loc.exists()

    def prepare_local_plan(self, plan: Any) -> Any:
        if not self.overwrite and self._remote_exists(METADATA):
            raise CheckpointError(
                f"{self.volume_path} already holds a checkpoint; save each step to a new folder (CheckpointManager does) "
                f"or pass overwrite=True"
            )
        if self.direct and not self.overwrite:  # no .metadata here: its data files under their own names
            self.direct_fs.data_in_place = True
        return super().prepare_local_plan(plan)

    def write_data(self, plan: Any, planner: Any) -> Future[list[Any]]:
        fs = self.direct_fs if self.direct else None
        if fs is not None and fs.in_place and self.is_coordinator and not self.sync_files:
            # the last files (see _finish_direct), made while the data streams, after the data files
            last = (
                [CHECKSUMS] + ([self.marker[0]] if self.marker else []) + ([METADATA] if self.use_collectives else [])
            )
            fs.create_early(
                self.dest.path, last, after=self.thread_count if self.single_file_per_rank else len(plan.items)
            )
        if self.direct:
            self._emit("uploading", files=min(self.thread_count, len(plan.items)), bytes=planned_bytes(plan))
        results = super().write_data(plan, planner).wait()  # torch.futures.Future
        names = sorted({wr.storage_data.relative_path for wr in results})
        if self.direct:
            digests = self.direct_fs.digests
            self._raise_failures()
            for name in names:
                if not digests[name]["size"]:  # items of no bytes: the file must still be there
                    write_text_atomic(self.dest.join(name), "")
            self.bytes_uploaded += sum(digests[n]["size"] for n in names)
            layout = data_layout(plan, planner, results, self.direct_fs.writes)
        else:
            digests = self._upload(names)
            layout = {}

        def checked(wr: Any) -> Any:  # the digest rides to the coordinator with torch's own results
            name = wr.storage_data.relative_path
            d = digests[name]
            return dataclasses.replace(
                wr, storage_data=_Checked(wr.storage_data, d["size"], d[ALGORITHM], layout.get(name))
            )

        fut: Any = torch.futures.Future()
        fut.set_result([checked(wr) for wr in results])
        return fut

    def _upload(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """Upload staged files in parallel (see :mod:`.staged_upload`); returns their digests, hashed
        from the staged copies meanwhile (the hashing overlaps the upload instead of re-reading the volume)."""
        self._emit("uploading", files=len(names), bytes=sum((self.staging / n).stat().st_size for n in names))
        digests, sent = upload_staged(
            self.staging, names, self.dest, workers=self.upload_workers, label=str(self.volume_path)
        )
        self.bytes_uploaded += sent
        for name in names:
            (self.staging / name).unlink(missing_ok=True)
        return digests

    def finish(self, metadata: Any, results: list[list[Any]]) -> None:
        files: dict[str, dict[str, Any]] = {}
        complete = True  # every rank's results carry digests (all ranks wrote with this class)
        plain = []
        self.rank_bytes = []  # the bytes of the data files each rank wrote, in rank order
        for wr_list in results:
            plain.append([])
            mine: dict[str, int] = {}
            for wr in wr_list:
                sd = wr.storage_data
                if isinstance(sd, _Checked):
                    files[sd.info.relative_path] = {"size": sd.file_size, ALGORITHM: sd.digest}
                    if sd.items:
                        files[sd.info.relative_path]["items"] = sd.items
                    mine[sd.info.relative_path] = sd.file_size
                    wr = dataclasses.replace(wr, storage_data=sd.info)
                else:
                    complete = False
                plain[-1].append(wr)
            self.rank_bytes.append(sum(mine.values()))
        if self.direct:
            self._finish_direct(metadata, plain, files if complete else None)
            return
        super().finish(metadata, plain)  # .metadata written to staging (temp + rename)
        last = [METADATA]
        # in the caller's fresh folder on an object store (make_folder) .metadata and the manifest go side by
        # side, then the caller's marker, which publishes the step and records every checksum: no manifest there
        fresh = self.make_folder is not None and not self.dest.is_local
        if complete:
            files[METADATA] = file_digest(self.staging / METADATA)
            if not (fresh and self.marker is not None):
                (self.staging / CHECKSUMS).write_text(checksums_json(files))
                files[CHECKSUMS] = file_digest(self.staging / CHECKSUMS)
                last.insert(0, CHECKSUMS)  # the manifest, then .metadata last
        self.bytes_uploaded += upload_last(self.staging, last, self.dest, together=fresh)
        if fresh and self.marker is not None:
            name, text_of = self.marker
            write_text_atomic(self.dest.join(name), text_of(files if complete else None))
            self.marker_written = True
        self.checksums = files if complete else {}
        self._emit("uploaded", bytes=self.bytes_uploaded)
        shutil.rmtree(self.staging, ignore_errors=True)

    def _finish_direct(self, metadata: Any, results: list[list[Any]], files: dict[str, Any] | None) -> None:
        """torch writes ``.metadata`` onto the volume under its temp name; its publishing waits
        until the manifest (with its digest) is there. In a folder written in place (see
        ``make_folder``) ``.metadata``, the manifest and the caller's marker are written side by
        side instead: their order does not matter until the caller renames the folder in."""
        fs = self.direct_fs
        try:
            with fs.hold_renames():
                super().finish(metadata, results)
            self._raise_failures()
            text = ""
            if files is not None:
                tmp = next(os.path.basename(src) for src, _ in fs.held())
                files[METADATA] = fs.digests[tmp]
                text = checksums_json(files)
                files[CHECKSUMS] = text_digest(text)
            # in a folder written in place with .metadata kept in memory, .metadata, the manifest and the
            # caller's marker go side by side; else .metadata (kept, or written by torch) keeps torch's
            # temp name and is renamed in after the manifest
            side_by_side = fs.in_place and bool(fs.kept)
            if side_by_side:
                fs.release_renames()  # (a name in memory: no request)
            last = {name: (fs.kept.pop(name), False) for name in list(fs.kept)}
            if files is not None:
                last[CHECKSUMS] = (text.encode(), self.manifest_fsync)
            if side_by_side and self.marker is not None:
                name, text_of = self.marker
                last[name] = (text_of(files).encode(), True)
            if last:
                self._write_files(last, publish=() if fs.in_place else (CHECKSUMS,))
            self.marker_written = side_by_side and self.marker is not None
            if not side_by_side:
                fs.release_renames()
        finally:
            fs.release_folders()
        self.bytes_uploaded += files[METADATA]["size"] if files else 0
        self.checksums = files or {}
        self._emit("uploaded", bytes=self.bytes_uploaded)

    def _write_files(self, last: dict[str, tuple[bytes, bool]], publish: Sequence[str] = ()) -> None:
        try:
            self.direct_fs.write_files(self.dest.path, last, publish=publish)
        except OSError as exc:
            name = os.path.basename(exc.filename) if isinstance(exc.filename, str) else ", ".join(sorted(last))
            raise CheckpointError(
                f"writing {name} to {self.volume_path} failed ({exc}); nothing of the save was published"
            ) from exc

    def _raise_failures(self) -> None:
        """The first file torch's threads could not write (see ``DirectVolumeFS.failures``)."""
        failures = self.direct_fs.failures
        if failures:
            name, exc = failures[0]
            raise CheckpointError(
                f"writing {name} to {self.volume_path} failed ({len(failures)} file(s) in all, "
                f"transient errors retried): {exc}"
            ) from exc

    def _emit(self, state: str, **detail: Any) -> None:
        channel.emit(
            CheckpointEvent(state=state, directory=str(self.volume_path), detail=MappingProxyType(detail)),
            self.listeners,
        )
