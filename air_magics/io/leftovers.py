"""Names of in-flight files and folders, and sweeping the ones dead processes left behind.

Why: a process killed mid-copy or mid-export leaves its temp file or pending folder. Those names
must never be taken for data (listings and datasets hide them) and must not pile up (the next
writer into the same folder removes the ones whose owning process is gone). Every such name
carries its owner's pid so liveness can be checked.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import uuid

from .process import pid_alive

__all__ = [
    "TEMP_MARK",
    "NAME_MAX",
    "PENDING_EXPORT_PREFIX",
    "TRASH_EXPORT_PREFIX",
    "FUSE_HIDDEN_PREFIX",
    "temp_name",
    "owned_name",
    "is_leftover",
    "owner_pid",
    "sweep_stale",
]

TEMP_MARK = ".air-tmp-"
NAME_MAX = 255  # bytes in one file name on Linux filesystems (ext4, xfs, tmpfs, most FUSE mounts)
PENDING_EXPORT_PREFIX = ".pending-export-"  # an export being written: .pending-export-<pid>-<12 hex>
TRASH_EXPORT_PREFIX = ".trash-export-"  # the folder an export replaces, until it is deleted
_TEMP_RX = re.compile(r"\A\..*" + re.escape(TEMP_MARK) + r"(\d+)-\d+\Z", re.S)
_EXPORT_RX = re.compile(r"\A\.(?:pending|trash)-export-(\d+)-[0-9a-f]{12}\Z")


def temp_name(name: str) -> str:
    """Temp name for *name* in the same folder: unique per (process, thread), stable across retries.

    ``.<name>.air-tmp-<pid>-<thread>`` while that fits in ``NAME_MAX`` bytes; for a longer *name*
    (any legal name is up to 255 bytes) its front is kept, cut to fit, followed by ``~`` and a short
    hash of the whole name, so two long names never share a temp name and the sweeper still knows it.
    """
    suffix = f"{TEMP_MARK}{os.getpid()}-{threading.get_ident()}"
    whole = f".{name}{suffix}"
    if len(os.fsencode(whole)) <= NAME_MAX:
        return whole
    digest = "~" + hashlib.blake2b(os.fsencode(name), digest_size=6).hexdigest()
    room = NAME_MAX - 1 - len(os.fsencode(digest + suffix))
    front = os.fsencode(name)[:room].decode("utf-8", "ignore")  # never half a character
    return f".{front}{digest}{suffix}"


def owned_name(prefix: str) -> str:
    """``<prefix><pid>-<12 hex>``: a fresh in-flight folder name (:data:`PENDING_EXPORT_PREFIX`,
    :data:`TRASH_EXPORT_PREFIX`) owned by this process, so the sweeper can tell a dead one's."""
    return f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:12]}"


FUSE_HIDDEN_PREFIX = ".fuse_hidden"  # libfuse's name for a file removed while still open; gone once closed


def is_leftover(name: str) -> bool:
    """True for a copy's temp file, an export's pending or trash folder, or a FUSE mount's hidden
    file (never data). The last: a temp file removed just after an interrupt, whose close the FUSE
    server had not seen yet, stays as ``.fuse_hidden...`` for a moment, and a re-run of an
    interrupted pack must not take it for a stranger's file in its destination."""
    return (name.startswith(".") and TEMP_MARK in name) or name.startswith(
        (PENDING_EXPORT_PREFIX, TRASH_EXPORT_PREFIX, FUSE_HIDDEN_PREFIX)
    )


def owner_pid(name: str) -> int | None:
    """The pid recorded in a leftover's name, or None if the name carries none."""
    m = _TEMP_RX.match(name) or _EXPORT_RX.match(name)
    return int(m.group(1)) if m else None


def sweep_stale(folder: str | int, *, remove_dirs: bool = False) -> list[str]:
    """Remove the leftovers in *folder* (a path or an open directory descriptor) whose owner is dead.

    Returns the names removed. Temp files of live processes, and names without a pid, are kept.
    Folders are removed only with ``remove_dirs`` (pending exports)."""
    import shutil

    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not is_leftover(name):
            continue
        pid = owner_pid(name)
        if pid is None or pid_alive(pid):
            continue
        try:
            if isinstance(folder, int):
                os.unlink(name, dir_fd=folder)
            else:
                path = os.path.join(folder, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    if not remove_dirs:
                        continue
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            removed.append(name)
        except IsADirectoryError:
            continue
        except OSError:
            continue
    return removed
