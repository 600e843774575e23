"""A pack's destination folder on the volume: what it may hold, its lock, and removing shards.

The lock (``<dest>/.air-pack.lock``, ``flock``) lives on the volume itself, so two packers of one
folder exclude each other whether they run in two processes, with two ``AIR_HOME``s, or on two
machines whose mount shares locks. Where locks do not reach (a mount that keeps ``flock`` per
machine), :func:`remove_unnamed`'s rule still keeps one packer from deleting the shards another is
about to publish: it removes only shards no manifest names that this run superseded or that are
older than :data:`GRACE`.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time

from ..errors import PackError, ShardError
from ..io.confined import open_read
from ..io.leftovers import is_leftover
from ..io.retry import retry_call
from ..volumes.location import Location
from ..volumes.path import VolumePath
from .format import MANIFEST_NAME, Manifest, load_manifest

__all__ = [
    "LOCK_NAME",
    "GRACE",
    "read_local",
    "is_shard_file",
    "check_destination",
    "lock_destination",
    "remove_unnamed",
]

LOCK_NAME = ".air-pack.lock"
GRACE = 3600.0  # seconds an unnamed shard is left for the packer that may still publish it
_NOLOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)


def read_local(dloc: Location, name: str) -> bytes:
    """A small file of the destination (manifest, index), confined, transient errors retried."""

    def once() -> bytes:
        fd, st = open_read(os.path.join(dloc.path, name), dloc.root)
        try:
            return os.read(fd, st.st_size + 1)
        finally:
            os.close(fd)

    return retry_call(once)


def is_shard_file(name: str) -> bool:
    return name.startswith("shard-") and name.endswith((".tar", ".idx.json"))


def check_destination(dest: VolumePath, dloc: Location) -> bool:
    """Refuse a destination that is a file, or a folder holding anything but a packed folder's
    files; True when it holds a manifest. Cheap (one listing): done before anything is written."""
    try:
        names = [n for n in os.listdir(dloc.path) if not is_leftover(n)]
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise PackError(f"destination {dest} is a file; pass a folder (new, or one written by pack)") from None
    if MANIFEST_NAME in names:
        return True
    strays = [n for n in names if not is_shard_file(n) and n != LOCK_NAME]
    if strays:
        raise PackError(
            f"destination {dest} is not empty and not a packed folder (it holds {strays[0]!r}"
            f"{f' and {len(strays) - 1} more' if len(strays) > 1 else ''}); pick a new folder"
        )
    return False  # at most shards of a first run that was killed: reused below where complete


def lock_destination(dfd: int, dest: VolumePath) -> int | None:
    """Step 1: the pack lock, a file in the destination on the volume itself; its descriptor (None
    where the volume keeps no locks: then step 5's rule alone protects a concurrent packer)."""
    try:
        fd = retry_call(
            lambda: os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dfd)
        )
    except OSError as exc:
        raise PackError(
            f"cannot open the pack lock {dest}/{LOCK_NAME} ({exc.strerror}); remove whatever has that name"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise PackError(
            f"another pack is writing {dest} right now (it holds {dest}/{LOCK_NAME}); wait for it to finish"
        ) from None
    except OSError as exc:
        os.close(fd)
        if exc.errno in _NOLOCKS:
            return None
        raise
    return fd


def remove_unnamed(dfd: int, dloc: Location, manifest: Manifest, superseded: set[str]) -> int:
    """Step 5: remove the shards (file and index) that no manifest names and that this run
    superseded or that are older than ``GRACE`` (see the module docstring of :mod:`.writer`, step 5); returns how many."""
    named = {n for s in manifest.shards for n in (s.name, s.index)}
    try:  # the manifest on the volume now: another packer's, where the volume's locks do not reach
        now_raw = read_local(dloc, MANIFEST_NAME)
        current = load_manifest(now_raw, MANIFEST_NAME)
    except (OSError, ShardError):
        return 0  # cannot tell what it names: remove nothing
    named |= {n for s in current.shards for n in (s.name, s.index)}
    by_shard: dict[str, list[str]] = {}
    for name in os.listdir(dfd):
        if is_shard_file(name) and name not in named:
            sid = name[len("shard-") :].split(".", 1)[0]
            by_shard.setdefault(sid, []).append(name)
    removed = 0
    old = time.time() - GRACE
    for names in by_shard.values():
        if not all(n in superseded or _mtime(dfd, n) < old for n in names):
            continue
        for name in names:
            try:
                os.unlink(name, dir_fd=dfd)
                removed += name.endswith(".tar")
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    raise
    return removed


def _mtime(dfd: int, name: str) -> float:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return 0.0
