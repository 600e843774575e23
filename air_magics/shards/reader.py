"""Reading a packed folder: validate its manifest and indexes, serve members as local files.

A shard is fetched whole into the :class:`~air_magics.cache.FileCache` (one entry, keyed by the
shard's volume path, validated by the size and mtime its manifest recorded: no round trip when
warm), checked against the manifest's byte count and CRC-32, and extracted once into
``<cache root>/shards/<catalog>/<schema>/<volume>/<packed folder>/<shard>-<crc32>/``: members are
served as paths into that folder, so ``open(p, "rb")``, ``Image.open``, ``torch.load`` and
``np.load`` work on them, and the file name is the original's.

Lifetime of a yielded path: the extracted folder is never modified or removed while a packed
folder is read; it is named after the shard's content (digest of its members + CRC-32), so it
cannot go stale, and it is reused by later epochs and other processes. It is removed only by
:func:`prune_extracted` (explicitly, or with the cache directory). Extraction writes a temp folder
and renames it, so a reader never sees half a shard.
"""

from __future__ import annotations

import os
import shutil
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ShardError, VolumeNotFoundError
from ..io.confined import open_read
from ..io.leftovers import sweep_stale, temp_name
from ..io.retry import retry_call
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .format import MANIFEST_NAME, Manifest, Member, ShardInfo, load_index, load_manifest

if TYPE_CHECKING:
    from ..cache import FileCache

__all__ = ["PackedFolder", "MemberRef", "open_packed", "is_packed", "prune_extracted"]

_CHUNK = 8 << 20
_INDEX_THREADS = 16


def _read(store: VolumeStore, vp: VolumePath) -> bytes:
    """A small file of the packed folder (manifest, index); transient errors retried."""

    def once() -> bytes:
        with store.open(vp, "rb") as f:
            return f.read()

    return retry_call(once)


def is_packed(store: VolumeStore, path: str | VolumePath) -> bool:
    """True when *path* is a folder written by :func:`~air_magics.shards.pack` (holds a manifest)."""
    try:
        return store.exists(VolumePath.parse(path).joinpath(MANIFEST_NAME))
    except (OSError, ValueError):
        return False


def open_packed(store: VolumeStore, path: str | VolumePath) -> PackedFolder | None:
    """The packed folder at *path*, validated; ``None`` when *path* is not one (no manifest)."""
    vp = VolumePath.parse(path)
    try:
        raw = _read(store, vp.joinpath(MANIFEST_NAME))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, VolumeNotFoundError):
        return None
    return PackedFolder(store, vp, load_manifest(raw, f"{vp}/{MANIFEST_NAME}"))


@dataclass(frozen=True, eq=False)
class MemberRef:
    """One member of a packed folder, as the dataset holds it (pickles with its folder)."""

    folder: PackedFolder
    shard: int
    member: Member

    def local_path(self, cache: FileCache) -> str:
        return self.folder.local_path(self, cache)

    def ready(self) -> str | None:
        """The local path if this process has its shard extracted already (no I/O), else None."""
        d = self.folder._ready.get(self.shard)
        return None if d is None else os.path.join(d, *self.member.name.split("/"))


