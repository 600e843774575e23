"""``UCVolumeReader``: load a ``torch.distributed.checkpoint`` folder from a volume, verified.

Each data file the load plan needs is fetched and verified, then its items are loaded into their
tensors, several files at a time (``workers``), straight into memory (``direct``, the default) and
dropped once its items are in place: on a mounted or local volume in whole chunks, hashed as they
arrive (:func:`~air_magics.checkpoints.direct_read.read_file`); on an object store by one GET, a large
file (its size recorded) by parallel ranged GETs, no HEAD first (:func:`~.direct_read.read_remote`).
With ``direct=False`` a file is fetched through the :class:`~air_magics.cache.FileCache` and hashed
from the local copy, which stays warm for the next load.

When the folder records checksums (in the manager's ``_COMMITTED``, else in ``.checksums.json``)
every file is verified before torch reads it; a missing, truncated or changed file raises
:class:`~air_magics.errors.CheckpointCorruptError`, never a confusing "state does not match". A bad
file is read once more before the checkpoint is called corrupt. Folders without checksums (older
saves, plain torch) load with presence and size checks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.filesystem import FileSystem
from torch.distributed.checkpoint.planner import LoadItemType

from ..cache import FileCache
from ..errors import CheckpointCorruptError, CheckpointError
from ..io.pools import job_pool
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .commit import CHECKSUMS, COMMITTED, METADATA, STEP_RE, read_text
from .digests import algorithm_of, file_digest, parse_checksums
from .direct_read import MemoryFile, read_file, read_remote
from .read_into import Kept, KeptFile, read_placed
from .stored_tensor import stored_tensor

__all__ = ["UCVolumeReader"]

Fetched = str | bytearray | Kept  # a verified local copy's path, the verified bytes, or those kept of a placed read


class _ReaderFS(FileSystem):
    """Opens ``/Volumes/...`` files for torch: what the reader fetched (and verified), else
    through *fetch*."""

    def __init__(self, fetch: Callable[[str], Fetched], store: VolumeStore) -> None:
        self.fetch = fetch
        self.store = store
        self.fetched: dict[str, Fetched] = {}  # volume path -> what the reader just fetched

    def concat_path(self, path: str | os.PathLike[str], suffix: str) -> str:
        return f"{str(path).rstrip('/')}/{suffix}"

    def init_path(self, path: str | os.PathLike[str]) -> str:
        return str(path)

    def create_stream(self, path: str | os.PathLike[str], mode: str) -> Any:
        if "r" not in mode or "+" in mode:
            raise CheckpointError(f"UCVolumeReader opens files read-only, not {mode!r}")
        got = self.fetched.get(str(path))
        if got is None:
            got = self.fetch(str(path))
        if isinstance(got, str):
            return FileSystem.create_stream(self, got, mode)
        if isinstance(got, Kept):
            return contextlib.closing(KeptFile(got))
        return contextlib.closing(MemoryFile(got))

    def exists(self, path: str | os.PathLike[str]) -> bool:
        return self.store.exists(str(path))


@dataclasses.dataclass
class _Placement:
    """A file's read plan: tensor data straight into destinations, the other bytes of its items kept."""

    place: list[tuple[int, memoryview]] = dataclasses.field(default_factory=list)  # (file offset, destination)
    keep: list[tuple[int, int]] = dataclasses.field(default_factory=list)  # [start, end) file ranges
    placed: list[tuple[Any, torch.Tensor]] = dataclasses.field(default_factory=list)  # (read item, destination)


def _placeable(req: Any, planner: Any, nbytes: int, dtype: str) -> torch.Tensor | None:
    """The destination of read item *req* when the stored chunk's *nbytes* (a contiguous tensor of
    *dtype*, as the writer recorded) can land in it as they are: the whole chunk, into a contiguous
    CPU tensor of that dtype and as many bytes, on a little-endian machine."""
    if any(req.storage_offsets) or sys.byteorder != "little":
        return None
    target = planner.resolve_tensor(req).detach()
    if (
        target.device.type != "cpu"
        or str(target.dtype).removeprefix("torch.") != dtype
        or not target.is_contiguous()
        or list(target.size()) != list(req.lengths)
        or target.numel() * target.element_size() != nbytes
    ):
        return None
    return target


