"""Reading a packed folder: validate its manifest and indexes, serve members as local files.

A shard is fetched from the volume with parallel range reads straight into its extracted folder
``<cache root>/shards/<catalog>/<schema>/<volume>/<packed folder>/<shard>-<crc32>/``, one file per
member, each published as soon as its bytes are in and verified (:mod:`.fetch`: the size is checked
first; each member's tar header and CRC-32 before it is published; the shard's CRC-32 when the last
byte arrives, before the last member is served). Members are served as paths
into that folder, so ``open(p, "rb")``, ``Image.open``, ``torch.load`` and ``np.load`` work on
them, and the file name is the original's.

Lifetime of a yielded path: the extracted folder is never modified or removed while a packed
folder is read (a shard that fails a check keeps the verified members it published; the read of
the others fails);
it is named after the shard's content (digest of its members + CRC-32), so it cannot go stale, and
it is reused by later epochs and other processes. It is removed only by :func:`prune_extracted`
(explicitly, or with the cache directory).

Disk: extracted folders live under the cache root but are *not* counted against the
:class:`~air_magics.cache.FileCache` byte limit, and LRU eviction never removes them: the cache
accounts single files keyed by volume path and has no entry kind for a folder whose files a
running epoch hands out; :func:`prune_extracted` frees them. The shard itself is not kept as a
cache entry (its bytes are stored once, as the members).
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ShardError, SpecialFileError, VolumeNotFoundError
from ..io.retry import retry_call
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .fetch import SIDECARS, Extractor
from .format import MANIFEST_NAME, Manifest, Member, load_index, load_manifest

if TYPE_CHECKING:
    from ..cache import FileCache

__all__ = ["PackedFolder", "MemberRef", "open_packed", "is_packed", "prune_extracted"]

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


def _check_no_file_is_a_folder(path: VolumePath, refs: list[MemberRef]) -> None:
    """A member named like another member's folder (``a`` and ``a/b``) cannot be extracted (and no
    real folder holds both): refuse the packed folder by name."""
    folders: set[str] = set()
    for r in refs:
        p = r.member.name
        while True:
            p, sep, _ = p.rpartition("/")
            if not sep or p in folders:
                break
            folders.add(p)
    clash = next((r.member.name for r in refs if r.member.name in folders), None)
    if clash is not None:
        raise ShardError(
            f"packed folder {path}: member {clash!r} is both a file and the folder of other members; "
            f"the index is damaged or crafted: pack the source again"
        )


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
        ex = self.folder._extractor
        return None if ex is None else ex.ready(self.shard, self.member.name)


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
            except (IsADirectoryError, NotADirectoryError, SpecialFileError):
                raise ShardError(f"index {where} is not a regular file; pack the source again") from None
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
        _check_no_file_is_a_folder(path, refs)
        self.members: list[MemberRef] = refs
        self.shard_members: list[list[Member]] = [sorted(ms, key=lambda m: m.offset) for ms in per_shard]
        # the shard an unshuffled epoch needs after shard i: that of the member after i's last, by name
        last = {i: max((m.name for m in ms), default="") for i, ms in enumerate(per_shard)}
        pos = {(r.shard, r.member.name): k for k, r in enumerate(refs)}
        self.next_shard: list[int] = []
        for i in range(len(shards)):
            k = pos.get((i, last[i]), len(refs)) + 1
            self.next_shard.append(refs[k].shard if k < len(refs) and refs[k].shard != i else -1)
        self._reset()

    def _reset(self) -> None:
        self._extractor: Extractor | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_extractor")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def __repr__(self) -> str:
        m = self.manifest
        return f"PackedFolder({str(self.path)!r}, files={m.files}, shards={len(m.shards)}, generation={m.generation})"

    def shard_path(self, i: int) -> VolumePath:
        return self.path.joinpath(self.manifest.shards[i].name)

    def extractor(self, cache: FileCache) -> Extractor:
        """This process's fetcher for the folder, extracting under *cache*'s root."""
        ex = self._extractor
        if ex is None or ex.root != cache.root or ex.pid != os.getpid():  # a forked worker starts afresh
            ex = self._extractor = Extractor(self, cache.root)
        return ex

    def extracted_dir(self, cache: FileCache, i: int) -> Path:
        return self.extractor(cache).final(i)

    def local_path(self, ref: MemberRef, cache: FileCache) -> str:
        """A local path holding *ref*'s bytes, as soon as they are in (its shard fetched on first use)."""
        return self.extractor(cache).path(ref.shard, ref.member.name)


def prune_extracted(cache: FileCache, keep: list[PackedFolder] | tuple[PackedFolder, ...] = ()) -> int:
    """Remove extracted shard folders under the cache except those of the folders in *keep*; returns
    how many. Unsafe while a dataset over a removed shard still runs (its yielded paths go away)."""
    root = cache.root / "shards"
    keepers = {str(f.extracted_dir(cache, i)) for f in keep for i in range(len(f.manifest.shards))}

    def base(full: str) -> str:  # the extracted folder a sidecar (lock, marker, staging) belongs to
        for suffix in SIDECARS:
            if full.endswith(suffix):
                return full[: -len(suffix)]
        return full

    removed = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:  # markers first: a folder without its marker is fetched again
            full = os.path.join(dirpath, name)
            if name.startswith("shard-") and base(full) != full and base(full) not in keepers:
                try:
                    os.unlink(full)
                except OSError:
                    pass
        for name in list(dirnames):
            if name.startswith("shard-"):
                dirnames.remove(name)
                full = os.path.join(dirpath, name)
                if base(full) not in keepers:
                    shutil.rmtree(full, ignore_errors=True)
                    removed += base(full) == full
    return removed
