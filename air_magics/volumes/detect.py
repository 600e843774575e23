"""Is the mount point (``/Volumes``, or ``AIR_VOLUMES_MOUNT``) a real volumes mount? The probe, cached.

Why cached: the answer takes several stats and listings (round trips on a remote mount), and every
store needs it. It changes only when a setting that decides it changes (``AIR_HOME``,
``AIR_VOLUMES_ROOT``, ``AIR_VOLUMES_MOUNT``: part of the cache key) or when
:func:`air_magics.volumes.mount`/``unmount`` link or unlink the point (they call :func:`forget`).
A mount made behind this process's back is seen after :func:`forget` (``%air_volume`` with no
arguments calls it). :func:`probe` is the uncached look, for callers that must see the point now.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

from ..io.forksafe import ForkSafeLock
from ..settings import embedded_volumes_root, get
from .path import is_name

__all__ = [
    "EMBEDDED_MARKER",
    "NO_MOUNT_TTL",
    "probe",
    "volumes_mount_status",
    "volumes_mount",
    "forget",
    "generation",
    "settings_key",
]

EMBEDDED_MARKER = ".air-embedded-root"  # left in an embedded root by air_magics.volumes.mount()
_NETWORK_FS = ("fuse", "nfs", "cifs", "smb", "9p", "virtiofs", "ceph", "glusterfs", "lustre", "afs", "webdav")
_SAMPLE_ENTRIES = 64  # entries checked per folder
_SAMPLE_CATALOGS = 4  # catalogs whose first schema is looked into: every listing may be a round trip

_cache: dict[tuple[str, ...], tuple[Path | None, str]] = {}
_seen: dict[tuple[str, ...], float] = {}  # when each answer was looked at (monotonic)
NO_MOUNT_TTL = 2.0  # seconds a "no mount" answer is trusted before a cheap local look again
_lock = ForkSafeLock()  # fresh in a forked child: the parent's threads may hold its copy

_generation = 0


def settings_key() -> tuple[str, ...]:
    """What decides the answer: the mount point, an explicit volumes root, and ``AIR_HOME``."""
    return (str(get("volumes_mount")), str(get("volumes_root")), str(get("home")))


def generation() -> int:
    """Counts :func:`forget` calls: a cache built on the probe (``VolumeStore.shared``) keys on it."""
    return _generation


def forget() -> None:
    """Drop every cached answer: the next :func:`volumes_mount_status` looks again."""
    global _generation
    with _lock:
        _cache.clear()
        _generation += 1


def volumes_mount_status() -> tuple[Path | None, str]:
    """``(mount or None, why)`` for the ``volumes_mount`` setting, probed once per settings (see :func:`probe`).

    Answers are looked at again after :data:`NO_MOUNT_TTL` seconds, so a long-lived process (the
    Jupyter server, a kernel) sees a mount that appears or goes behind its back; when the answer
    changes, :func:`generation` moves on and the shared store is made again. A "no mount" look is
    local and cheap; a "mount" answer is first checked with one ``ismount`` on a thread, waited
    for at most a quarter second: a mount that does not answer (stuck) is still taken as one."""
    global _generation
    key = settings_key()
    found = _cache.get(key)
    if found is not None:
        if time.monotonic() - _seen.get(key, 0.0) < NO_MOUNT_TTL:
            return found
        if found[0] is not None and _still_mounted(found[0]) is not False:
            _seen[key] = time.monotonic()  # mounted, or not answering (a stuck mount is still one)
            return found
    seen = _generation
    fresh = probe(Path(key[0]))
    with _lock:
        if seen == _generation:  # a forget() meanwhile: this look may be older than what changed
            if len(_cache) > 64:  # settings changed many times (tests): keep it small
                _cache.clear()
                _seen.clear()
            if found is not None and fresh[0] != found[0]:
                _generation += 1  # a mount appeared: stores built on the old answer are rebuilt
            _cache[key] = fresh
            _seen[key] = time.monotonic()
    return fresh


_checking: list[threading.Thread] = []  # the one ismount check in flight (a stuck mount holds it)


def _still_mounted(point: Path) -> bool | None:
    """Whether *point* is still a mount point: True, False, or None when the check did not answer
    within 0.25 s (or an earlier check is still stuck on it)."""
    if _checking and _checking[0].is_alive():
        return None
    answer: list[bool] = []
    t = threading.Thread(target=lambda: answer.append(os.path.ismount(point)), name="air-mount-check", daemon=True)
    _checking[:] = [t]
    t.start()
    t.join(0.25)
    return answer[0] if answer else None


def volumes_mount() -> Path | None:
    """The real volumes mount if one is present, else ``None`` (cached, see :func:`volumes_mount_status`)."""
    return volumes_mount_status()[0]


def probe(mount: Path) -> tuple[Path | None, str]:
    """``(mount or None, why)``: whether *mount* is a real volumes mount, looked at now.

    It counts when it is a FUSE or network filesystem mounted there (Linux), or when it is a plain
    folder whose entries are catalog folders holding schema folders holding volume folders
    (identifier names; hidden entries ignored; an empty folder counts). It does not count when
    ``volumes_root`` is set (the user asked for that root), when it is missing, when it leads to the
    embedded root (the link ``%air_volume mount`` makes) or to a folder holding the marker ``mount``
    leaves in an embedded root (another ``AIR_HOME``'s link), or when it holds anything else: a name
    that is not a catalog name (``Macintosh HD``), a file, or a disk mounted below it (macOS).
    """
    if get("volumes_root") is not None:
        return None, "volumes_root (AIR_VOLUMES_ROOT) is set, so it is used instead of a mount"
    mount = Path(mount)
    if not mount.is_dir():
        return None, f"no volumes mount: {mount} is not a folder"
    real = os.path.realpath(mount)
    why = _embedded_link(mount, real)
    if why:
        return None, why
    fstype = _mount_fstype(real)
    if fstype and fstype.split(".")[0].startswith(_NETWORK_FS):
        return mount, f"{mount} is a {fstype} mount"
    why, empty = _tree_reason(mount)
    if why:
        return None, why
    if empty:
        return mount, f"{mount} is an empty folder (no disks): volumes created there"
    return mount, f"{mount} holds catalog/schema/volume folders"


def _embedded_link(mount: Path, real: str) -> str | None:
    """Why *mount* is an embedded root rather than a mount, or None.

    Only a link can be another AIR_HOME's root: a real mount is never asked for the marker (on a
    stuck remote mount that lookup would hang every caller on the same name)."""
    root = embedded_volumes_root()
    if real == os.path.realpath(root):
        return f"{mount} leads to the embedded root {root}"
    if os.path.islink(mount) and os.path.isfile(os.path.join(real, EMBEDDED_MARKER)):
        return f"{mount} leads to {real}, the embedded root of another AIR_HOME (linked by %air_volume mount)"
    return None


def _mount_fstype(path: str) -> str | None:
    """Filesystem type of the mount point *path* (Linux ``/proc/self/mountinfo``), None if not one."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    found = None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) > 4 and right:
            point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
            if point == path:
                found = right.split()[0]  # the last mount on a point is the visible one
    return found


