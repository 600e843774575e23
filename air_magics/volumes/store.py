"""``VolumeStore``: resolve volume paths to storage and list, stat, walk and open them.

Resolution per volume, first match wins:

1. a volume registered to an fsspec URL (``register``), persisted under ``$AIR_HOME``;
1b. a volume of the connected Unity Catalog (``catalog_volumes``): its ``storage_location``;
2. the real ``/Volumes`` mount when one is present (Databricks, any FUSE mount);
3. the embedded root ``$AIR_VOLUMES_ROOT`` or ``$AIR_HOME/volumes``.

Mounted and embedded volumes are plain directories ``<root>/<catalog>/<schema>/<volume>`` and take
the fast OS paths; ``file://`` registrations do too. Every resolved local path is checked to stay
inside its volume after symlinks are resolved.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import VolumeExistsError, VolumeNotFoundError, VolumePathError
from ..io.confined import is_within, open_file, real_root
from ..io.confined import makedirs as confined_makedirs
from ..io.leftovers import is_leftover
from ..settings import embedded_volumes_root, registry_file
from . import catalog_volumes, detect
from .glob import filter_glob, filter_pattern, split_glob
from .location import FileInfo, Location, VolumeInfo, fs_mtime
from .objectfs import fs_entries, open_url
from .path import VolumePath, is_name
from .registry import RegistryEntry, VolumeRegistry, check_options, normalise_url
from .walk import Entry, scan_local, scan_names

if TYPE_CHECKING:
    from .filestats import FileStats

_LEVELS = ("catalog", "schema", "volume")

__all__ = ["VolumeStore"]


class VolumeStore:
    """Resolves ``/Volumes/...`` paths to storage. Cheap to create; holds no open resources.

    ``root`` overrides the directory holding ``<catalog>/<schema>/<volume>`` (else the mount or the
    embedded root); ``registry`` overrides the registry file; ``workers`` bounds parallel listing.
    Code that just needs "the volumes" calls :meth:`shared`: one store per process and settings.
    """

    _shared: dict[tuple[object, ...], VolumeStore] = {}

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        registry: str | os.PathLike[str] | None = None,
        workers: int = 128,
    ) -> None:
        if root is not None:
            self.root, self.kind, self.why = Path(root), "embedded", "root given to VolumeStore"
        else:  # a mount counts only if it looks like one (probed once per settings: volumes.detect)
            mount, self.why = detect.volumes_mount_status()
            self.root, self.kind = (mount, "mount") if mount else (embedded_volumes_root(), "embedded")
        self.registry = VolumeRegistry(registry or registry_file())
        self.workers = workers

    @classmethod
    def shared(cls) -> VolumeStore:
        """The process's store for the current settings: made once, made again when ``AIR_HOME``,
        ``AIR_VOLUMES_ROOT`` or ``AIR_VOLUMES_MOUNT`` change or a mount/unmount ran (a dict lookup)."""
        detect.volumes_mount_status()  # a "no mount" answer is looked at again now and then (see there)
        key = (cls, *detect.settings_key(), detect.generation())
        store = cls._shared.get(key)
        if store is None:
            if len(cls._shared) > 16:  # settings changed many times (tests): keep the cache small
                cls._shared.clear()
            store = cls._shared[key] = cls()
        return store

    def __repr__(self) -> str:
        return f"VolumeStore(root={str(self.root)!r}, kind={self.kind!r})"

    # -- volumes --------------------------------------------------------------------------------
    def volumes(self) -> list[VolumeInfo]:
        """Every volume under the root plus every registered one, sorted by id."""
        return self.scan_volumes()[0]

    def scan_volumes(self) -> tuple[list[VolumeInfo], list[str]]:
        """``(volumes, notes)``: like :meth:`volumes`, plus one note per folder under the root that is
        skipped (a name that is not an identifier, a link leading outside the root, unreadable)."""
        found: dict[str, VolumeInfo] = {}
        notes: list[str] = []
        root = real_root(str(self.root))

        def children(d: Path, depth: int) -> list[Path]:
            try:
                items = sorted(p for p in d.iterdir() if p.is_dir() and not is_leftover(p.name))
            except OSError as exc:
                notes.append(f"{d.relative_to(self.root)}: cannot be listed ({exc.strerror or exc})")
                return []
            out = []
            for p in items:
                rel = p.relative_to(self.root).as_posix()
                if not is_name(p.name):
                    notes.append(f"{rel}: skipped, {p.name!r} is not a valid {_LEVELS[depth]} name")
                elif not is_within(os.path.realpath(p), root):
                    notes.append(f"{rel}: skipped, it links outside the volumes root")
                else:
                    out.append(p)
            return out

        if self.root.is_dir():
            for cat in children(self.root, 0):
                for sch in children(cat, 1):
                    for vol in children(sch, 2):
                        vid = f"{cat.name}.{sch.name}.{vol.name}"
                        found[vid] = VolumeInfo(vid, self.kind, str(vol))
        found.update((v.volume_id, v) for v in catalog_volumes.scan(notes))  # a connected catalog's
        for vid, entry in self.registry.entries().items():
            found[vid] = VolumeInfo(vid, "fsspec", entry.url, entry.endpoint, entry.storage_options())
        return [found[k] for k in sorted(found)], notes

    def volume_info(self, volume: str | VolumePath) -> VolumeInfo:
        vp = VolumePath.parse(volume).root
        entry = self.registry.entry(vp.volume_id)
        if entry is not None:
            return VolumeInfo(vp.volume_id, "fsspec", entry.url, entry.endpoint, entry.storage_options())
        if (in_catalog := catalog_volumes.volume_info(vp)) is not None:
            return in_catalog
        d = self._volume_dir(vp)
        found = d.is_dir()  # one stat: a round trip on a mounted volume
        if found and not is_within(os.path.realpath(d), real_root(str(self.root))):
            raise VolumePathError(
                f"volume {vp.volume_id!r} is a link leading outside the volumes root {str(self.root)!r}; "
                f"refusing it: replace the link with a folder, or register the storage with "
                f"`%air_volume register {vp.volume_id} file:///PATH`"
            )
        if not found:
            raise VolumeNotFoundError(
                f"volume {vp.volume_id!r} does not exist (looked in {d}){self._near_volume(vp.volume_id)}; "
                f"create it with `%air_volume create {vp.volume_id}` or register storage with "
                f"`%air_volume register {vp.volume_id} URL`"
            )
        return VolumeInfo(vp.volume_id, self.kind, str(d))

    def _near_volume(self, volume_id: str) -> str:
        """`` (did you mean main.demo.images?)`` for a misspelled volume id, or ""."""
        from ..suggest import closest

        try:
            near = closest(volume_id, [v.volume_id for v in self.volumes()])
        except OSError:  # the root cannot be listed: no hint rather than a second error
            return ""
        return f" (did you mean {' or '.join(near)}?)" if near else ""

    def create(self, volume: str | VolumePath, *, exist_ok: bool = False) -> VolumeInfo:
        """Create a volume under the root (a directory); its names follow the table names' rule."""
        vp = VolumePath.parse_new_volume(volume)
        if self.registry.get(vp.volume_id) is not None:
            if exist_ok:
                return self.volume_info(vp)
            raise VolumeExistsError(
                f"volume {vp.volume_id!r} is registered to {self.registry.get(vp.volume_id)}; unregister it first"
            )
        d = self._volume_dir(vp)
        if d.is_dir() and not exist_ok:
            raise VolumeExistsError(
                f"volume {vp.volume_id!r} already exists at {d}; pick another name or pass exist_ok=True"
            )
        d.mkdir(parents=True, exist_ok=True)
        return VolumeInfo(vp.volume_id, self.kind, str(d))

    def register(
        self,
        volume: str | VolumePath,
        url: str,
        *,
        endpoint: str | None = None,
        profile: str | None = None,
        options: dict[str, Any] | None = None,
        check: bool = True,
    ) -> VolumeInfo:
        """Register a volume backed by an fsspec URL (``s3://``, ``gs://``, ``abfs://``, ``file://``,
        ``memory://``...). *endpoint* (an S3-compatible server), *profile* (an AWS profile) and
        *options* (backend options, no secrets) are stored with it; credentials never are (the
        backend's chain finds them: for S3 the environment, a profile, an instance role).

        A bucket store is checked first (``check``): one listing proves the bucket reachable and
        listable, else a one-line error says why (no credentials, forbidden, unreachable, no such
        bucket: :mod:`air_magics.volumes.access`) and nothing is registered. ``check=False``
        registers offline; other URLs get their folder made (best effort)."""
        from .access import BUCKET_SCHEMES, check_access

        vp = VolumePath.parse_new_volume(volume)
        entry = RegistryEntry(normalise_url(url), endpoint or None, profile or None, dict(options or {}))
        check_options(entry.url, entry.endpoint, entry.profile, entry.options)
        if entry.scheme in BUCKET_SCHEMES:  # a bucket is checked, never made
            if check:
                check_access(entry.url, entry.storage_options())
            self.registry.set(vp.volume_id, entry)
        else:
            fs, base = open_url(entry.url, entry.storage_options())
            self.registry.set(vp.volume_id, entry)
            try:
                fs.makedirs(base, exist_ok=True)
            except (OSError, NotImplementedError):  # stores without directories to make
                pass
        return VolumeInfo(vp.volume_id, "fsspec", entry.url, entry.endpoint, entry.storage_options())

    def unregister(self, volume: str | VolumePath) -> bool:
        return self.registry.remove(VolumePath.parse_volume(volume).volume_id)

    # -- paths ----------------------------------------------------------------------------------
    def _volume_dir(self, vp: VolumePath) -> Path:
        return self.root / vp.catalog / vp.schema / vp.volume

    def locate(self, path: str | VolumePath) -> Location:
        """Concrete storage location of *path*; raises if the volume is missing or the path escapes it."""
        vp = VolumePath.parse(path)
        info = self.volume_info(vp)
        if info.kind in ("fsspec", catalog_volumes.KIND):
            fs, base = open_url(info.location, info.options)
            if fs.protocol == "file" or "file" in tuple(fs.protocol):
                return self._confined(Path(base), vp)
            return Location(f"{base.rstrip('/')}/{vp.relpath}".rstrip("/") if vp.parts else base, fs)
        return self._confined(Path(info.location), vp)

    def _confined(self, vol_dir: Path, vp: VolumePath) -> Location:
        """Early, friendly check; the binding one is made again at every open (``io.confined``)."""
        target = vol_dir.joinpath(*vp.parts)
        if not _stays_inside(str(vol_dir), vp.parts):
            raise VolumePathError(
                f"{str(vp)!r} resolves outside its volume (through a symlink); "
                f"refusing to follow it: remove the link or use a path inside the volume"
            )
        return Location(str(target), root=str(vol_dir))

    # -- files ----------------------------------------------------------------------------------
    def exists(self, path: str | VolumePath) -> bool:
        loc = self.locate(path)
        return loc.exists()

    def stat(self, path: str | VolumePath) -> FileInfo:
        vp = VolumePath.parse(path)
        loc = self.locate(vp)
        try:
            if loc.is_local:
                st = os.stat(loc.path)
                return FileInfo(vp, st.st_size, st.st_mtime, os.path.isdir(loc.path))
            info = loc.fs.info(loc.path)
        except FileNotFoundError:
            raise VolumeNotFoundError(
                f"{str(vp)!r} does not exist; check the path with `%air_volume ls {vp.parent}`"
            ) from None
        return FileInfo(vp, int(info.get("size") or 0), fs_mtime(info), info.get("type") == "directory")

    def open(self, path: str | VolumePath, mode: str = "rb", **kwargs: Any) -> IO[Any]:
        """Open a file in a volume; write modes create parent folders."""
        loc = self.locate(path)
        if loc.is_local:  # confined at the moment of use: no link out of the volume, no FIFO
            return open_file(loc.path, loc.root, mode, **kwargs)
        return loc.fs.open(loc.path, mode, **kwargs)

    def makedirs(self, path: str | VolumePath) -> None:
        loc = self.locate(path)
        if loc.is_local:
            confined_makedirs(loc.path, loc.root)
        else:
            loc.fs.makedirs(loc.path, exist_ok=True)

    def ls(self, path: str | VolumePath, *, recursive: bool = False, pattern: str | None = None) -> list[FileInfo]:
        """Entries of a folder (files and folders), or every file below it with ``recursive``.

        ``pattern`` is a glob matched against the path relative to *path* or the file name
        (``*.jpg``, ``train/**/*.png``). A glob in *path* itself is expanded too.
        """
        base, rows = self.listing(path, recursive=recursive, pattern=pattern)
        return [FileInfo(base.joinpath(e.rel), e.size, e.mtime, e.is_dir) for e in rows]

    def listing(
        self,
        path: str | VolumePath,
        *,
        recursive: bool = False,
        pattern: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> tuple[VolumePath, list[Entry]]:
        """What :meth:`ls` lists, as raw rows (``Entry.rel``) and the folder they are relative to
        (*path*, or a glob's fixed part): no :class:`FileInfo` per file, for summaries of millions."""
        vp = VolumePath.parse(path)
        prefix, pat = split_glob(vp.parts)
        if pat:  # the matches, a matched folder with every file below it
            base = VolumePath(vp.catalog, vp.schema, vp.volume, prefix)
            return base, filter_glob(self.entries(base, recursive=True, progress=progress), pat)
        return vp, filter_pattern(self.entries(vp, recursive=recursive, progress=progress), pattern)

    def glob(self, pattern: str | VolumePath) -> list[FileInfo]:
        """Files matching a glob path; a matched folder contributes every file below it."""
        vp = VolumePath.parse(pattern)
        prefix, pat = split_glob(vp.parts)
        base = VolumePath(vp.catalog, vp.schema, vp.volume, prefix)
        return [
            FileInfo(base.joinpath(e.rel), e.size, e.mtime)
            for e in filter_glob(self.entries(base, recursive=True), pat)
        ]

    def walk(self, path: str | VolumePath) -> Iterator[tuple[VolumePath, list[str], list[str]]]:
        """Like ``os.walk``: ``(folder, subfolder names, file names)`` top-down."""
        vp = VolumePath.parse(path)
        tree: dict[str, tuple[list[str], list[str]]] = {"": ([], [])}
        for e in self.entries(vp, recursive=True, with_dirs=True):
            parent, _, name = e.rel.rpartition("/")
            tree.setdefault(parent, ([], []))[0 if e.is_dir else 1].append(name)
            if e.is_dir:
                tree.setdefault(e.rel, ([], []))
        for rel in sorted(tree):
            dirs, files = tree[rel]
            yield (vp.joinpath(rel) if rel else vp), sorted(dirs), sorted(files)

    def entries(
        self,
        path: str | VolumePath,
        *,
        recursive: bool,
        with_dirs: bool | None = None,
        stat: bool = True,
        skipped: list[tuple[str, str]] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[Entry]:
        """Raw listing relative to *path* (``Entry.rel``); a file lists as one entry with ``rel == ''``.
        ``stat=False`` skips the per-file stat on local/mounted volumes (sizes are then ``None``).
        ``progress(n)`` hears the entries found so far on long local or mounted listings.

        Entries that cannot be data (symlink loops, links out of the volume, FIFOs, sockets,
        devices, unreadable folders) are left out and reported by name: appended to *skipped* as
        ``(rel, reason)`` when given, else logged as one warning on the ``air_magics`` logger."""
        vp = VolumePath.parse(path)
        loc = self.locate(vp)
        with_dirs = (not recursive) if with_dirs is None else with_dirs
        if loc.is_local:
            if not os.path.exists(loc.path):
                raise VolumeNotFoundError(
                    f"{str(vp)!r} does not exist; check the path with `%air_volume ls {vp.parent}`"
                )
            if not os.path.isdir(loc.path):
                st = os.stat(loc.path)
                return [Entry("", st.st_size, st.st_mtime)]
            found: list[tuple[str, str]] = [] if skipped is None else skipped
            out = scan_local(
                loc.path,
                recursive=recursive,
                with_dirs=with_dirs,
                confine=loc.root,
                workers=self.workers,
                stat=stat,
                skipped=found,
                local_disk=self._on_local_disk(loc),
                progress=progress,
            )
            if found and skipped is None:
                _log_skipped(vp, found)
            return out
        return fs_entries(loc, vp, recursive=recursive, with_dirs=with_dirs)

    def file_stats(
        self, path: str | VolumePath, *, progress: Callable[[int], None] | None = None, drop: Sequence[str] = ()
    ) -> FileStats | None:
        """Every file below the folder *path* with its size and mtime, as columns
        (:class:`~air_magics.volumes.filestats.FileStats`, its rows in name order): what
        :meth:`listing` gives recursively, at the file system's speed, for ``ls -r`` of millions.
        ``None`` where that does not apply (not a folder of the embedded volumes on this disk)."""
        from .filestats import file_stats

        vp = VolumePath.parse(path)
        loc = self.locate(vp)
        if not loc.is_local or split_glob(vp.parts)[1] or not self._on_local_disk(loc) or not os.path.isdir(loc.path):
            return None
        found: list[tuple[str, str]] = []
        out = file_stats(loc.path, confine=loc.root, skipped=found, progress=progress, drop=drop)
        if found:
            _log_skipped(vp, found)
        return out

    def _on_local_disk(self, loc: Location) -> bool:
        """*loc* is in the embedded volumes, on this machine's own disk (walked serially)."""
        return self.kind == "embedded" and is_within(loc.path, str(self.root))

    def names(self, path: str | VolumePath, *, recursive: bool) -> list[str] | None:
        """The files below the folder *path* as sorted relative names (``/``-separated), no sizes:
        :meth:`entries` without an object per file, for a listing of millions. ``None`` where that
        does not apply (a file, or a volume not on a local or mounted path): use :meth:`entries`."""
        vp = VolumePath.parse(path)
        loc = self.locate(vp)
        if not loc.is_local or not os.path.isdir(loc.path):
            return None
        found: list[tuple[str, str]] = []
        out = scan_names(
            loc.path,
            recursive=recursive,
            confine=loc.root,
            workers=self.workers,
            skipped=found,
            local_disk=self._on_local_disk(loc),
        )
        if found:
            _log_skipped(vp, found)
        return out


def _log_skipped(vp: VolumePath, skipped: list[tuple[str, str]]) -> None:
    import logging

    shown = "; ".join(f"{rel} ({why})" for rel, why in skipped[:5])
    more = f"; and {len(skipped) - 5} more" if len(skipped) > 5 else ""
    logging.getLogger(__name__).warning(
        "%s: skipped %d entr%s that cannot be read as files: %s%s",
        vp,
        len(skipped),
        "y" if len(skipped) == 1 else "ies",
        shown,
        more,
    )


def _stays_inside(vol_dir: str, parts: tuple[str, ...]) -> bool:
    """Whether ``vol_dir/parts`` resolves inside *vol_dir*. Only the components below the volume
    folder are looked at (its own real path is cached), one ``lstat`` each, stopping at the first
    that does not exist (nothing below it can be a link); a link among them is resolved in full.
    A ``realpath`` of the whole path cost an ``lstat`` of every component from ``/`` at every
    ``locate``: 43 per checkpoint save call, 9 ms on a 2 ms mount."""
    cur = vol_dir
    for part in parts:
        cur = os.path.join(cur, part)
        try:
            mode = os.lstat(cur).st_mode
        except OSError:  # (missing, or not to be looked at: realpath would have left it as it is)
            return True
        if stat.S_ISLNK(mode):
            return is_within(os.path.realpath(os.path.join(vol_dir, *parts)), real_root(vol_dir))
    return True
