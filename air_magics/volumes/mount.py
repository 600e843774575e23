"""``/Volumes/...`` in plain Python: link the mount point to the embedded root (``%air_volume mount``).

Off-platform there is no ``/Volumes`` mount, so ``open("/Volumes/main/ds/x")`` and
``torch.save(sd, "/Volumes/...")`` fail although the store resolves the same paths. :func:`mount`
makes the mount point (``/Volumes``, or ``AIR_VOLUMES_MOUNT``) a symlink to the embedded root, so the
OS resolves those paths to the very files the store uses; the store recognises the link
(:func:`air_magics.config.volumes_mount_status`) and keeps using the embedded root, so nothing is
seen twice. Three modes, reported by :func:`mount_status`:

- ``mount``: the point is a real volumes mount (Databricks, FUSE); nothing to do.
- ``symlink``: the point links to the embedded root (made here); plain Python works.
- ``store``: neither; ``/Volumes/...`` works in the magics, ``UCVolumeDataset`` and ``volumes://`` URLs
  only. :attr:`MountStatus.hint` is the one command that links it.

Volumes registered to an fsspec URL (``s3://``...) are not files under the embedded root: plain
Python cannot reach them through ``/Volumes`` in any mode; use ``volumes://catalog/schema/volume/...``.
"""

from __future__ import annotations

import errno
import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from .. import config
from ..errors import VolumeExistsError, VolumeNotFoundError
from ..settings import get

__all__ = ["MountStatus", "mount", "unmount", "mount_status", "MARKER"]

MARKER = config.EMBEDDED_MARKER  # in an embedded root linked by mount(): its links are ours, not foreign mounts
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


@dataclass(frozen=True)
class MountStatus:
    """Where ``/Volumes/...`` paths lead for plain Python.

    ``mode``: ``mount`` (a real volumes mount), ``symlink`` (linked to the embedded root) or
    ``store`` (only the store resolves them). ``hint``: the one command that links the point when
    it is not linked (``%air_volume mount``, or ``sudo ln -s ...`` where this process may not).
    ``changed``: whether the call that returned it created or removed the link.
    """

    mode: str
    point: str
    root: str
    detail: str
    hint: str | None = None
    changed: bool = False

    @property
    def plain_python(self) -> bool:
        """True when ``open("/Volumes/...")`` reaches the volumes."""
        return self.mode in ("mount", "symlink")

    def __str__(self) -> str:
        label = {"mount": "real mount", "symlink": "embedded via symlink", "store": "embedded through the store only"}
        text = f"{label[self.mode]}: {self.detail}"
        return f"{text}; {self.hint}" if self.hint else text

    def __repr__(self) -> str:
        return str(self)


def _point(point: str | os.PathLike[str] | None) -> Path:
    return Path(point) if point is not None else get("volumes_mount")


def _ours(point: Path, root: Path) -> bool:
    """Whether *point* is a symlink to this root, or to an embedded root that ``mount`` marked."""
    if not point.is_symlink():
        return False
    real = os.path.realpath(point)
    return real == os.path.realpath(root) or os.path.isfile(os.path.join(real, MARKER))


def _link_hint(point: Path, root: Path) -> str:
    """The command that links *point*: the magic where this process may create it, else sudo."""
    parent = point.parent
    if os.access(parent, os.W_OK) and not point.parent.is_symlink():
        return "run `%air_volume mount` (or air_magics.volumes.mount()) for /Volumes paths in plain Python"
    return (
        f"for /Volumes paths in plain Python run `sudo ln -s {shlex.quote(str(root))} {shlex.quote(str(point))}` "
        f"(this process may not create {point})"
    )


def _linked(point: Path, root: Path) -> str:
    return f"{point} -> {root}; open, os.listdir, shutil, PIL and torch.save/load take {point}/... paths"


def _why(point: Path) -> str:
    """Why *point* is not a volumes mount, as the store says it."""
    return config.volumes_mount_status(point)[1]