def _tree_reason(mount: Path) -> tuple[str | None, bool]:
    """``(why not, empty)``: why *mount* is not a catalog/schema/volume tree (a sample of it, None
    when it is one), and whether it holds no catalog at all."""
    catalogs, why = _folders(mount, str(mount), "catalog")
    if why:
        return why, False
    for cat in catalogs[:_SAMPLE_CATALOGS]:
        schemas, why = _folders(mount, cat, "schema")
        if why:
            return why, False
        for sch in schemas[:1]:
            why = _folders(mount, sch, "volume")[1]
            if why:
                return why, False
    return None, not catalogs


def _folders(mount: Path, d: str, level: str) -> tuple[list[str], str | None]:
    """Non-hidden entries of *d* if each is a *level* folder on *d*'s device, else ``([], reason)``."""
    not_mount = f"{mount} is not a volumes mount"
    try:
        dev = os.stat(d).st_dev
        with os.scandir(d) as it:
            entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError as exc:
        return [], f"{not_mount}: {os.path.relpath(d, mount)!r} cannot be listed ({exc.strerror or exc})"
    for e in entries[:_SAMPLE_ENTRIES]:
        where = os.path.join(d, e.name)
        why = _entry_reason(e.name, where, os.path.relpath(where, mount), dev, level)
        if why:
            return [], f"{not_mount}: {why}"
    return [os.path.join(d, e.name) for e in entries], None


def _entry_reason(name: str, where: str, rel: str, dev: int, level: str) -> str | None:
    """Why the entry *rel* is not a *level* folder on device *dev*, or None."""
    if not is_name(name):
        return f"it holds {rel!r}, which is not a {level} name (as disks under macOS /Volumes)"
    try:
        st = os.stat(where)
    except OSError:
        return f"{rel!r} is a broken link, not a {level} folder"
    if not stat.S_ISDIR(st.st_mode):
        return f"{rel!r} is a file, not a {level} folder"
    if st.st_dev != dev:
        return f"{rel!r} is a disk mounted there, not a {level} folder"
    return None
