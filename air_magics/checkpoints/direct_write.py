"""Checkpoint files written straight onto a mounted volume, hashed while they stream (issue 34).

Why: staging a save on local disk and uploading it writes every byte twice and reads it back once
to hash it; 8 plain threads writing 8 files to the mount write each byte once. Here torch's own
``FileSystemWriter`` threads write onto the volume through this :class:`DirectVolumeFS` (torch's
public ``FileSystemBase`` seam), and each stream's checksum is computed from the bytes as they pass.

Each file is written as :class:`~air_magics.io.atomic.AtomicFile` (a hidden temp name in the
verified folder, renamed on close, removed if the write fails), so no half-written data file ever
carries a checkpoint's file name, and every open is confined to the volume (no link followed).
Renames the writer asks for (torch's ``.metadata.tmp`` -> ``.metadata``) can be held back with
:meth:`DirectVolumeFS.hold_renames` until the manifest is on the volume: ``.metadata`` stays last.

torch's ``.metadata`` is kept in memory (:attr:`DirectVolumeFS.kept`) and written by
:meth:`DirectVolumeFS.write_files` beside the manifest (under torch's temp name, renamed in
last), instead of one after the other on the caller's clock (each small file is a chain of
create, write and close requests on a mount). In a folder its owner publishes itself
(:attr:`DirectVolumeFS.in_place`) the order does not matter at all, only that all are complete
before the folder is renamed in: there the owner's marker is written beside them too.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import weakref
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from torch.distributed.checkpoint.filesystem import FileSystemBase

from ..io.atomic import AtomicFile, replace_at
from ..io.confined import create_at, exists_at, fill, open_dir, open_file, publish_at, write_all, write_at
from ..io.leftovers import temp_name
from ..io.pools import job_pool
from ..io.retry import retry_call
from .digests import ALGORITHM, new_hasher
from .grid_stream import CHUNK_BYTES, GridStream
from .zipcrc import no_zip_crc32

__all__ = ["DirectVolumeFS"]

_TORCH_TEMP = ".metadata.tmp"  # where torch's finish writes .metadata before renaming it into place


class _Sink(io.RawIOBase):
    """Where a file that could not be created is written: nowhere (its failure is reported)."""

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        n = memoryview(b).nbytes
        self.size += n
        return n

    def tell(self) -> int:
        return self.size


class _Kept(io.RawIOBase):
    """torch's ``.metadata`` stream in a folder written in place: its bytes kept in memory, hashed,
    for :meth:`DirectVolumeFS.write_files` (no ``fileno``: such a folder's writer syncs no file
    through torch)."""

    def __init__(self) -> None:
        super().__init__()
        self.data = bytearray()
        self.hash = new_hasher()
        self.writes: list[tuple[int, int]] = []

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        self.writes.append((len(self.data), view.nbytes))
        self.data += view
        self.hash.update(view)
        return view.nbytes

    def tell(self) -> int:
        return len(self.data)

    @property
    def size(self) -> int:
        return len(self.data)


class _InPlace(io.FileIO):
    """A file written under its own name in a folder nobody looks into before it is published
    (:attr:`DirectVolumeFS.in_place`): :class:`AtomicFile`'s interface, without its temp name and
    rename. ``discard`` removes it."""

    def __init__(self, dir_fd: int, name: str) -> None:
        super().__init__(create_at(dir_fd, name), "wb", closefd=True)
        self._dir_fd, self._name = dir_fd, name  # (the folder's descriptor stays its owner's)

    def discard(self) -> None:
        if self.closed:
            return
        super().close()
        with contextlib.suppress(OSError):
            os.unlink(self._name, dir_fd=self._dir_fd)


class DirectVolumeFS(FileSystemBase):
    """torch DCP file system for one folder on a mounted volume, confined to ``root``.

    ``digests`` maps each file name written (after any rename) to ``{"size", ALGORITHM: hex}``; a file
    nothing was written to is not created (its digest says size 0). A file
    whose writing failed (after transient errors were retried) is not published; its error is kept
    in ``failures`` (name, exception) rather than raised in torch's writer thread, where it would
    be lost: the writer checks ``failures`` when torch's threads are done.

    ``in_place``: files are written under their own names, not a temp name renamed at the end (for
    a folder nobody looks into before its owner publishes it, such as ``CheckpointManager``'s
    pending step: each rename was one more request at the end of every file).

    ``data_in_place``: the data files only are written under their own names (a folder that holds
    no ``.metadata`` when the save starts: no reader takes its data files for a checkpoint's until
    the ``.metadata`` written last names them, so a torn one is never read; 8 renames at the end
    of the data, one after another on the folder's lock, saved).

    ``keep_metadata`` (set by ``UCVolumeWriter`` unless torch fsyncs each file): torch's ``.metadata`` is
    kept in :attr:`kept` (name -> bytes) for its writer to write with the folder's other last
    files (:meth:`write_files`) instead of one after the other.
    """

    def __init__(self, root: str | None, *, chunk_bytes: int = CHUNK_BYTES, zip_crc32: bool = False) -> None:
        self.root = root
        self.chunk_bytes = chunk_bytes
        self.zip_crc32 = zip_crc32  # False: torch.save writes no zip CRC32 into these files (see .zipcrc)
        self.digests: dict[str, dict[str, Any]] = {}
        self.writes: dict[str, list[tuple[int, int]]] = {}  # file name -> torch's writes into it (offset, bytes)
        self.failures: list[tuple[str, BaseException]] = []
        self._held: list[tuple[str, str]] | None = None
        self.in_place = False
        self.data_in_place = False  # see the class docstring
        # torch's .metadata kept in memory for its writer to write with its last files (write_files);
        # only for a writer that does (UCVolumeWriter): a plain FileSystemWriter would never write it
        self.keep_metadata = False
        self.kept: dict[str, bytes] = {}
        self._early: Future[dict[str, int]] | None = None  # see create_early
        self._early_plan: tuple[str, tuple[str, ...], int] | None = None  # (folder, names, after): not started yet
        self._created = 0  # data files created since create_early
        self.absent: set[str] = set()  # paths this save found absent (see exists)
        # each folder's verified descriptor, opened once per save: a path is resolved part by part, a
        # request per part on a mount (8 data files, .metadata, the manifest and the renames each did)
        self._folders: dict[str, int] = {}
        self._folders_lock = threading.Lock()
        weakref.finalize(self, _close_all, self._folders)

    def _folder(self, folder: str, *, create: bool = False) -> int:
        """*folder*'s descriptor, verified inside ``root`` (made first with *create*), held until
        :meth:`release_folders`; the caller does not close it."""
        with self._folders_lock:
            fd = self._folders.get(folder)
            if fd is None:
                fd = self._folders[folder] = open_dir(folder, self.root, create=create)
            return fd

    def release_folders(self) -> None:
        """Close the folder descriptors held for this save (the next save verifies its folders again)."""
        _close_all(self._take_early())
        with self._folders_lock:
            _close_all(self._folders)

    def adopt(self, folder: str, fd: int) -> None:
        """Hold *fd*, a descriptor of *folder* its caller opened and verified inside ``root``
        (closed with the others by :meth:`release_folders`)."""
        with self._folders_lock:
            old = self._folders.pop(folder, None)
            if old is not None:
                os.close(old)
            self._folders[folder] = fd

    @contextmanager
    def create_stream(self, path: str | os.PathLike[str], mode: str) -> Iterator[io.IOBase]:
        path = str(path)
        if "r" in mode and "+" not in mode:
            with open_file(path, self.root, mode) as f:
                yield f
            return
        if mode != "wb":
            raise ValueError(f"DirectVolumeFS opens files as 'rb' or 'wb', not {mode!r}")
        folder, name = os.path.split(path)
        if self.keep_metadata and name.endswith(_TORCH_TEMP):  # (or __<rank>.metadata.tmp)
            kept = _Kept()
            yield kept
            self.kept[name] = bytes(kept.data)
            self.digests[name] = {"size": kept.size, ALGORITHM: kept.hash.hexdigest()}
            self.writes[name] = kept.writes
            return
        try:
            file: AtomicFile | _InPlace
            if self.in_place or self.data_in_place or name == _TORCH_TEMP:  # (torch renames .metadata.tmp itself)
                file = retry_call(lambda: _InPlace(self._folder(folder, create=True), name))
            else:
                temp = AtomicFile.temp_for(name)  # one name through the retries: a failed create is tried again
                file = retry_call(lambda: AtomicFile(os.dup(self._folder(folder, create=True)), name, path, temp=temp))
        except Exception as exc:
            self.failures.append((name, exc))
            with _Sink() as sink:  # torch's thread goes on to its next file; the writer reports this one
                yield sink
            return
        if self._early_plan is not None:
            self._data_file_created()
        stream = GridStream(file, self.chunk_bytes)
        try:
            with contextlib.nullcontext() if self.zip_crc32 else no_zip_crc32():  # torch's writer thread
                yield stream
            stream.close()  # torch closes it too; a second close is a no-op
        except BaseException as exc:
            stream.discard()  # nothing half-written is published
            if not isinstance(exc, Exception):
                raise
            self.failures.append((name, exc))  # reported by the writer, on the caller's thread
            return
        self.digests[name] = {"size": stream.size, ALGORITHM: stream.hash.hexdigest()}
        self.writes[name] = stream.writes

    def concat_path(self, path: str | os.PathLike[str], suffix: str) -> str:
        return f"{str(path).rstrip('/')}/{suffix}"

    def init_path(self, path: str | os.PathLike[str]) -> str:
        return str(path)

    def rename(self, path: str | os.PathLike[str], new_path: str | os.PathLike[str]) -> None:
        if self._held is not None:
            self._held.append((str(path), str(new_path)))
        else:
            self._rename(str(path), str(new_path))

    def _rename(self, path: str, new_path: str) -> None:
        folder, name = os.path.split(path)
        new_folder, new_name = os.path.split(new_path)
        if folder != new_folder:
            raise ValueError(f"DirectVolumeFS renames inside one folder, not {path!r} -> {new_path!r}")
        if name in self.kept:  # not on the volume yet: renamed where it is
            self.kept[new_name] = self.kept.pop(name)
        else:
            fd = self._folder(folder)
            replace_at(fd, name, new_name)
        if name in self.digests:
            self.digests[new_name] = self.digests.pop(name)

    @contextmanager
    def hold_renames(self) -> Iterator[None]:
        """Renames asked for inside the block wait for :meth:`release_renames` (or are dropped,
        their files left under the temp names, if the block raises)."""
        self._held = []
        try:
            yield
        except BaseException:
            self._held = None
            raise

    def held(self) -> list[tuple[str, str]]:
        """The renames waiting for :meth:`release_renames`, as ``(path, new_path)``."""
        return list(self._held or [])

    def release_renames(self) -> None:
        held, self._held = self._held or [], None
        for src, dst in held:
            self._rename(src, dst)

    def mkdir(self, path: str | os.PathLike[str]) -> None:
        self._folder(str(path), create=True)  # made (confined) and held for the files written into it

    def create_early(self, folder: str, names: Sequence[str], *, after: int = 0) -> None:
        """Create the files *names* (empty) in the held *folder* on a thread of their own once
        *after* data files were created, while the data streams, for :meth:`write_files` to fill
        (a folder written :attr:`in_place`). Why: a create waits for every other create in its
        folder (the kernel holds the folder's lock across the mount's lookup and create), so the
        last three files made at the end queued one behind another on the caller's clock, and
        made at the start they would hold up the data files'. A file that cannot be made here is
        made by :meth:`write_files`, which reports its failure."""
        _close_all(self._take_early())
        self._early_plan, self._created = (folder, tuple(names), after), 0
        if after <= 0:
            self._start_early()

    def _data_file_created(self) -> None:
        with self._folders_lock:
            self._created += 1
            ready = self._early_plan is not None and self._created == self._early_plan[2]
        if ready:
            self._start_early()

    def _start_early(self) -> None:
        plan, self._early_plan = self._early_plan, None
        if plan is None:
            return
        folder, names, _ = plan
        dir_fd = self._folder(folder)

        def create() -> dict[str, int]:
            fds = {}
            for name in names:
                with contextlib.suppress(OSError):
                    fds[name] = create_at(dir_fd, name)
            return fds

        pool = job_pool("ranges", "air-ckpt-early", 1)
        self._early = pool.submit(create)
        pool.shutdown(wait=False)  # (the thread ends with its one task)

    def _take_early(self) -> dict[str, int]:
        self._early_plan = None  # (never started: write_files makes them)
        early, self._early = self._early, None
        return early.result() if early is not None else {}

    def write_files(self, folder: str, files: dict[str, tuple[bytes, bool]], *, publish: Collection[str] = ()) -> None:
        """Write each of *files* (name -> (bytes, fsync)) under its own name in the held *folder*,
        side by side (in a folder written :attr:`in_place` its owner publishes it once all are
        there), into the files :meth:`create_early` made where it did; the names in *publish* are
        written atomically instead (temp name, rename: the folder is seen). All or none: when one
        could not be written, every one is removed and the first error raised; one made early and
        not in *files* is removed."""
        dir_fd = self._folder(folder)
        early = self._take_early()

        def write(name: str) -> None:
            data, fsync = files[name]
            if name in publish:
                publish_at(dir_fd, name, lambda fd: write_all(fd, data), temp=temp_name(name), fsync=fsync)
                return
            fd = early.pop(name, None)
            try:
                if fd is None:
                    retry_call(lambda: write_at(dir_fd, name, data, fsync=fsync))
                else:
                    try:
                        retry_call(lambda: fill(fd, data, fsync=fsync))
                    finally:
                        os.close(fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=dir_fd)
                raise

        try:
            with job_pool("ranges", "air-ckpt-last", len(files)) as pool:
                runs = {name: pool.submit(write, name) for name in files}
            errors = [run.exception() for run in runs.values() if run.exception() is not None]
            if errors:
                for name, run in runs.items():
                    if run.exception() is None:
                        with contextlib.suppress(OSError):
                            os.unlink(name, dir_fd=dir_fd)
                raise errors[0]
        finally:
            for name in list(early):  # made early, not written: not left behind
                os.close(early.pop(name))
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=dir_fd)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return True

    def exists(self, path: str | os.PathLike[str]) -> bool:
        """Whether *path* is there; a name this save found absent is not asked again (torch asks
        for ``.metadata`` twice before it saves and once after; a rename into place replaces
        one that came meanwhile, as torch's remove and rename would)."""
        folder, name = os.path.split(str(path))
        if self.in_place:  # nothing but this save's files is in such a folder (see in_place)
            return name in self.kept or name in self.digests
        if str(path) in self.absent:
            return False
        fd = self._folders.get(folder)
        found = os.path.lexists(str(path)) if fd is None else exists_at(fd, name)  # one lookup in a held folder
        if not found:
            self.absent.add(str(path))
        return found

    def rm_file(self, path: str | os.PathLike[str]) -> None:
        folder, name = os.path.split(str(path))
        os.unlink(name, dir_fd=self._folder(folder))


def _close_all(folders: dict[str, int]) -> None:
    for fd in folders.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    folders.clear()
