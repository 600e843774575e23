"""The files a dataset reads: a selection (folders, files, globs, local folders, packed folders)
resolved once into sorted :class:`~air_magics.volumes.resolved.VolumeFile` values.

Why a module of its own: the listing is where each file is parsed and located, once; every later
layer (the cache, the prefetcher, the loader) only carries the values made here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..io.gcpause import gc_paused
from ..shards.packed_folder import PackedFolder, open_packed
from ..volumes.filelist import FileList
from ..volumes.glob import filter_glob, filter_pattern, split_glob
from ..volumes.local import InPlace, local_files, local_source
from ..volumes.path import VolumePath
from ..volumes.resolved import VolumeFile
from ..volumes.store import VolumeStore
from ..volumes.walk import Entry

__all__ = ["list_files", "shard_groups"]


def list_files(
    paths: Sequence[str | VolumePath], *, pattern: str | None, recursive: bool, store: VolumeStore, stat: bool = True
) -> Sequence[VolumeFile]:
    """Every file the selection names, sorted by volume path, each once. ``stat=False`` lists
    names only on local and mounted volumes (one readdir per folder; versions are then unknown,
    ``None``, until a validation or a fetch finds them); one plain volume folder is then kept as
    a compact :class:`~air_magics.volumes.filelist.FileList` (the common case, and the one that
    grows to millions of files)."""
    opened: dict[str, PackedFolder | None] = {}  # (a packed folder's manifest and indexes are read once)
    if not stat and len(paths) == 1:
        if (compact := _folder_names(paths[0], pattern, recursive, store, opened)) is not None:
            return compact
    out: dict[str, VolumeFile] = {}
    for p in paths:
        if (local := local_source(p)) is not None:  # a local folder or file:// URL: no cache copy
            for key, loc, e in local_files(local, recursive=recursive, pattern=pattern):
                out[key] = VolumeFile(key, loc, e.size, e.mtime, key, InPlace(key))
            continue
        vp = VolumePath.parse(os.fspath(p) if isinstance(p, os.PathLike) else p)
        fixed, pat = split_glob(vp.parts)
        base = VolumePath(vp.catalog, vp.schema, vp.volume, fixed)
        # a packed folder lists its members, named as in the source
        packed = opened.pop(str(base)) if str(base) in opened else open_packed(store, base)
        members = {m.member.name: m for m in packed.members} if packed is not None else {}
        entries = (
            [Entry(m.member.name, m.member.size, m.member.mtime) for m in packed.members]
            if packed is not None
            else store.entries(base, recursive=recursive or bool(pat), with_dirs=False, stat=stat)
        )
        entries = filter_pattern(filter_glob(entries, pat), pattern)
        loc, base_key = store.locate(base), str(base)
        with gc_paused():  # a few objects per file, none in a cycle (see io/gcpause.py)
            for e in entries:
                # a listing's names are plain relative paths: joined as strings (3,000 VolumePath
                # objects cost ~0.1 s); a manifest's member names are data, validated by VolumePath
                key = (
                    (str(base.joinpath(e.rel)) if packed is not None else f"{base_key}/{e.rel}") if e.rel else base_key
                )
                out[key] = VolumeFile(key, loc.join(e.rel), e.size, e.mtime, member=members.get(e.rel))
    return [out[k] for k in sorted(out)]


def _folder_names(
    p: str | VolumePath,
    pattern: str | None,
    recursive: bool,
    store: VolumeStore,
    opened: dict[str, PackedFolder | None],
) -> FileList | None:
    """*p*'s files as a :class:`FileList` when it is a plain folder of a local or mounted volume
    (no glob in the path, not packed), else ``None`` (then :func:`list_files` makes each file; the
    packed folder it opened is left in *opened*)."""
    if local_source(p) is not None:
        return None
    vp = VolumePath.parse(os.fspath(p) if isinstance(p, os.PathLike) else p)
    if split_glob(vp.parts)[1]:
        return None
    if (opened.setdefault(str(vp), open_packed(store, vp))) is not None:
        return None
    names = store.names(vp, recursive=recursive)
    if names is None:
        return None
    if pattern:
        names = filter_pattern(names, pattern, rel=str)
    return FileList(str(vp), store.locate(vp), names)


def shard_groups(files: list[VolumeFile]) -> list[int] | None:
    """Each file's shard (numbered across packed folders) when every file is a packed member, else None."""
    if not files or any(f.member is None or not hasattr(f.member, "shard") for f in files):
        return None
    ids: dict[tuple[str, int], int] = {}
    return [ids.setdefault((str(f.member.folder.path), f.member.shard), len(ids)) for f in files]
