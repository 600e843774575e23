"""Which processes using a cache are alive: one locked file per process, so a crashed one's
overflow folder is found and swept however it died.

Liveness: each process that uses the cache holds an ``flock`` on ``<pid>-<token>.lock`` beside its
folder for as long as it lives (the kernel drops it when the process dies, however it dies); both
are made when the process first opens the cache's index, and removed when it exits (a DataLoader
worker too). The next process that opens the cache removes the folders whose lock it can take: a
folder left so is the mark of a crashed process (see ``FileCache.check``). A pid alone would not do: a process in
another pid namespace (a container sharing the cache folder) has a pid that means nothing here.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import secrets
import shutil
import time
from pathlib import Path

from ..io.atomic import replace
from ..io.process import pid_alive

__all__ = ["own_folder", "sweep_dead", "dead_folders"]

_LOCK_SUFFIX = ".lock"
_LEGACY_AGE = 24 * 3600.0  # a folder without a lock file (an older version's) is swept when this old
_HELD_LOCKS: set[int] = set()  # this process's folder-lock descriptors; a forked child closes its copies


def _close_inherited_locks() -> None:
    """In a forked child: drop the copies of the parent's lock descriptors (the parent keeps its
    lock; the child's copy would otherwise keep a dead parent's folder "alive" while it runs)."""
    for fd in list(_HELD_LOCKS):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_close_inherited_locks)


def own_folder(base: Path) -> Path:
    """A new folder under *base* for this process, its lock held for as long as the process lives
    and both removed when it exits (through ``atexit``, or a multiprocessing child's finalizers)."""
    name = f"{os.getpid()}-{secrets.token_hex(4)}"
    # locked under a hidden name, then renamed: a sweeper never sees the lock file unlocked
    fd = os.open(base / f".{name}.new", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh name: never contended
    replace(base / f".{name}.new", base / (name + _LOCK_SUFFIX))
    _HELD_LOCKS.add(fd)
    folder = base / name  # made after its lock: no sweeper ever sees it unlocked
    folder.mkdir()
    pid = os.getpid()
    atexit.register(_remove_own, folder, fd, pid)
    from multiprocessing.util import Finalize  # (lazy: 0.1 s cold, not on the extension's import path)

    # a multiprocessing child (a DataLoader worker) leaves through os._exit, past atexit
    Finalize(None, _remove_own, (folder, fd, pid), exitpriority=0)
    return folder


def sweep_dead(base: Path) -> list[str]:
    """Remove the overflow folders under *base* whose owner is gone: those whose lock can be taken.

    A folder without a lock file (left by an older version) goes only when the pid in its name is
    not running here and it has not changed for a day. Returns the names removed."""
    try:
        names = set(os.listdir(base))
    except FileNotFoundError:
        return []
    removed = []
    for name in sorted(names):
        if name.startswith("."):
            continue  # a lock file being made
        if name.endswith(_LOCK_SUFFIX):
            if name[: -len(_LOCK_SUFFIX)] not in names and _take(base / name) is not None:
                _unlink(str(base / name))  # a lock whose folder is gone (its owner died while sweeping)
            continue
        folder, lock = base / name, base / (name + _LOCK_SUFFIX)
        if name + _LOCK_SUFFIX in names:
            fd = _take(lock)
            if fd is None:
                continue  # alive, in this pid namespace or another
            try:
                shutil.rmtree(folder, ignore_errors=True)
                _unlink(str(lock))
            finally:
                os.close(fd)
        elif _legacy_dead(folder, name):
            shutil.rmtree(folder, ignore_errors=True)
        else:
            continue
        removed.append(name)
    return removed


def dead_folders(base: Path) -> list[str]:
    """The names under *base* (folders and lock files) :func:`sweep_dead` would remove now: those
    whose lock is free (taken and released at once, nothing removed)."""
    try:
        names = set(os.listdir(base))
    except FileNotFoundError:
        return []
    dead = []
    for name in sorted(names):
        if name.startswith("."):
            continue
        stem = name[: -len(_LOCK_SUFFIX)] if name.endswith(_LOCK_SUFFIX) else name
        if stem + _LOCK_SUFFIX not in names:
            if name == stem and _legacy_dead(base / name, name):
                dead.append(name)
            elif name != stem:
                fd = _take(base / name)
                if fd is not None:
                    os.close(fd)
                    dead.append(name)  # a lock whose folder is gone
            continue
        if name == stem:
            fd = _take(base / (name + _LOCK_SUFFIX))
            if fd is not None:
                os.close(fd)
                dead.append(name)
    return dead


def _take(lock: Path) -> int | None:
    """An open descriptor holding *lock* (its owner is gone), or None while someone holds it."""
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None  # removed by another sweeper meanwhile
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _legacy_dead(folder: Path, name: str) -> bool:
    pid, _, _token = name.partition("-")
    if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)):
        return False
    try:
        return time.time() - os.stat(folder).st_mtime > _LEGACY_AGE
    except OSError:
        return False


def _remove_own(folder: Path, fd: int, pid: int) -> None:
    """At exit: this process's folder and lock (never a parent's, in a forked child)."""
    if os.getpid() != pid or fd not in _HELD_LOCKS:  # another process's, or removed already
        return
    shutil.rmtree(folder, ignore_errors=True)
    _unlink(str(folder) + _LOCK_SUFFIX)
    _HELD_LOCKS.discard(fd)
    try:
        os.close(fd)
    except OSError:
        pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
