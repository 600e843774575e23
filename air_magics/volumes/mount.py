"""``/Volumes/...`` in plain Python: link the mount point to the embedded root (``%air_volume mount``).

Off-platform there is no ``/Volumes`` mount, so ``open("/Volumes/main/ds/x")`` and
``torch.save(sd, "/Volumes/...")`` fail although the store resolves the same paths. :func:`mount`
makes the mount point (``/Volumes``, or ``AIR_VOLUMES_MOUNT``) a symlink to the embedded root, so the
OS resolves those paths to the very files the store uses; the store recognises the link
(:func:`air_magics.volumes.detect.probe`) and keeps using the embedded root, so nothing is
seen twice. Three modes, reported by :func:`mount_status`:

- ``mount``: the point is a real volumes mount (Databricks, FUSE); nothing to do.
- ``symlink``: the point links to the embedded root (made here); plain Python works.
- ``store``: neither; ``/Volumes/...`` works in the magics, ``UCVolumeDataset`` and ``volumes://`` URLs
  only. :attr:`MountStatus.hint` is the one command that links it.

Ownership: each link :func:`mount` makes is recorded in ``$AIR_HOME/mounts.json``, and
:func:`unmount` removes no other (not another ``AIR_HOME``'s, not one made by hand). Both take a
lock per point in ``$AIR_HOME/run``, and ``unmount`` never deletes what replaced the link it
checked (see :func:`_remove_link`).

Volumes registered to an fsspec URL (``s3://``...) are not files under the embedded root: plain
Python cannot reach them through ``/Volumes`` in any mode; use ``volumes://catalog/schema/volume/...``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shlex
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import VolumeExistsError, VolumeNotFoundError
from ..io.atomic import replace as replace_path
from ..io.atomic import write_json_atomic
from ..io.leftovers import temp_name
from ..io.locks import ProcessFileLock
from ..settings import air_home, embedded_volumes_root, get
from . import detect

__all__ = ["MountStatus", "mount", "unmount", "mount_status", "MARKER"]

MARKER = detect.EMBEDDED_MARKER  # in an embedded root linked by mount(): its links are ours, not foreign mounts
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)
_RECORDS = "mounts.json"  # in AIR_HOME: {point: link target} for each link this AIR_HOME's mount() made
_TRIES = 20  # a point that changes this often under us is reported, not chased for ever


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


@dataclass(frozen=True)
class _Seen:
    """One look at the point: what it is (``missing``, ``link``, ``dir``, ``file``), a link's
    target, and its identity (device, inode) to recognise the very same entry later."""

    kind: str
    target: str | None = None
    ident: tuple[int, int] | None = None


def _look(p: Path) -> _Seen:
    """What is at *p* now, from one ``lstat`` (+ ``readlink``); a link swapped meanwhile is looked at again."""
    for _ in range(_TRIES):
        try:
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode):
                return _Seen("dir" if stat.S_ISDIR(st.st_mode) else "file", None, (st.st_dev, st.st_ino))
            return _Seen("link", os.readlink(p), (st.st_dev, st.st_ino))
        except FileNotFoundError:
            return _Seen("missing")
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # EINVAL: readlink of what replaced the link; look again
                raise
    raise VolumeExistsError(f"{p} changes faster than it can be looked at; try again when it is left alone")


def _key(p: Path) -> str:
    """The point as recorded: its folder resolved (``/Volumes`` and a link to ``/`` are one point)."""
    return os.path.join(os.path.realpath(p.parent), p.name)


def _records() -> dict[str, str]:
    try:
        data = json.loads((air_home() / _RECORDS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _record(p: Path, target: str | None) -> None:
    """Note (or, with None, forget) that this AIR_HOME made the link *p* -> *target*; under the lock."""
    data = _records()
    if target is None and data.pop(_key(p), None) is None:
        return
    if target is not None:
        data[_key(p)] = target
    write_json_atomic(air_home() / _RECORDS, data, indent=2, sort_keys=True)


def _made_here(p: Path, seen: _Seen) -> bool:
    """Whether *seen* is the link this AIR_HOME's :func:`mount` made at *p* (ownership is recorded)."""
    return seen.kind == "link" and seen.target is not None and _records().get(_key(p)) == seen.target


@contextmanager
def _locked(p: Path) -> Iterator[None]:
    """One mount/unmount of *p* at a time among this AIR_HOME's processes and threads."""
    folder = air_home() / "run"
    folder.mkdir(parents=True, exist_ok=True)
    lock = ProcessFileLock(folder / f"mount-{hashlib.sha1(_key(p).encode()).hexdigest()[:16]}.lock")
    try:
        with lock:
            yield
    finally:
        lock.close()


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
    return detect.probe(point)[1]