def mount_status(point: str | os.PathLike[str] | None = None) -> MountStatus:
    """Which mode is active for *point* (default: the ``volumes_mount`` setting, ``/Volumes``)."""
    p = _point(point)
    root = config.embedded_volumes_root()
    real_mount, why = config.volumes_mount_status(p)
    if real_mount is not None:
        return MountStatus("mount", str(p), str(p), why)
    if _ours(p, root):
        target = os.path.realpath(p)
        if target == os.path.realpath(root):
            return MountStatus("symlink", str(p), str(root), _linked(p, root))
        return MountStatus(
            "store",
            str(p),
            str(root),
            f"{p} links to another embedded root {target} (an earlier `%air_volume mount` with another AIR_HOME)",
            "run `%air_volume unmount` then `%air_volume mount` to link it here",
        )
    store_only = "/Volumes paths work in %air_volume, %%air_copy, UCVolumeDataset and volumes:// URLs, not in open()"
    if os.path.lexists(p):
        return MountStatus(
            "store", str(p), str(root), store_only, f"{p} exists, so it is left as it is (plain Python: use {root}/...)"
        )
    return MountStatus("store", str(p), str(root), store_only, _link_hint(p, root))


def mount(point: str | os.PathLike[str] | None = None) -> MountStatus:
    """Make ``/Volumes/...`` paths work in plain Python (``open``, ``os.listdir``, ``torch.save``,
    ``shutil``, PIL): link *point* to the embedded root, creating the root if missing.

    A real volumes mount, or the link already there, is left as it is (idempotent). A point that
    exists as anything else is refused (``VolumeExistsError``, nothing changed). Where this process
    may not create the link (not root), nothing changes and the returned status's ``hint`` is the
    one ``sudo`` command that does it; volumes keep working through the store."""
    p = _point(point)
    status = mount_status(p)
    if status.mode in ("mount", "symlink"):
        return status
    root = config.embedded_volumes_root()
    if os.path.lexists(p):
        if _ours(p, root):  # our link, to another AIR_HOME's root
            fix = f"{status.detail}; run `%air_volume unmount` first"
        elif p.is_symlink():
            fix = f"a link to {os.readlink(p)}; remove it first if it is stale (`rm {shlex.quote(str(p))}`)"
        elif p.is_dir():  # on a Mac: the disks. Never suggest removing it.
            fix = f"a folder ({_why(p)}), which is left as it is"
        else:
            fix = "a file; rename or remove it first"
        raise VolumeExistsError(
            f"cannot mount: {p} already exists as {fix}; nothing changed. Volumes still work through %air_volume, "
            f"%%air_copy, UCVolumeDataset and volumes:// URLs, and in plain Python under {root}/catalog/schema/volume"
        )
    if not p.parent.is_dir():
        raise VolumeNotFoundError(f"cannot mount at {p}: its folder {p.parent} does not exist; create it first")
    root.mkdir(parents=True, exist_ok=True)
    marker = root / MARKER
    try:
        if not marker.exists():
            marker.write_text("made by air_magics.volumes.mount(); links to this folder are the embedded root\n")
        os.symlink(os.path.realpath(root), p, target_is_directory=True)
    except FileExistsError:  # created meanwhile: ours (another process mounted) or refused as above
        return mount(p)
    except OSError as exc:
        if exc.errno not in _DENIED:
            raise
        cmd = f"sudo ln -s {shlex.quote(str(os.path.realpath(root)))} {shlex.quote(str(p))}"
        return MountStatus(
            "store",
            str(p),
            str(root),
            f"this process may not create {p} ({exc.strerror}); nothing changed, volumes keep working "
            f"through the store and volumes:// URLs",
            f"run `{cmd}` once for /Volumes paths in plain Python",
        )
    return MountStatus("symlink", str(p), str(root), _linked(p, root), None, True)


def unmount(point: str | os.PathLike[str] | None = None) -> MountStatus:
    """Remove the link :func:`mount` made at *point*; anything else there is refused, untouched.
    Where this process may not remove it (a link made with ``sudo``), nothing changes and the
    returned status's ``hint`` is the ``sudo rm`` that does it."""
    p = _point(point)
    root = config.embedded_volumes_root()
    if not os.path.lexists(p):
        return MountStatus("store", str(p), str(root), f"nothing to unmount: {p} does not exist")
    if not _ours(p, root):
        what = f"a link to {os.readlink(p)}" if p.is_symlink() else "a folder" if p.is_dir() else "a file"
        raise VolumeExistsError(
            f"cannot unmount {p}: it is {what}, not a link made by `%air_volume mount`; nothing changed"
        )
    try:
        os.unlink(p)
    except OSError as exc:  # a link made with sudo, as the hint says: removed with sudo too
        if exc.errno not in _DENIED:
            raise
        status = mount_status(p)
        return replace(
            status,
            detail=f"this process may not remove the link {p} ({exc.strerror}); nothing changed",
            hint=f"run `sudo rm {shlex.quote(str(p))}` to remove it",
        )
    return MountStatus("store", str(p), str(root), f"removed the link {p}; the files stay in {root}", changed=True)
