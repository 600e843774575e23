"""Reading a packed folder: validate its manifest and indexes, serve members as bytes or local files.

Two ways to a member, both verified against the index before anything is handed out:

- **By offset** (:meth:`MemberRef.read_bytes`, :meth:`MemberRef.open`; :mod:`.shard_reader`): the shard is
  fetched whole into the cache once, as one file ``<cache root>/files/<catalog>/<schema>/<volume>/
  <packed folder>/<shard>.tar@<crc32>``, and members are sliced out of it by offset: no local file
  per member, and a member is served as soon as its own bytes are in. This is the fast way.
- **As a path** (:meth:`MemberRef.local_path`; :mod:`.fetch`): the shard is extracted into the folder
  ``.../<shard>@<crc32>/``, one file per member with the original's name, so ``open(p, "rb")``,
  ``Image.open``, ``torch.load`` and ``np.load`` work on it. Costs a local file create per member.

Cache entries: a cached shard and an extracted folder are each one entry of the
:class:`~air_magics.cache.FileCache` (:meth:`~air_magics.cache.claims.Claims.claim`), counted against
its byte limit and evicted as a unit, least recently used first, never while pinned: reading from
one renews its pin, so a path or map handed out stays valid for ``pin_seconds`` as a file's does.
When the cache is full of entries in use, a shard is served from a copy in the process's overflow
folder, removed once ``overflow_files`` more members were handed out by that process. They are
named after the shard's content (its CRC-32), so they cannot go stale, and are reused by later
epochs and other processes. ``FileCache.clear()`` and :func:`prune_extracted` remove them too.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import ShardError, SpecialFileError, VolumeNotFoundError
from ..io.pools import job_pool, threads
from ..io.retry import retry_call
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .fetch import SIDECARS, Extractor
from .format import MANIFEST_NAME, Manifest, Member, load_index, load_manifest
from .shard_reader import SIDECARS as CACHED_SIDECARS
from .shard_reader import SUFFIXES, ShardReader
from .shard_source import ShardSource
from .slices import MemberSlice

if TYPE_CHECKING:
    from ..cache import FileCache

__all__ = ["PackedFolder", "MemberRef", "open_packed", "is_packed", "prune_extracted"]

_INDEX_THREADS = threads("stream")  # shard indexes loaded at once


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
    """One member of a packed folder, as the dataset holds it (pickles with its folder).

    Reading it (each verified against the index before it is handed out; a damaged shard is a
    :class:`~air_magics.errors.ShardError` naming the shard and the fix, never another member's bytes):

    - :meth:`read_bytes`: the bytes, sliced from the cached shard (fetched whole on first use);
    - :meth:`open`: a read-only, seekable file object over them (``name``: the member's name);
    - :meth:`local_path`: a local file with them (the shard extracted, one file per member).

    Decoding without a local file::

        from PIL import Image
        img = Image.open(ref.open(cache)).convert("RGB")           # PIL reads it as a file
        img = Image.open(io.BytesIO(ref.read_bytes(cache)))        # or from the bytes
        t = torchvision.io.decode_image(torch.frombuffer(bytearray(ref.read_bytes(cache)), dtype=torch.uint8))
        x = torch.load(ref.open(cache)); a = np.load(ref.open(cache))
    """

    folder: PackedFolder
    shard: int
    member: Member

    @property
    def name(self) -> str:
        return self.member.name

    def read_bytes(self, cache: FileCache) -> bytes:
        """The member's bytes, as soon as they are in (its shard fetched into *cache* on first use)."""
        return self.folder.read_bytes(self, cache)

    def open(self, cache: FileCache) -> IO[bytes]:
        """A read-only file object over the member's bytes in the cached shard (seek, tell, read,
        readinto; ``name`` is the member's name); nothing is copied until it is read."""
        return self.folder.open_member(self, cache)

    def ready_bytes(self) -> bytes | None:
        """The bytes if this process has them verified in its cached shard already (no wait, no
        fetch; a copy out of the page cache), else None: the warm path."""
        return self.folder.ready_bytes(self)

    def read_slice(self, cache: FileCache, item: int) -> MemberSlice | bytes:
        """:meth:`read_bytes` for a DataLoader worker: where the verified bytes lie in the cached
        shard (a :class:`~.slices.MemberSlice`, *item* the dataset index), for the training loop's
        process to copy out itself instead of receiving them through a pipe; bytes where the
        shard found no room in the cache (read from the volume)."""
        return self.folder.reader(cache).read_slice(self.shard, self.member, item)

    def ready_slice(self, item: int) -> MemberSlice | bytes | None:
        """:meth:`read_slice` when this process has the bytes verified already (no wait), else None."""
        rd = self.folder.ready_reader()
        return None if rd is None else rd.ready_slice(self.shard, self.member, item)

    def local_path(self, cache: FileCache) -> str:
        """A local file holding the member's bytes (its shard extracted under *cache* on first use)."""
        return self.folder.local_path(self, cache)

    def ready(self) -> str | None:
        """The local path if this process has its shard extracted already (no I/O), else None."""
        return self.folder.ready_path(self)


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

        with job_pool("stream", "air-shard-index", min(_INDEX_THREADS, len(shards))) as pool:
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
        # the shard an unshuffled epoch (name order) first asks for after shard i: shards in the order
        # of their first member by name (packed in name order: the shard holding the names after i's;
        # mixed: the order the epoch meets them)
        seen: dict[int, None] = {}
        for r in refs:
            seen.setdefault(r.shard)
        seq = list(seen)
        self.next_shard: list[int] = [-1] * len(shards)
        for a, b in zip(seq, seq[1:], strict=False):
            self.next_shard[a] = b
        self.source = ShardSource(store, path, tuple(shards), self.shard_members, self.next_shard)
        self._reset()

    def _reset(self) -> None:
        self._extractor: Extractor | None = None
        self._reader: ShardReader | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_extractor")
        state.pop("_reader")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def __repr__(self) -> str:
        m = self.manifest
        return f"PackedFolder({str(self.path)!r}, files={m.files}, shards={len(m.shards)}, generation={m.generation})"

    def shard_path(self, i: int) -> VolumePath:
        return self.source.shard_path(i)

    def extractor(self, cache: FileCache) -> Extractor:
        """This process's fetcher for the folder, extracting under *cache*'s root."""
        ex = self._extractor
        if ex is None or ex.root != cache.root or ex.pid != os.getpid():  # a forked worker starts afresh
            ex = self._extractor = Extractor(self.source, cache)
        return ex

    def reader(self, cache: FileCache) -> ShardReader:
        """This process's reader of members by offset, caching shards under *cache*'s root."""
        rd = self._reader
        if rd is None or rd.root != cache.root or rd.pid != os.getpid():  # a forked worker starts afresh
            rd = self._reader = ShardReader(self.source, cache)
        return rd

    def cached_shard(self, cache: FileCache, i: int) -> Path:
        """Where shard *i* is cached whole under *cache* (present once fetched)."""
        return Path(self.reader(cache).file(i))

    def plan_reads(self, cache: FileCache, shards: Sequence[int], *, paths: bool = False) -> None:
        """Tell this process the order it will need shards in (for a stream's items in order, the
        shards of their members: ``shard_sequence``; repeats are ignored): fetches then run
        ``PLANNED_AHEAD`` shards ahead in that order, so a shuffled epoch's next shards are in
        before it gets there. Plans the reads by offset, or with *paths* the extraction
        (:meth:`MemberRef.local_path`): plan the one the epoch uses, or both would fetch."""
        if paths:
            self.extractor(cache).plan(shards)
        else:
            self.reader(cache).plan(shards)

    def read_bytes(self, ref: MemberRef, cache: FileCache) -> bytes:
        """*ref*'s bytes, sliced from its cached shard (see :meth:`MemberRef.read_bytes`)."""
        return self.reader(cache).read(ref.shard, ref.member)

    def open_member(self, ref: MemberRef, cache: FileCache) -> IO[bytes]:
        """A read-only file object over *ref*'s bytes in its cached shard (see :meth:`MemberRef.open`)."""
        return self.reader(cache).open(ref.shard, ref.member)

    def ready_bytes(self, ref: MemberRef) -> bytes | None:
        """*ref*'s bytes when this process has them verified already (no wait, no fetch), else None."""
        rd = self.ready_reader()
        return None if rd is None else rd.ready(ref.shard, ref.member)

    def ready_reader(self) -> ShardReader | None:
        """This process's reader by offset if it has one (no reader is made here)."""
        rd = self._reader
        return None if rd is None or rd.pid != os.getpid() else rd

    def ready_path(self, ref: MemberRef) -> str | None:
        """*ref*'s extracted path when this process has it already (no I/O), else None."""
        ex = self._extractor
        return None if ex is None or ex.pid != os.getpid() else ex.ready(ref.shard, ref.member.name)

    def extracted_dir(self, cache: FileCache, i: int) -> Path:
        return self.extractor(cache).final(i)

    def local_path(self, ref: MemberRef, cache: FileCache) -> str:
        """A local path holding *ref*'s bytes, as soon as they are in (its shard fetched on first use)."""
        return self.extractor(cache).path(ref.shard, ref.member.name)


def prune_extracted(cache: FileCache, keep: list[PackedFolder] | tuple[PackedFolder, ...] = ()) -> int:
    """Remove cached shards and extracted shard folders in *cache* except those of the folders in
    *keep*; returns how many. Unsafe while a dataset over a removed shard still runs with paths
    (its yielded paths go away; bytes already mapped stay readable)."""
    keepers = {
        f.source.cache_key(i, extracted=x) for f in keep for i in range(len(f.manifest.shards)) for x in (False, True)
    }
    gone = cache.claims.drop_derived(keepers)
    for key in gone:  # their fetch locks and markers
        for suffix in (*SIDECARS, *CACHED_SIDECARS):
            try:
                os.unlink(cache.slot(key) + suffix)
            except OSError:
                pass
    return len(gone) + _prune_legacy(cache, keep)


def _prune_legacy(cache: FileCache, keep: Sequence[PackedFolder]) -> int:
    """Cached shards and extracted folders an earlier version kept, uncounted, under ``<root>/shards``."""
    root = cache.root / "shards"
    keepers = {str(f.source.local_base(cache.root, i)) for f in keep for i in range(len(f.manifest.shards))}
    suffixes = SUFFIXES + SIDECARS  # longest first within each: ".tar.part" before ".tar"

    def base(full: str) -> str:  # the shard a cached file, extracted folder or sidecar belongs to
        for suffix in suffixes:
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
                removed += full.endswith(".tar")
        for name in list(dirnames):
            if name.startswith("shard-"):
                dirnames.remove(name)
                full = os.path.join(dirpath, name)
                if base(full) not in keepers:
                    shutil.rmtree(full, ignore_errors=True)
                    removed += base(full) == full
    return removed
