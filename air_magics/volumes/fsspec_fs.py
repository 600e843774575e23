"""Volumes as an fsspec filesystem: ``volumes://<catalog>/<schema>/<volume>/<path>``.

``volumes://main/demo/images/x.jpg`` is ``/Volumes/main/demo/images/x.jpg``. Registered through
fsspec's entry point (``fsspec.specs``), so ``fsspec.open``, ``pd.read_parquet``, ``pyarrow``,
``datasets.load_dataset`` and torch DCP's ``FsspecWriter``/``FsspecReader`` take volume URLs.

Every call goes through :class:`~air_magics.volumes.store.VolumeStore`: a path is parsed by
:meth:`VolumePath.parse` (``..``, ``.``, empty segments and bad names refused) and resolved by
:meth:`VolumeStore.locate` (links out of the volume refused). On a local volume (embedded, mount,
``file://``) reads open through :func:`air_magics.io.confined.open_file` (checked at the moment of
use); ``pipe_file`` writes through :func:`air_magics.io.atomic.write_atomic` and streamed writes
through :class:`air_magics.io.atomic.AtomicFile` (temp file in the target folder,
renamed into place on ``close()``): readers see the old file or the new one, never a torn one, and
a failed write leaves the old file untouched. A volume registered to another fsspec URL
(``memory://``, ``s3://``...) is delegated to that filesystem. fsspec's own conformance suite
(``fsspec.tests.abstract``) passes on both kinds.

A path or volume that is not there raises :class:`~air_magics.errors.VolumeNotFoundError` (a
``FileNotFoundError``) naming the ``volumes://`` URL and the fix.

The paths above the volume level (``volumes://``, ``volumes://main``, ``volumes://main/demo``)
list catalogs, schemas and volumes; they cannot be written.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import stat as _stat
import threading
from collections.abc import Iterator
from glob import has_magic
from typing import Any

from fsspec.spec import AbstractFileSystem

from ..errors import VolumeExistsError, VolumeNotFoundError, VolumePathError
from ..io.atomic import AtomicFile, replace_at, write_atomic
from ..io.confined import open_dir, open_file
from . import detect
from .location import Location, fs_mtime
from .path import PREFIX, VolumePath
from .store import VolumeStore

__all__ = ["VolumesFileSystem", "PROTOCOL"]


PROTOCOL = "volumes"


class VolumesFileSystem(AbstractFileSystem):
    """fsspec filesystem for ``volumes://catalog/schema/volume/path`` (``/Volumes/...``).

    ``root`` and ``registry`` are passed to :class:`VolumeStore`; without them the store follows the
    current settings (``AIR_HOME``, ``AIR_VOLUMES_ROOT``, ``AIR_VOLUMES_MOUNT``) at each call.
    """

    protocol = PROTOCOL
    root_marker = ""

    def __init__(self, root: str | None = None, registry: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._root, self._registry = root, registry
        self._stores: dict[tuple[Any, ...], VolumeStore] = {}
        self._lock = threading.Lock()

    # -- paths ----------------------------------------------------------------------------------
    @property
    def store(self) -> VolumeStore:
        """The store for the current settings (rebuilt when ``AIR_HOME`` or a volumes setting changes)."""
        if self._root is None and self._registry is None:
            return VolumeStore.shared()
        key = (self._root, self._registry, *detect.settings_key(), detect.generation())
        with self._lock:
            st = self._stores.get(key)
            if st is None:
                st = self._stores[key] = VolumeStore(self._root, registry=self._registry)
        return st

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        if isinstance(path, (list, tuple)):
            return [cls._strip_protocol(p) for p in path]  # type: ignore[return-value]
        path = os.fspath(path) if not isinstance(path, str) else path
        if path.startswith(f"{PROTOCOL}://"):
            path = path[len(PROTOCOL) + 3 :]
        elif path.startswith(f"{PROTOCOL}:"):
            path = path[len(PROTOCOL) + 1 :]
        elif path == PREFIX or path.startswith(PREFIX + "/"):
            path = path[len(PREFIX) :]
        return path.strip("/")

    @staticmethod
    def _get_kwargs_from_urls(path: str) -> dict[str, Any]:
        return {}

    @classmethod
    def _parent(cls, path: str) -> str:
        path = cls._strip_protocol(path)
        return path.rsplit("/", 1)[0] if "/" in path else ""

    def unstrip_protocol(self, name: str) -> str:
        return f"{PROTOCOL}://{self._strip_protocol(name)}"

    def _vp(self, path: str) -> VolumePath:
        """The :class:`VolumePath` of *path* (at least catalog/schema/volume); validation as the store's."""
        p = self._strip_protocol(path)
        if p.count("/") < 2:
            raise VolumePathError(
                f"{PROTOCOL}://{p} does not name a volume: write {PROTOCOL}://<catalog>/<schema>/<volume>/<path> "
                f"(= /Volumes/<catalog>/<schema>/<volume>/<path>)"
            )
        return VolumePath.parse(f"{PREFIX}/{p}")

    def _locate(self, path: str) -> tuple[VolumePath, Location]:
        vp = self._vp(path)
        return vp, self.store.locate(vp)

    @staticmethod
    def _name(vp: VolumePath) -> str:
        return str(vp)[len(PREFIX) + 1 :]

    # -- errors: every "not found" names the volumes:// URL and the fix ------------------------
    def _missing(self, vp: VolumePath) -> VolumeNotFoundError:
        """The error for a *vp* that is not there: a missing volume (with the volumes that exist and
        how to make it), or a missing path inside an existing volume (with where to look)."""
        url = f"{PROTOCOL}://{self._name(vp)}"
        try:
            self.store.volume_info(vp)
        except VolumeNotFoundError:
            vid = vp.volume_id
            known = [v.volume_id for v in self.store.volumes()]
            have = (
                f"volumes here: {', '.join(known[:8])}{', ...' if len(known) > 8 else ''}"
                if known
                else "no volume exists yet"
            )
            return VolumeNotFoundError(
                f"{url}: volume {vid!r} does not exist ({have}); create it with `%air_volume create {vid}` "
                f"or register storage with `%air_volume register {vid} URL`"
            )
        except Exception:  # the volume's own error (a link out of the root...) is not the story here
            pass
        parent = f"{PROTOCOL}://{self._name(vp.parent)}"
        return VolumeNotFoundError(
            f"{url} does not exist; list its folder with fs.ls({parent!r}) or `%air_volume ls {vp.parent}`"
        )

    @contextlib.contextmanager
    def _reporting(self, path: str) -> Iterator[None]:
        """Turn a bare ``FileNotFoundError`` (the OS's, the store's, a delegated filesystem's) about
        *path* into :meth:`_missing`'s; an error that already names its URL passes unchanged."""
        try:
            yield
        except FileNotFoundError as exc:
            if isinstance(exc, VolumeNotFoundError) and str(exc).startswith(f"{PROTOCOL}://"):
                raise
            raise self._missing(self._vp(path)) from None

    # -- above the volume level: catalogs, schemas, volumes ------------------------------------
    def _virtual(self, path: str) -> list[str] | None:
        """Child names of a path above the volume level, or None when *path* names a volume or deeper."""
        p = self._strip_protocol(path)
        depth = 0 if not p else p.count("/") + 1
        if depth >= 3:
            return None
        prefix = tuple(p.split("/")) if p else ()
        children = sorted(
            {
                "/".join(v.volume_id.split(".")[: depth + 1])
                for v in self.store.volumes()
                if tuple(v.volume_id.split("."))[:depth] == prefix
            }
        )
        if not children and prefix:
            raise VolumeNotFoundError(
                f"{PROTOCOL}://{p} holds no volumes; create one with `%air_volume create {'.'.join(prefix)}...`"
            )
        return children

    # -- listing and metadata -------------------------------------------------------------------
    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        virtual = self._virtual(path)
        if virtual is not None:
            out = [{"name": n, "size": 0, "type": "directory"} for n in virtual]
            return out if detail else [o["name"] for o in out]
        vp = self._vp(path)
        out = []
        with self._reporting(path):
            entries = self.store.entries(vp, recursive=False, with_dirs=True)
        for e in entries:
            name = self._name(vp.joinpath(e.rel)) if e.rel else self._name(vp)
            kind = "directory" if e.is_dir else "file"
            out.append({"name": name, "size": 0 if e.is_dir else e.size, "type": kind, "mtime": e.mtime})
        return out if detail else [o["name"] for o in out]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        p = self._strip_protocol(path)
        if p.count("/") < 2 or not p:
            self._virtual(p)  # raises when nothing lives there
            return {"name": p, "size": 0, "type": "directory"}
        try:
            with self._reporting(p):
                vp, loc = self._locate(p)
                if loc.is_local:
                    st = os.stat(loc.path)
                    is_dir = _stat.S_ISDIR(st.st_mode)
                    kind, size = ("directory", 0) if is_dir else ("file", st.st_size)
                    return {"name": self._name(vp), "size": size, "type": kind, "mtime": st.st_mtime}
                info = loc.fs.info(loc.path)
        except VolumeNotFoundError as exc:
            _warn_missing_volume(".".join(p.split("/")[:3]), exc)
            raise
        out = dict(info)
        out.update(name=self._name(vp), size=int(info.get("size") or 0), mtime=fs_mtime(info))
        return out

    def exists(self, path: str, **kwargs: Any) -> bool:
        try:
            self.info(path)
            return True
        except FileNotFoundError:
            return False

    def modified(self, path: str) -> Any:
        from datetime import datetime, timezone

        return datetime.fromtimestamp(self.info(path).get("mtime", 0.0), tz=timezone.utc)

    # -- open -----------------------------------------------------------------------------------
    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: Any = None,
        autocommit: bool = True,
        cache_options: Any = None,
        **kwargs: Any,
    ) -> Any:
        with self._reporting(path):
            vp, loc = self._locate(path)
            url = f"{PROTOCOL}://{self._name(vp)}"
            if not vp.parts:
                raise IsADirectoryError(
                    errno.EISDIR, f"{url} is a volume (a folder), not a file; name a file inside it"
                )
            if not loc.is_local:
                return loc.fs.open(loc.path, mode, block_size=block_size, cache_options=cache_options, **kwargs)
            if "+" in mode:
                raise ValueError(f"mode {mode!r} is not supported on {url}: read ('rb') or write whole files ('wb')")
            if "w" in mode or "x" in mode:
                folder, name = os.path.split(loc.path)
                dir_fd = open_dir(folder, loc.root, create=True)  # verified inside the volume, made if missing
                return AtomicFile(  # owns dir_fd from here
                    dir_fd, name, url, exclusive="x" in mode, hint="open it with mode 'wb' to replace it"
                )
            # reads, and appends (in place: an append cannot be a rename), through the confined open
            return open_file(loc.path, loc.root, "ab" if "a" in mode else "rb")

    # -- folders and removal --------------------------------------------------------------------
    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        with self._reporting(path):
            vp, loc = self._locate(path)
        if not exist_ok and self.exists(path):
            raise VolumeExistsError(f"{PROTOCOL}://{self._name(vp)} already exists; pass exist_ok=True to accept it")
        self.store.makedirs(vp)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        with self._reporting(path):
            vp, loc = self._locate(path)
        if not create_parents and not self.exists(self._name(vp.parent)):
            raise VolumeNotFoundError(
                f"{PROTOCOL}://{self._name(vp.parent)} does not exist; pass create_parents=True to make it"
            )
        self.store.makedirs(vp)

    def rm_file(self, path: str) -> None:
        self._rm_one(path, recursive=False)

    def _rm(self, path: str) -> None:
        self._rm_one(path, recursive=False)

    def rmdir(self, path: str) -> None:
        with self._reporting(path):
            vp, loc = self._locate(path)
            if not vp.parts:
                raise VolumePathError(f"{vp} is a volume root; fsspec does not remove volumes")
            if not loc.is_local:
                loc.fs.rmdir(loc.path)
                return
            dfd = open_dir(os.path.dirname(loc.path), loc.root)
            try:
                os.rmdir(vp.name, dir_fd=dfd)
            finally:
                os.close(dfd)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        for p in path if isinstance(path, (list, tuple)) else [path]:
            self._rm_one(p, recursive=recursive)

    def _rm_one(self, path: str, *, recursive: bool) -> None:
        with self._reporting(path):
            vp, loc = self._locate(path)
            if not vp.parts:
                raise VolumePathError(
                    f"{vp} is a volume root; fsspec does not remove volumes (remove the files inside it instead)"
                )
            if not loc.is_local:
                loc.fs.rm(loc.path, recursive=recursive)
                return
            dfd = open_dir(os.path.dirname(loc.path), loc.root)  # the parent, verified inside the volume
            try:
                st = os.stat(vp.name, dir_fd=dfd, follow_symlinks=False)
                if not _stat.S_ISDIR(st.st_mode):
                    os.unlink(vp.name, dir_fd=dfd)  # a link is removed, never followed
                elif not recursive:
                    raise IsADirectoryError(
                        errno.EISDIR, f"{PROTOCOL}://{self._name(vp)} is a folder; pass recursive=True to remove it"
                    )
                else:  # fd-based rmtree: links inside are removed, never followed
                    shutil.rmtree(vp.name, dir_fd=dfd)
            finally:
                os.close(dfd)

    # -- bytes ----------------------------------------------------------------------------------
    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        with self._reporting(path):
            vp, loc = self._locate(path)
            if not loc.is_local:
                return loc.fs.cat_file(loc.path, start=start, end=end, **kwargs)
        return super().cat_file(path, start=start, end=end, **kwargs)

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        """Write *value* whole: locally through :func:`air_magics.io.atomic.write_atomic` (temp name,
        rename, confined to the volume); ``mode="create"`` refuses an existing file."""
        with self._reporting(path):
            vp, loc = self._locate(path)
        if not loc.is_local or mode == "create" or not vp.parts:
            with self.open(path, "xb" if mode == "create" else "wb") as f:
                f.write(value)
            return
        write_atomic(loc.path, value, root=loc.root)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """Copy one file, or make the folder *path2* when *path1* is a folder (what ``copy`` with
        ``recursive=True`` asks of each folder it meets)."""
        with self._reporting(path1):
            vp1, loc1 = self._locate(path1)
            vp2, loc2 = self._locate(path2)
            if not loc1.is_local and not loc2.is_local and loc1.fs is loc2.fs:
                loc1.fs.cp_file(loc1.path, loc2.path, **kwargs)
                return
            if self.info(path1)["type"] == "directory":
                self.makedirs(path2, exist_ok=True)
                return
            with self.open(path1, "rb") as src, self.open(path2, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        """Rename within one local volume (``os.replace`` between verified folders); else copy and
        remove. As everywhere in fsspec, a *path2* that is an existing folder receives *path1* inside
        it; a folder moves with everything below it."""
        if isinstance(path1, (list, tuple)) or isinstance(path2, (list, tuple)) or has_magic(str(path1)):
            super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
            return
        with self._reporting(path1):
            vp1, loc1 = self._locate(path1)
            if str(path2).endswith("/"):  # "into this folder", made if missing, as fsspec's copy reads it
                path2 = f"{str(path2).rstrip('/')}/{vp1.name}"
            vp2, loc2 = self._locate(path2)
            if vp1 == vp2:
                return
            local = loc1.is_local and loc2.is_local and vp1.root == vp2.root and vp1.parts and vp2.parts
            if local and _rename_local(loc1, loc2):
                return
            if not loc1.is_local and not loc2.is_local and loc1.fs is loc2.fs:
                loc1.fs.mv(loc1.path, loc2.path, recursive=recursive or loc1.fs.isdir(loc1.path), maxdepth=maxdepth)
                return
            folder = self.info(path1)["type"] == "directory"  # raises the named error when missing
        super().mv(path1, path2, recursive=recursive or folder, maxdepth=maxdepth, **kwargs)

    def rename(self, path1: str, path2: str, **kwargs: Any) -> None:
        self.mv(path1, path2, **kwargs)


def _rename_local(loc1: Location, loc2: Location) -> bool:
    """``os.replace`` *loc1* to *loc2* inside one volume, both folders verified (no link followed).
    An existing folder at *loc2* receives *loc1* under its own name. False when a rename cannot do
    it (a folder already at the final name: the caller merges by copying)."""
    name1 = os.path.basename(loc1.path)
    src = open_dir(os.path.dirname(loc1.path), loc1.root)
    try:
        src_is_dir = _stat.S_ISDIR(os.stat(name1, dir_fd=src, follow_symlinks=False).st_mode)
        dst = open_dir(os.path.dirname(loc2.path), loc2.root, create=True)
        name2 = os.path.basename(loc2.path)
        try:
            st2 = _lstat_at(name2, dst)
            if st2 is not None and _stat.S_ISDIR(st2.st_mode):  # move into the existing folder
                inner = open_dir(loc2.path, loc2.root)
                os.close(dst)
                dst, name2 = inner, name1
                st2 = _lstat_at(name2, dst)
            if st2 is not None and (src_is_dir or _stat.S_ISDIR(st2.st_mode)):
                return False
            replace_at(src, name1, name2, dst)
            return True
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _lstat_at(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


_warned: set[str] = set()


def _warn_missing_volume(volume_id: str, exc: VolumeNotFoundError) -> None:
    """Log a missing volume once per process: pyarrow (``pd.read_parquet``, ``pyarrow.dataset``)
    turns ``info``'s error into a bare ``FileNotFoundError(path)``, so the fix would be lost."""
    msg = str(exc)
    if f": volume {volume_id!r} does not exist" in msg and volume_id not in _warned:
        _warned.add(volume_id)
        logging.getLogger(__name__).warning("%s", msg)