def _resolved(p: Path, seen: _Seen) -> str:
    """The folder a link at *p* leads to (a relative target read from the link's folder)."""
    return os.path.realpath(os.path.join(p.parent, seen.target or ""))


def _marked(real: str) -> bool:
    """Whether *real* is an embedded root ``mount`` marked (this AIR_HOME's or another's)."""
    return os.path.isfile(os.path.join(real, MARKER))


def _what(p: Path, seen: _Seen, root: Path) -> str:
    """What is at *p*, and the way out, in a refusal's words."""
    q = shlex.quote(str(p))
    if seen.kind == "link":
        real = _resolved(p, seen)
        if real == os.path.realpath(root):
            return f"a link to this AIR_HOME's root {real} not made by its `%air_volume mount` (`ln -s`?); remove it with `rm {q}`"
        if _marked(real):
            whose = (
                "an earlier `%air_volume mount` here, before the volumes root moved; run `%air_volume unmount`"
                if _made_here(p, seen)
                else f"`%air_volume mount` with another AIR_HOME; unmount it there, or remove the link with `rm {q}` "
                f"(its files stay in {real})"
            )
            return f"a link to {real}, an embedded root linked by {whose}"
        return f"a link to {seen.target}; remove it first if it is stale (`rm {q}`)"
    if seen.kind == "dir":  # on a Mac: the disks. Never suggest removing it.
        return f"a folder ({_why(p)}), which is left as it is"
    return "a file; rename or remove it first"


def mount_status(point: str | os.PathLike[str] | None = None) -> MountStatus:
    """Which mode is active for *point* (default: the ``volumes_mount`` setting, ``/Volumes``)."""
    p = _point(point)
    root = embedded_volumes_root()
    for _ in range(_TRIES):
        try:
            real_mount, why = detect.probe(p)
            break
        except FileNotFoundError:  # a link removed while realpath read it (Python < 3.12): look again
            continue
    else:
        raise VolumeExistsError(f"{p} changes faster than it can be looked at; try again when it is left alone")
    if real_mount is not None:
        return MountStatus("mount", str(p), str(p), why)
    seen = _look(p)
    store_only = "/Volumes paths work in %air_volume, %%air_copy, UCVolumeDataset and volumes:// URLs, not in open()"
    if seen.kind == "missing":
        return MountStatus("store", str(p), str(root), store_only, _link_hint(p, root))
    if seen.kind == "link":
        real = _resolved(p, seen)
        if real == os.path.realpath(root):
            return MountStatus("symlink", str(p), str(root), _linked(p, root))
        if _marked(real):
            return MountStatus("store", str(p), str(root), f"{p} links to {real}", _what(p, seen, root))
    return MountStatus(
        "store", str(p), str(root), store_only, f"{p} exists, so it is left as it is (plain Python: use {root}/...)"
    )


def mount(point: str | os.PathLike[str] | None = None) -> MountStatus:
    """Make ``/Volumes/...`` paths work in plain Python (``open``, ``os.listdir``, ``torch.save``,
    ``shutil``, PIL): link *point* to the embedded root, creating the root if missing.

    A real volumes mount, or the link already there, is left as it is (idempotent). A point that
    exists as anything else is refused (``VolumeExistsError``, nothing changed). Where this process
    may not create the link (not root), nothing changes and the returned status's ``hint`` is the
    one ``sudo`` command that does it; volumes keep working through the store. The link is recorded
    in ``$AIR_HOME`` as made here: :func:`unmount` removes no other. Mounts and unmounts of one
    point by this AIR_HOME's processes take turns (a lock file in ``$AIR_HOME/run``)."""
    p = _point(point)
    with _locked(p):
        try:
            for _ in range(_TRIES):
                status = _mount_once(p)
                if status is not None:
                    return status
        finally:
            detect.forget()  # the stores' cached probe of the point is out of date
    raise VolumeExistsError(f"cannot mount: {p} keeps changing under this process; try again when it is left alone")