class PackedFolder:
    """A validated packed folder: its manifest, and every member sorted by name (``members``)."""

    def __init__(self, store: VolumeStore, path: VolumePath, manifest: Manifest) -> None:
        self.store, self.path, self.manifest = store, path, manifest
        shards = manifest.shards

        def index(i: int) -> list[Member]:
            s = shards[i]
            where = f"{path}/{s.index}"
            try:
                raw = _read(store, path.joinpath(s.index))
            except (FileNotFoundError, VolumeNotFoundError):
                raise ShardError(f"index {where} named by the manifest is missing; pack the source again") from None
            return load_index(raw, where, s)

        with ThreadPoolExecutor(
            max_workers=min(_INDEX_THREADS, max(1, len(shards))), thread_name_prefix="air-shard-index"
        ) as pool:
            per_shard = list(pool.map(index, range(len(shards))))
        refs = [MemberRef(self, i, m) for i, ms in enumerate(per_shard) for m in ms]
        refs.sort(key=lambda r: r.member.name)
        for a, b in zip(refs, refs[1:], strict=False):  # neighbours
            if a.member.name == b.member.name:
                raise ShardError(
                    f"packed folder {path}: member {a.member.name!r} is in two shards; pack the source again"
                )
        self.members: list[MemberRef] = refs
        self._reset()

    def _reset(self) -> None:
        self._ready: dict[int, str] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._guard = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in ("_ready", "_locks", "_guard"):
            state.pop(k)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def __repr__(self) -> str:
        m = self.manifest
        return f"PackedFolder({str(self.path)!r}, files={m.files}, shards={len(m.shards)}, generation={m.generation})"

    def shard_path(self, i: int) -> VolumePath:
        return self.path.joinpath(self.manifest.shards[i].name)

    def extracted_dir(self, cache: FileCache, i: int) -> Path:
        s = self.manifest.shards[i]
        vp = self.path
        return cache.root.joinpath(
            "shards", vp.catalog, vp.schema, vp.volume, *vp.parts, f"{s.name[: -len('.tar')]}-{s.crc32:08x}"
        )

    def local_path(self, ref: MemberRef, cache: FileCache) -> str:
        """A local path holding *ref*'s bytes: its shard fetched and extracted on first use."""
        d = self._ready.get(ref.shard)
        if d is None:
            d = self._extract(ref.shard, cache)
        return os.path.join(d, *ref.member.name.split("/"))

    def _extract(self, i: int, cache: FileCache) -> str:
        with self._guard:
            lock = self._locks.setdefault(i, threading.Lock())
        with lock:  # the prefetch threads wanting one shard extract it once
            if i in self._ready:
                return self._ready[i]
            final = self.extracted_dir(cache, i)
            if not final.is_dir():
                self._fetch_and_extract(i, cache, final)
            self._ready[i] = str(final)
            return str(final)

    def _fetch_and_extract(self, i: int, cache: FileCache, final: Path) -> None:
        s: ShardInfo = self.manifest.shards[i]
        vp = self.shard_path(i)
        try:
            local = cache.get(vp, size=s.bytes, mtime=s.mtime)
        except VolumeNotFoundError:
            raise ShardError(
                f"shard {vp} named by the manifest is missing on the volume; pack the source again"
            ) from None
        members = [r.member for r in self.members if r.shard == i]
        members.sort(key=lambda m: m.offset)
        fd, st = open_read(local, str(cache.root / "files"))
        try:
            if st.st_size != s.bytes:
                raise ShardError(
                    f"shard {vp} is {st.st_size} bytes but its index says {s.bytes} (truncated or replaced "
                    f"on the volume); the packed folder is damaged: pack the source again"
                )
            crc = 0
            for off in range(0, s.bytes, _CHUNK):
                crc = zlib.crc32(os.pread(fd, _CHUNK, off), crc)
            if crc != s.crc32:
                raise ShardError(
                    f"shard {vp} does not match the checksum in its index (changed or damaged on the "
                    f"volume); the packed folder is damaged: pack the source again"
                )
            final.parent.mkdir(parents=True, exist_ok=True)
            sweep_stale(str(final.parent), remove_dirs=True)
            tmp = final.parent / temp_name(final.name)
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                _extract_members(fd, members, tmp)
                try:
                    os.rename(tmp, final)
                except OSError:  # another process extracted it first: use that one
                    if not final.is_dir():
                        raise
                    shutil.rmtree(tmp, ignore_errors=True)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        finally:
            os.close(fd)


def _extract_members(fd: int, members: list[Member], into: Path) -> None:
    """Copy each member's byte range of the open shard into its own file below *into* (a fresh
    folder of ours; names were checked when the index was read), stamped with its source mtime."""
    into.mkdir()
    made = {""}
    for m in members:
        parent, _, _ = m.name.rpartition("/")
        if parent not in made:
            os.makedirs(os.path.join(into, *parent.split("/")), exist_ok=True)
            made.add(parent)
        path = os.path.join(into, *m.name.split("/"))
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            left, off = m.size, m.offset
            while left:
                n = os.copy_file_range(fd, out, left, off) if hasattr(os, "copy_file_range") else 0
                if n <= 0:
                    chunk = os.pread(fd, min(_CHUNK, left), off)
                    if not chunk:
                        raise ShardError(f"member {m.name!r} runs past the end of its shard; pack the source again")
                    os.write(out, chunk)
                    n = len(chunk)
                left, off = left - n, off + n
            ns = int(m.mtime * 1e9)
            os.utime(out, ns=(ns, ns))
        finally:
            os.close(out)


def prune_extracted(cache: FileCache, keep: list[PackedFolder] | tuple[PackedFolder, ...] = ()) -> int:
    """Remove extracted shard folders under the cache except those of the folders in *keep*; returns
    how many. Unsafe while a dataset over a removed shard still runs (its yielded paths go away)."""
    root = cache.root / "shards"
    keepers = {str(f.extracted_dir(cache, i)) for f in keep for i in range(len(f.manifest.shards))}
    removed = 0
    for dirpath, dirnames, _ in os.walk(root):
        for name in list(dirnames):
            if name.startswith("shard-"):
                dirnames.remove(name)
                full = os.path.join(dirpath, name)
                if full not in keepers:
                    shutil.rmtree(full, ignore_errors=True)
                    removed += 1
    return removed
