"""``VolumeStore``: resolve volume paths to storage and list, stat, walk and open them.

Resolution per volume, first match wins:

1. a volume registered to an fsspec URL (``register``), persisted under ``$AIR_HOME``;
2. the real ``/Volumes`` mount when one is present (Databricks, any FUSE mount);
3. the embedded root ``$AIR_VOLUMES_ROOT`` or ``$AIR_HOME/volumes``.

Mounted and embedded volumes are plain directories ``<root>/<catalog>/<schema>/<volume>`` and take
the fast OS paths; ``file://`` registrations do too. Every resolved local path is checked to stay
inside its volume after symlinks are resolved.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Iterator

from .. import config
from ..errors import RegistryError, VolumeExistsError, VolumeNotFoundError, VolumePathError
from .path import VolumePath
from .registry import VolumeRegistry
from .walk import Entry, filter_glob, glob_regex, is_within, scan_local, split_glob

__all__ = ["VolumeStore", "FileInfo", "VolumeInfo", "Location", "fs_mtime"]


@dataclass(frozen=True)
class FileInfo:
    """A file or directory inside a volume."""

    path: VolumePath
    size: int
    mtime: float
    is_dir: bool = False


@dataclass(frozen=True)
class VolumeInfo:
    """Where one volume lives: ``kind`` is ``embedded``, ``mount`` or ``fsspec``."""

    volume_id: str
    kind: str
    location: str


@dataclass(frozen=True, eq=False)
class Location:
    """A concrete file location: an OS path when ``fs`` is None, else a path on an fsspec filesystem."""

    path: str
    fs: Any = None

    @property
    def is_local(self) -> bool:
        return self.fs is None

    def join(self, rel: str) -> "Location":
        """The location *rel* (``/``-separated) below this one."""
        if not rel:
            return self
        if self.fs is None:
            return Location(os.path.join(self.path, *rel.split("/")))
        return Location(f"{self.path.rstrip('/')}/{rel}", self.fs)

    def __str__(self) -> str:
        if self.fs is None:
            return self.path
        proto = self.fs.protocol[0] if isinstance(self.fs.protocol, (tuple, list)) else self.fs.protocol
        return f"{proto}://{self.path.lstrip('/')}" if proto != "file" else self.path


def fs_mtime(info: dict[str, Any]) -> float:
    for key in ("mtime", "LastModified", "last_modified", "updated", "created", "time"):
        v = info.get(key)
        if v is None:
            continue
        if isinstance(v, datetime):
            return v.timestamp()
        if isinstance(v, (int, float)):
            return float(v)
        try:
            return datetime.fromisoformat(str(v).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
    return 0.0


class VolumeStore:
    """Resolves ``/Volumes/...`` paths to storage. Cheap to create; holds no open resources.

    ``root`` overrides the directory holding ``<catalog>/<schema>/<volume>`` (else the mount or the
    embedded root); ``registry`` overrides the registry file; ``workers`` bounds parallel listing.
    """

    def __init__(self, root: "str | os.PathLike[str] | None" = None, *, registry: "str | os.PathLike[str] | None" = None, workers: int = 128) -> None:
        if root is not None:
            self.root, self.kind = Path(root), "embedded"
        else:
            mount = config.volumes_mount()
            self.root, self.kind = (mount, "mount") if mount else (config.embedded_volumes_root(), "embedded")
        self.registry = VolumeRegistry(registry or config.registry_file())
        self.workers = workers

    def __repr__(self) -> str:
        return f"VolumeStore(root={str(self.root)!r}, kind={self.kind!r})"

    # -- volumes --------------------------------------------------------------------------------
    def volumes(self) -> list[VolumeInfo]:
        """Every volume under the root plus every registered one, sorted by id."""
        found: dict[str, VolumeInfo] = {}
        if self.root.is_dir():
            for cat in sorted(self.root.iterdir()):
                for sch in sorted(cat.iterdir()) if cat.is_dir() else ():
                    for vol in sorted(sch.iterdir()) if sch.is_dir() else ():
                        vid = f"{cat.name}.{sch.name}.{vol.name}"
                        if vol.is_dir():
                            found[vid] = VolumeInfo(vid, self.kind, str(vol))
        for vid, url in self.registry.load().items():
            found[vid] = VolumeInfo(vid, "fsspec", url)
        return [found[k] for k in sorted(found)]

    def volume_info(self, volume: "str | VolumePath") -> VolumeInfo:
        vp = VolumePath.parse(volume).root
        url = self.registry.get(vp.volume_id)
        if url is not None:
            return VolumeInfo(vp.volume_id, "fsspec", url)
        d = self._volume_dir(vp)
        if not d.is_dir():
            raise VolumeNotFoundError(
                f"volume {vp.volume_id!r} does not exist (looked in {d}); create it with "
                f"`%air_volume create {vp.volume_id}` or register storage with `%air_volume register {vp.volume_id} URL`"
            )
        return VolumeInfo(vp.volume_id, self.kind, str(d))

    def create(self, volume: "str | VolumePath", *, exist_ok: bool = False) -> VolumeInfo:
        """Create a volume under the root (a directory)."""
        vp = VolumePath.parse_volume(volume)
        if self.registry.get(vp.volume_id) is not None:
            if exist_ok:
                return self.volume_info(vp)
            raise VolumeExistsError(f"volume {vp.volume_id!r} is registered to {self.registry.get(vp.volume_id)}; unregister it first")
        d = self._volume_dir(vp)
        if d.is_dir() and not exist_ok:
            raise VolumeExistsError(f"volume {vp.volume_id!r} already exists at {d}; pick another name or pass exist_ok=True")
        d.mkdir(parents=True, exist_ok=True)
        return VolumeInfo(vp.volume_id, self.kind, str(d))

    def register(self, volume: "str | VolumePath", url: str) -> VolumeInfo:
        """Register a volume backed by an fsspec URL (``s3://``, ``gs://``, ``file://``, ``memory://``...)."""
        vp = VolumePath.parse_volume(volume)
        fs, base = _open_url(url)
        self.registry.set(vp.volume_id, url)
        try:
            fs.makedirs(base, exist_ok=True)
        except (OSError, NotImplementedError):  # object stores have no directories to make
            pass
        return VolumeInfo(vp.volume_id, "fsspec", url)

    def unregister(self, volume: "str | VolumePath") -> bool:
        return self.registry.remove(VolumePath.parse_volume(volume).volume_id)

    # -- paths ----------------------------------------------------------------------------------
    def _volume_dir(self, vp: VolumePath) -> Path:
        return self.root / vp.catalog / vp.schema / vp.volume

    def locate(self, path: "str | VolumePath") -> Location:
        """Concrete storage location of *path*; raises if the volume is missing or the path escapes it."""
        vp = VolumePath.parse(path)
        info = self.volume_info(vp)
        if info.kind == "fsspec":
            fs, base = _open_url(info.location)
            if fs.protocol == "file" or "file" in tuple(fs.protocol):
                return self._confined(Path(base), vp)
            return Location(f"{base.rstrip('/')}/{vp.relpath}".rstrip("/") if vp.parts else base, fs)
        return self._confined(Path(info.location), vp)

    def _confined(self, vol_dir: Path, vp: VolumePath) -> Location:
        target = vol_dir.joinpath(*vp.parts)
        real_root = os.path.realpath(vol_dir)
        if not is_within(os.path.realpath(target), real_root):
            raise VolumePathError(
                f"{str(vp)!r} resolves outside its volume (through a symlink to {os.path.realpath(target)}); "
                f"refusing to follow it: remove the link or use a path inside the volume"
            )
        return Location(str(target))

    # -- files ----------------------------------------------------------------------------------
    def exists(self, path: "str | VolumePath") -> bool:
        loc = self.locate(path)
        return os.path.exists(loc.path) if loc.is_local else loc.fs.exists(loc.path)

    def stat(self, path: "str | VolumePath") -> FileInfo:
        vp = VolumePath.parse(path)
        loc = self.locate(vp)
        try:
            if loc.is_local:
                st = os.stat(loc.path)
                return FileInfo(vp, st.st_size, st.st_mtime, os.path.isdir(loc.path))
            info = loc.fs.info(loc.path)
        except FileNotFoundError:
            raise VolumeNotFoundError(f"{str(vp)!r} does not exist; check the path with `%air_volume ls {vp.parent}`") from None
        return FileInfo(vp, int(info.get("size") or 0), fs_mtime(info), info.get("type") == "directory")

    def open(self, path: "str | VolumePath", mode: str = "rb", **kwargs: Any) -> IO[Any]:
        """Open a file in a volume; write modes create parent folders."""
        loc = self.locate(path)
        writing = any(c in mode for c in "wax+")
        if loc.is_local:
            if writing:
                os.makedirs(os.path.dirname(loc.path), exist_ok=True)
            return open(loc.path, mode, **kwargs)
        return loc.fs.open(loc.path, mode, **kwargs)

    def makedirs(self, path: "str | VolumePath") -> None:
        loc = self.locate(path)
        if loc.is_local:
            os.makedirs(loc.path, exist_ok=True)
        else:
            loc.fs.makedirs(loc.path, exist_ok=True)

    def ls(self, path: "str | VolumePath", *, recursive: bool = False, pattern: str | None = None) -> list[FileInfo]:
        """Entries of a folder (files and folders), or every file below it with ``recursive``.

        ``pattern`` is a glob matched against the path relative to *path* or the file name
        (``*.jpg``, ``train/**/*.png``). A glob in *path* itself is expanded too.
        """
        vp = VolumePath.parse(path)
        prefix, pat = split_glob(vp.parts)
        if pat:
            return self.glob(vp)
        entries = self.entries(vp, recursive=recursive)
        if pattern:
            rx = glob_regex(pattern)
            entries = [e for e in entries if rx.match(e.rel) or rx.match(e.rel.rsplit("/", 1)[-1])]
        return [FileInfo(vp.joinpath(e.rel), e.size, e.mtime, e.is_dir) for e in entries]

    def glob(self, pattern: "str | VolumePath") -> list[FileInfo]:
        """Files matching a glob path; a matched folder contributes every file below it."""
        vp = VolumePath.parse(pattern)
        prefix, pat = split_glob(vp.parts)
        base = VolumePath(vp.catalog, vp.schema, vp.volume, prefix)
        return [FileInfo(base.joinpath(e.rel), e.size, e.mtime) for e in filter_glob(self.entries(base, recursive=True), pat)]

    def walk(self, path: "str | VolumePath") -> Iterator[tuple[VolumePath, list[str], list[str]]]:
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

    def entries(self, path: "str | VolumePath", *, recursive: bool, with_dirs: bool | None = None,
                stat: bool = True) -> list[Entry]:
        """Raw listing relative to *path* (``Entry.rel``); a file lists as one entry with ``rel == ''``.
        ``stat=False`` skips the per-file stat on local/mounted volumes (sizes are then ``-1``)."""
        vp = VolumePath.parse(path)
        loc = self.locate(vp)
        with_dirs = (not recursive) if with_dirs is None else with_dirs
        if loc.is_local:
            if not os.path.exists(loc.path):
                raise VolumeNotFoundError(f"{str(vp)!r} does not exist; check the path with `%air_volume ls {vp.parent}`")
            if not os.path.isdir(loc.path):
                st = os.stat(loc.path)
                return [Entry("", st.st_size, st.st_mtime)]
            vol_root = self.locate(vp.root).path
            return scan_local(loc.path, recursive=recursive, with_dirs=with_dirs, confine=vol_root, workers=self.workers,
                              stat=stat)
        return _fs_entries(loc, vp, recursive=recursive, with_dirs=with_dirs)


def _fs_entries(loc: Location, vp: VolumePath, *, recursive: bool, with_dirs: bool) -> list[Entry]:
    fs, base = loc.fs, loc.path.rstrip("/")
    if not fs.exists(base):
        raise VolumeNotFoundError(f"{str(vp)!r} does not exist; check the path with `%air_volume ls {vp.parent}`")
    if fs.isfile(base):
        info = fs.info(base)
        return [Entry("", int(info.get("size") or 0), fs_mtime(info))]
    listing = fs.find(base, withdirs=with_dirs, detail=True) if recursive else {i["name"]: i for i in fs.ls(base, detail=True)}
    out = []
    strip = len(base.lstrip("/")) + 1
    for name, info in listing.items():
        rel = name.lstrip("/")[strip:]
        if not rel:
            continue
        is_dir = info.get("type") == "directory"
        if is_dir and not with_dirs:
            continue
        out.append(Entry(rel, int(info.get("size") or 0), fs_mtime(info), is_dir))
    out.sort(key=lambda e: e.rel)
    return out


def _open_url(url: str) -> tuple[Any, str]:
    try:
        from fsspec.core import url_to_fs
    except ImportError:  # pragma: no cover - fsspec is a core dependency
        raise RegistryError("fsspec is required for registered volumes: pip install fsspec") from None
    try:
        return url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise RegistryError(
            f"cannot open storage URL {url!r}: {exc}. Install the fsspec backend for its scheme "
            f"(s3fs for s3://, gcsfs for gs://, adlfs for abfs://)"
        ) from None