def _bytes_of(t: torch.Tensor) -> memoryview:
    """The memory of contiguous CPU tensor *t* as writable bytes."""
    return memoryview(t.reshape(-1).view(torch.uint8).numpy()).cast("B")


class UCVolumeReader(FileSystemReader):
    """Load a DCP checkpoint from a volume folder: files in parallel, each verified before use.

    ``direct`` (the default) reads files straight into memory (from an object store in parallel
    ranges); ``False`` reads them through the cache (``cache``). ``remedy`` is appended to a
    :class:`CheckpointCorruptError`'s message. ``marker_text``: the folder's ``_COMMITTED`` when the
    caller has just read it (``CheckpointManager`` on an object store: a request less).
    """

    def __init__(
        self,
        path: str | VolumePath,
        *,
        cache: FileCache | None = None,
        workers: int = 16,
        direct: bool | None = None,
        store: VolumeStore | None = None,
        remedy: str = "load another checkpoint or save this one again",
        marker_text: str | None = None,
        **kwargs: Any,
    ) -> None:
        vp = VolumePath.parse(path)
        self.store = store or (cache.store if cache is not None else VolumeStore.shared())
        self._cache = cache
        self.workers = workers
        self.direct = direct
        self.remedy = remedy
        self._marker_text = marker_text  # the manager's _COMMITTED, when it has just read it (see _recorded_checksums)
        super().__init__(str(vp), **kwargs)
        self.fs = _ReaderFS(self._fetch_path, self.store)
        self._locate(vp)

    @property
    def cache(self) -> FileCache:
        """The cache a non-direct read goes through (made on first use)."""
        if self._cache is None:
            self._cache = FileCache(store=self.store)
        return self._cache

    def _locate(self, path: str | os.PathLike[str] | VolumePath) -> None:
        """Point at checkpoint folder *path*: check it is complete and read its recorded checksums."""
        self.volume_path = VolumePath.parse(str(path))
        self.path = str(self.volume_path)
        name = self.volume_path.name
        self.label = name if STEP_RE.match(name) else str(self.volume_path)  # step_N, as the manager names it
        # located once: each file is joined to it (a lookup is an lstat per path part, a request each
        # on a mount whose cached entries expired); every open is still confined to the volume
        self.where = where = self.store.locate(self.volume_path)
        # on an object store the recorded checksums come first (a GET each): a folder whose checksums name
        # .metadata needs no HEAD for it (a missing one is reported when it is read)
        self.checksums = None if where.is_local else self._recorded_checksums()
        if (self.checksums is None or METADATA not in self.checksums) and not where.join(METADATA).exists():
            what = "does not exist" if not where.exists() else "has no .metadata (incomplete or not a checkpoint)"
            raise CheckpointError(
                f"checkpoint {self.volume_path} {what}; pick a complete one (CheckpointManager.latest())"
            )
        # straight into memory by default: from a mount in whole chunks, from an object store in parallel ranges
        self.reads_direct = True if self.direct is None else self.direct
        if where.is_local:
            self.checksums = self._recorded_checksums()

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str | os.PathLike[str]) -> bool:
        return str(checkpoint_id).startswith("/Volumes/")

    # -- integrity --------------------------------------------------------------------------------
    def _corrupt(self, name: str, problem: str) -> CheckpointCorruptError:
        return CheckpointCorruptError(self.label, name, problem, self.remedy)

    def _recorded_checksums(self) -> dict[str, dict[str, Any]] | None:
        """Checksums from ``_COMMITTED`` (the manager's), else ``.checksums.json``; ``None``: none recorded."""
        given, self._marker_text = self._marker_text, None  # (for the first folder only)
        for name in (COMMITTED, CHECKSUMS):
            text = given if name == COMMITTED and given is not None else read_text(self.where.join(name))
            if text is None:
                continue
            try:
                files = parse_checksums(text)
            except ValueError as exc:
                raise self._corrupt(name, f"unreadable ({exc})") from None
            if files is not None:
                return files
        return None

    def _read(
        self, vp: VolumePath, algorithm: str | None, keep: bool, into: _Placement | None = None, size: int | None = None
    ) -> tuple[Fetched | None, dict[str, Any]]:
        """File *vp* as bytes (direct), placed into its tensors (*into*) or a local copy (cache),
        with its digest by *algorithm* (``None``: its size only). *size*: the recorded one, if any
        (an object store's file is then read in parallel ranges, with no HEAD first)."""
        if into is not None and algorithm is not None:
            return read_placed(self.where.join(vp.name), into.place, into.keep, algorithm)
        if self.reads_direct:
            loc = self.where.join(vp.name)
            if not (algorithm or keep):  # a size is all that is asked: no read at all
                return None, {"size": os.stat(loc.path).st_size if loc.is_local else int(loc.fs.size(loc.path))}
            if not loc.is_local:
                return read_remote(loc, size, keep=keep, digest=algorithm)
            return read_file(loc, keep=keep, digest=algorithm)
        local = self.cache.get(vp)
        return local, (file_digest(local, algorithm) if algorithm else {"size": os.path.getsize(local)})

    def _fetch(self, name: str, keep: bool = True, into: _Placement | None = None) -> tuple[Fetched | None, int]:
        """File *name* (and its size), verified against its recorded checksum; kept in
        ``fs.fetched`` for torch when *keep*. A bad file is read once more before the checkpoint is
        called corrupt (a cached copy may be the bad one)."""
        vp = self.volume_path.joinpath(name)
        want = None if self.checksums is None else self.checksums.get(name)
        if self.checksums is not None and want is None:
            raise self._corrupt(name, f"not listed in the checkpoint's checksums ({len(self.checksums)} files)")
        for attempt in (0, 1):
            try:
                got_file, got = self._read(
                    vp, None if want is None else algorithm_of(want), keep, into, None if want is None else want["size"]
                )
            except FileNotFoundError:
                raise self._corrupt(name, "missing") from None
            if want is None or got == {k: v for k, v in want.items() if k != "items"}:
                if keep and got_file is not None:
                    self.fs.fetched[str(vp)] = got_file
                return got_file, got["size"]
            if attempt == 0 and isinstance(got_file, str):
                Path(got_file).unlink(missing_ok=True)  # forces a fresh fetch from the volume
        size = (
            "" if got["size"] == want["size"] else f" (size {got['size']} bytes, {want['size']} recorded: truncated?)"
        )
        raise self._corrupt(name, f"checksum mismatch{size}")

    def _fetch_path(self, path: str) -> Fetched:
        """torch opened a file the reader had not fetched: fetch (and verify) it now."""
        folder = f"{self.volume_path}/"
        if not path.startswith(folder):
            raise CheckpointError(f"{path} is not in the checkpoint {self.volume_path} this reader loads")
        got, _ = self._fetch(path[len(folder) :])
        assert got is not None  # kept: keep=True
        return got

    def _pool(self, n: int) -> ThreadPoolExecutor:
        return job_pool("remote-io", "air-ckpt-read", min(self.workers, n))

    def verify(self) -> list[str]:
        """Check every file of the checkpoint: against its checksum if recorded, else that each file
        ``.metadata`` refers to exists and is long enough. Returns the names checked."""
        if self.checksums is not None:
            names = sorted(self.checksums)
            with self._pool(len(names)) as pool:
                list(pool.map(lambda n: self._fetch(n, keep=False), names))
            return names
        need = self._extents((self.read_metadata().storage_data or {}).values())
        with self._pool(len(need)) as pool:
            list(pool.map(lambda n: self._check_size(n, self._fetch(n, keep=False)[1], need[n]), sorted(need)))
        return [METADATA, *sorted(need)]

    @staticmethod
    def _extents(infos: Any) -> dict[str, int]:
        """Bytes each file must hold at least, from the items' offsets and lengths in ``.metadata``."""
        need: dict[str, int] = {}
        for sd in infos:
            need[sd.relative_path] = max(need.get(sd.relative_path, 0), sd.offset + sd.length)
        return need

    def _check_size(self, name: str, size: int, end: int) -> None:
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

    def read_data(self, plan: Any, planner: Any) -> torch.futures.Future[None]:
        """Each file: fetched, verified, its items loaded by torch, then let go; several at once."""
        per_file: dict[str, list[Any]] = {}
        for item in plan.items:
            per_file.setdefault(self.storage_data[item.storage_index].relative_path, []).append(item)
        need = self._extents(self.storage_data[item.storage_index] for item in plan.items)

        def load(name: str) -> None:
            into = self._placement(name, per_file[name], planner)
            got, size = self._fetch(name, into=into)
            self._check_size(name, size, need[name])
            try:
                items = per_file[name]
                if into is not None:  # the placed tensors: in place, the file verified
                    items = self._finish_placement(into, items, planner)
                if isinstance(got, (bytearray, Kept)):  # read into memory: its plain tensors go straight in
                    items = self._load_in_place(got, items, planner)
                if items:  # the rest (or every item of a cached copy) through torch's own reading
                    FileSystemReader.read_data(self, dataclasses.replace(plan, items=items), planner)
            finally:
                if not isinstance(got, str):  # the bytes are in their tensors now
                    self.fs.fetched.pop(str(self.volume_path.joinpath(name)), None)

        with self._pool(len(per_file)) as pool:
            list(pool.map(load, sorted(per_file)))
        fut: torch.futures.Future[None] = torch.futures.Future()
        fut.set_result(None)
        return fut

    def _placement(self, name: str, items: list[Any], planner: Any) -> _Placement | None:
        """Where *name*'s tensor items go when it is read (direct reads of a file whose manifest
        records its items' data positions, see :mod:`~air_magics.checkpoints.read_into`): a plain CPU
        destination of the stored chunk's bytes takes them as they arrive; everything else of each
        planned item is kept. ``None``: read the file whole, as before."""
        want = None if self.checksums is None else self.checksums.get(name)
        layout = (want or {}).get("items") if self.reads_direct and self.where.is_local else None
        if not layout:
            return None
        into = _Placement()
        for req in items:
            md = self.storage_data[req.storage_index]
            at = layout.get(str(md.offset))
            target = None
            if (
                at is not None
                and len(at) == 3
                and req.type == LoadItemType.TENSOR
                and not getattr(md, "transform_descriptors", None)
            ):
                target = _placeable(req, planner, at[1], at[2])
            if target is None:
                into.keep.append((md.offset, md.offset + md.length))
                continue
            data_at, nbytes, _ = at
            into.place.append((data_at, _bytes_of(target)))
            into.keep += [(md.offset, data_at), (data_at + nbytes, md.offset + md.length)]
            into.placed.append((req, target))
        return into

    def _finish_placement(self, into: _Placement, items: list[Any], planner: Any) -> list[Any]:
        """Commit each placed tensor (its bytes are in place, the file verified); returns the other *items*."""
        done = set()
        for req, target in into.placed:
            planner.commit_tensor(req, target)
            done.add(id(req))
        return [req for req in items if id(req) not in done]

    def _load_in_place(self, data: bytearray | Kept, items: list[Any], planner: Any) -> list[Any]:
        """Copy each plain tensor item of the verified file *data* into its destination in one copy
        (:func:`~air_magics.checkpoints.stored_tensor.stored_tensor`, where torch's reading makes two);
        returns the items left for torch (objects, transformed items, anything unusual)."""
        rest = []
        view = memoryview(data) if isinstance(data, bytearray) else None
        for req in items:
            md = self.storage_data[req.storage_index]
            src = None
            if req.type == LoadItemType.TENSOR and not getattr(md, "transform_descriptors", None):
                record = (
                    view[md.offset : md.offset + md.length] if view is not None else data.piece(md.offset, md.length)
                )
                src = None if record is None else stored_tensor(record)
            if src is None:
                rest.append(req)
                continue
            for dim, (start, length) in enumerate(zip(req.storage_offsets, req.lengths, strict=True)):
                src = src.narrow(dim, start, length)
            target = planner.resolve_tensor(req).detach()
            if target.size() != src.size():
                raise CheckpointError(
                    f"{req.storage_index.fqn}: the checkpoint holds {tuple(src.size())}, the state "
                    f"{tuple(target.size())}; load it into a state of the shapes it was saved from"
                )
            target.copy_(src)
            planner.commit_tensor(req, target)
        return rest