def _mount_once(p: Path) -> MountStatus | None:
    """Link *p* once; ``None`` when it changed meanwhile (the caller looks again)."""
    status = mount_status(p)
    if status.mode in ("mount", "symlink"):
        return status
    root = embedded_volumes_root()
    seen = _look(p)
    if seen.kind == "link" and _resolved(p, seen) == os.path.realpath(root):
        return None  # linked here meanwhile
    if seen.kind != "missing":
        raise VolumeExistsError(
            f"cannot mount: {p} already exists as {_what(p, seen, root)}; nothing changed. Volumes still work "
            f"through %air_volume, %%air_copy, UCVolumeDataset and volumes:// URLs, and in plain Python under "
            f"{root}/catalog/schema/volume"
        )
    if not p.parent.is_dir():
        raise VolumeNotFoundError(f"cannot mount at {p}: its folder {p.parent} does not exist; create it first")
    root.mkdir(parents=True, exist_ok=True)
    marker = root / MARKER
    target = os.path.realpath(root)
    try:
        if not marker.exists():
            marker.write_text("made by air_magics.volumes.mount(); links to this folder are the embedded root\n")
        os.symlink(target, p, target_is_directory=True)
    except FileExistsError:  # created meanwhile: look again
        return None
    except OSError as exc:
        if exc.errno not in _DENIED:
            raise
        cmd = f"sudo ln -s {shlex.quote(target)} {shlex.quote(str(p))}"
        return MountStatus(
            "store",
            str(p),
            str(root),
            f"this process may not create {p} ({exc.strerror}); nothing changed, volumes keep working "
            f"through the store and volumes:// URLs",
            f"run `{cmd}` once for /Volumes paths in plain Python",
        )
    _record(p, target)
    return MountStatus("symlink", str(p), str(root), _linked(p, root), None, True)


def unmount(point: str | os.PathLike[str] | None = None) -> MountStatus:
    """Remove the link :func:`mount` of this AIR_HOME made at *point*; anything else there (another
    AIR_HOME's link, a link made by hand, a file, a folder) is refused, untouched.

    Race-free: the link is first renamed to a private name beside it and deleted only if that is
    still the very link checked (a file someone moved onto the point meanwhile is put back). Where
    this process may not remove it, nothing changes and the returned status's ``hint`` is the
    ``sudo rm`` that does it."""
    p = _point(point)
    root = embedded_volumes_root()
    with _locked(p):
        try:
            return _unmount_locked(p, root)
        finally:
            detect.forget()  # the stores' cached probe of the point is out of date


def _unmount_locked(p: Path, root: Path) -> MountStatus:
    """:func:`unmount` under the point's lock."""
    seen = _look(p)
    if seen.kind == "missing":
        return MountStatus("store", str(p), str(root), f"nothing to unmount: {p} does not exist")
    if not _made_here(p, seen):
        raise VolumeExistsError(
            f"cannot unmount {p}: it is not a link made by `%air_volume mount` with this AIR_HOME "
            f"({air_home()}) but {_what(p, seen, root)}; nothing changed"
        )
    folder = _resolved(p, seen)
    try:
        gone = _remove_link(p, seen)
    except OSError as exc:  # e.g. a read-only folder: removed with sudo, as the hint says
        if exc.errno not in _DENIED:
            raise
        status = mount_status(p)
        return replace(
            status,
            detail=f"this process may not remove the link {p} ({exc.strerror}); nothing changed",
            hint=f"run `sudo rm {shlex.quote(str(p))}` to remove it",
        )
    _record(p, None)
    if not gone:
        return MountStatus("store", str(p), str(root), f"nothing to unmount: {p} was removed meanwhile")
    return MountStatus("store", str(p), str(root), f"removed the link {p}; the files stay in {folder}", changed=True)


def _remove_link(p: Path, seen: _Seen) -> bool:
    """Delete the link *seen* at *p*, never anything that replaced it; False if it was gone already.

    A name check then ``unlink(p)`` would delete whatever was renamed onto *p* in between. So the
    entry is renamed aside (atomic, same folder), checked there (same link: device, inode, target)
    and only then deleted; anything else is put back where it was."""
    aside = p.parent / temp_name(p.name)
    try:
        replace_path(p, aside)
    except FileNotFoundError:
        return False
    now = _look(aside)
    if now.kind == "link" and now.ident == seen.ident and now.target == seen.target:
        os.unlink(aside)
        return True
    try:  # put it back without replacing what may have arrived at p since
        os.link(aside, p, follow_symlinks=False)
        os.unlink(aside)
    except FileExistsError:
        raise VolumeExistsError(
            f"cannot unmount {p}: it was replaced twice while unmounting; the first replacement is now {aside}: "
            f"move it back if it is yours"
        ) from None
    except OSError:  # a folder cannot be hard-linked: move it back while nothing is there
        if os.path.lexists(p):
            raise VolumeExistsError(
                f"cannot unmount {p}: it was replaced twice while unmounting; the first replacement is now "
                f"{aside}: move it back if it is yours"
            ) from None
        replace_path(aside, p)
    raise VolumeExistsError(
        f"cannot unmount {p}: it was replaced by {'a folder' if now.kind == 'dir' else 'a ' + now.kind} while "
        f"unmounting, which is left as it is; nothing removed"
    )
