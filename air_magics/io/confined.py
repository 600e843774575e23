"""The one confined open: every read and write of a local or mounted volume goes through here.

Why: checking a path string (or its ``realpath``) before use is not enough. A link can be created
or swapped between the check and the ``open``, and a FIFO in a folder blocks ``open()`` for good.
So the check is made on what was actually opened, at the moment of use:

* **Reads** (:func:`open_read`): open with ``O_NONBLOCK | O_NOCTTY`` (a FIFO or device never blocks
  the open), ``fstat`` the descriptor and refuse anything but a regular file, then read the
  descriptor's real path from the kernel (``/proc/self/fd`` on Linux, ``F_GETPATH`` on macOS) and
  refuse it unless it lies inside the root. What is then read is exactly what was verified. Links
  that stay inside the root are allowed. Cost: one ``readlink`` of ``/proc/self/fd/N`` per file.
* **Folders** (:func:`open_dir`): the same verification for a directory descriptor; missing
  components are created one at a time relative to the verified parent (``mkdir`` +
  ``open(O_NOFOLLOW | O_DIRECTORY)``), so a link planted anywhere on the way is never followed.
* **Writes** (:func:`publish_at`, :func:`open_write`): files are created, stamped and renamed
  relative to a verified directory descriptor with ``O_NOFOLLOW``, so no later swap of a path
  component can redirect the write, and a link at the final name is replaced, never followed.

Where the kernel cannot tell a descriptor's path, every component is walked from the root with
``O_NOFOLLOW`` instead (links refused outright). ``root=None`` means "no containment" (a local
file the user named explicitly): the special-file and no-follow rules still hold.
"""

from __future__ import annotations

import errno
import os
import stat as _stat
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import IO, Any

from ..errors import ConfinementError, SpecialFileError

__all__ = [
    "exists_at",
    "folder_at",
    "create_at",
    "write_at",
    "fill",
    "real_root",
    "open_read",
    "open_dir",
    "publish_at",
    "open_write",
    "open_file",
    "makedirs",
    "check_inside",
    "is_within",
    "write_all",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
_PROC_FD = os.path.isdir("/proc/self/fd")
_KINDS = {
    _stat.S_IFIFO: "a FIFO (named pipe)",
    _stat.S_IFSOCK: "a socket",
    _stat.S_IFCHR: "a character device",
    _stat.S_IFBLK: "a block device",
    _stat.S_IFDIR: "a folder",
    _stat.S_IFLNK: "a symlink",
}


def is_within(path: str, root: str) -> bool:
    """True if real path *path* is *root* or below it (both already resolved)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@lru_cache(maxsize=1024)
def real_root(root: str) -> str:
    """``realpath`` of a confinement root, cached: the root is the trust anchor, resolved once."""
    return os.path.realpath(root)


def _fd_path(fd: int) -> str | None:
    """The kernel's idea of where an open descriptor lives, or None where it cannot say."""
    if _PROC_FD:
        try:
            p = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        return p if p.startswith("/") else None
    if sys.platform == "darwin":  # pragma: no cover - exercised on macOS only
        import fcntl

        try:
            raw = fcntl.fcntl(fd, fcntl.F_GETPATH, b"\0" * 1024)  # type: ignore[attr-defined]
            return raw.split(b"\0", 1)[0].decode()
        except OSError:
            return None
    return None  # pragma: no cover


def _kind(mode: int) -> str:
    return _KINDS.get(_stat.S_IFMT(mode), "not a regular file")


def check_inside(fd: int, path: str, root: str | None) -> None:
    """Raise :class:`ConfinementError` unless the open descriptor *fd* lies inside *root*."""
    if root is None:
        return
    where = _fd_path(fd)
    if where is None:
        raise ConfinementError(f"cannot verify where {path!r} leads on this platform; refusing it")
    if not is_within(where, real_root(root)):
        raise ConfinementError(
            f"{path!r} leads outside {root!r} (a symlink or a swapped folder); refusing to follow it: "
            f"remove the link or use a path inside the volume"
        )


def _refuse_special(st: os.stat_result, path: str, want_dir: bool = False) -> None:
    if want_dir and _stat.S_ISDIR(st.st_mode):
        return
    if not want_dir and _stat.S_ISREG(st.st_mode):
        return
    if want_dir:
        raise NotADirectoryError(errno.ENOTDIR, f"{path!r} is {_kind(st.st_mode)}, not a folder")
    if _stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{path!r} is a folder, not a file")
    raise SpecialFileError(
        f"{path!r} is {_kind(st.st_mode)}, not a regular file; refusing to open it "
        f"(remove it from the selection, or exclude it with a pattern)"
    )


def _rel_parts(path: str, root: str) -> list[str] | None:
    """Components of *path* below *root* (lexically), or None when it is not below it."""
    root_n, path_n = os.path.normpath(root), os.path.normpath(path)
    if path_n == root_n:
        return []
    if not path_n.startswith(root_n.rstrip(os.sep) + os.sep):
        return None
    return path_n[len(root_n.rstrip(os.sep)) + 1 :].split(os.sep)


def _walk_open(path: str, root: str, flags: int) -> int:
    """Open *path* by walking from *root* with ``O_NOFOLLOW`` on every component (no link followed)."""
    parts = _rel_parts(path, root)
    if parts is None:
        raise ConfinementError(f"{path!r} is not inside {root!r}; refusing it")
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            f = flags if last else os.O_RDONLY | _DIRECTORY
            try:
                nxt = os.open(name, f | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and not last):
                    raise ConfinementError(
                        f"{path!r}: component {name!r} is a symlink or not a folder; refusing to "
                        f"follow it (remove the link)"
                    ) from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_read(path: str, root: str | None = None) -> tuple[int, os.stat_result]:
    """Open a regular file for reading, confined to *root*; returns ``(fd, fstat)``. Never blocks on
    a FIFO or device. The caller closes the descriptor."""
    flags = os.O_RDONLY | _NONBLOCK | _NOCTTY | _CLOEXEC
    if root is not None and not _PROC_FD and sys.platform != "darwin":  # pragma: no cover
        fd = _walk_open(path, root, flags)
    else:
        fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        _refuse_special(st, path)
        check_inside(fd, path, root)
        # O_NONBLOCK stays set: it has no effect on regular files (open(2)), and clearing it
        # would cost one more syscall per file on the loader's path
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def open_dir(path: str, root: str | None = None, *, create: bool = False) -> int:
    """A directory descriptor for *path*, verified inside *root*; with ``create``, missing folders
    are made one component at a time below the deepest existing (verified) ancestor."""
    flags = os.O_RDONLY | _DIRECTORY | _NONBLOCK | _CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if not create:
            raise
        if root is not None and path != root and is_within(os.path.normpath(path), os.path.normpath(root)):
            os.makedirs(root, exist_ok=True)
            return _make_below(path, root)
        os.makedirs(path, exist_ok=True)  # no root: the caller named this folder itself
        fd = os.open(path, flags)
    try:
        if not _DIRECTORY:  # (with O_DIRECTORY the open itself refused anything but a folder: no
            _refuse_special(os.fstat(fd), path, want_dir=True)  # fstat, one request less on a mount)
        check_inside(fd, path, root)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _make_below(path: str, root: str) -> int:
    """Create the missing tail of *path*: find the deepest existing ancestor (verified), then make
    and open each missing component relative to it with ``O_NOFOLLOW``."""
    head, missing = os.path.normpath(path), []
    while True:
        parent, name = os.path.split(head)
        missing.append(name)
        head = parent
        if os.path.lexists(head) or head == os.path.normpath(root):
            break
    fd = open_dir(head, root)
    try:
        for name in reversed(missing):
            nxt = folder_at(fd, name, os.path.join(head, name), create=True)
            os.close(fd)
            fd, head = nxt, os.path.join(head, name)
        return fd
    except BaseException:
        os.close(fd)
        raise


def folder_at(dir_fd: int, name: str, display: str, *, create: bool = False) -> int:
    """A descriptor of folder *name* inside the open folder *dir_fd* (made first with *create*); a
    link or a file there is refused as :class:`ConfinementError` naming *display*, never followed."""
    if create:
        try:
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        except FileExistsError:
            pass
    try:
        return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ConfinementError(
                f"{display!r} is a symlink or a file where a folder is needed; refusing to follow it (remove it)"
            ) from None
        raise


def create_at(dir_fd: int, name: str) -> int:
    """File *name* inside the open folder *dir_fd*, created or emptied, open for writing (a link
    there is refused, never followed). The caller closes the descriptor."""
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=dir_fd)


def write_at(dir_fd: int, name: str, data: bytes, *, fsync: bool = False) -> None:
    """Write *data* as file *name* inside the open folder *dir_fd*, in place (no temp name: for a
    folder nobody reads before its owner publishes it; :func:`publish_at` otherwise)."""
    fd = create_at(dir_fd, name)
    try:
        fill(fd, data, fsync=fsync)
    finally:
        os.close(fd)


def fill(fd: int, data: bytes, *, fsync: bool = False) -> None:
    """*data* as the whole of the new file open at *fd*, written from offset 0 (so a retry writes
    it again rather than after what a failed try left), then fsynced if asked."""
    view, at = memoryview(data), 0
    while at < len(view):
        at += os.pwrite(fd, view[at:], at)
    if fsync:
        os.fsync(fd)


def makedirs(path: str, root: str | None = None) -> None:
    """``os.makedirs(path, exist_ok=True)``, confined to *root*."""
    os.close(open_dir(path, root, create=True))


def publish_at(
    dir_fd: int, name: str, fill: Callable[[int], None], *, mtime: float = 0.0, temp: str, fsync: bool = False
) -> None:
    """Write *name* inside the open folder *dir_fd* atomically: create *temp* there (``O_NOFOLLOW``),
    let *fill* write it, stamp *mtime* on the open file, optionally ``fsync``, rename into place
    (a link at *name* is replaced, never followed). On failure the temp file is removed and *name*
    is untouched."""
    try:
        fd = create_at(dir_fd, temp)
        try:
            fill(fd)
            if mtime:
                ns = int(mtime * 1e9)
                os.utime(fd, ns=(ns, ns))
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def exists_at(dir_fd: int, name: str) -> bool:
    """Whether *name* (``a/b``: inside folder ``a``) is in the open folder *dir_fd*: one lookup
    relative to it, a link counted, not followed."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a write may be short)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


_MODE_FLAGS = {
    "r": os.O_RDONLY,
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


def open_write(path: str, root: str | None, mode: str = "wb", **kwargs: Any) -> IO[Any]:
    """``open(path, mode)`` for writing, confined: parent folders are made inside *root*, the file is
    opened relative to the verified parent with ``O_NOFOLLOW`` (a link at the name is refused)."""
    flags = _MODE_FLAGS[next(c for c in mode if c in _MODE_FLAGS)]
    if "+" in mode:
        flags = (flags & ~(os.O_WRONLY | os.O_RDONLY)) | os.O_RDWR
    parent, name = os.path.split(os.path.normpath(path))
    dfd = open_dir(parent, root, create=True)
    try:
        try:
            fd = os.open(name, flags | _NOFOLLOW | _NONBLOCK | _NOCTTY | _CLOEXEC, 0o666, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfinementError(
                    f"{path!r} is a symlink; refusing to write through it (remove the link)"
                ) from None
            if exc.errno == errno.ENXIO:
                raise SpecialFileError(f"{path!r} is a FIFO or socket; refusing to write to it") from None
            raise
    finally:
        os.close(dfd)
    try:
        _refuse_special(os.fstat(fd), path)
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


def open_file(path: str, root: str | None, mode: str = "rb", **kwargs: Any) -> IO[Any]:
    """``open()`` confined to *root*: reads through :func:`open_read`, writes through :func:`open_write`."""
    if any(c in mode for c in "wax+"):
        return open_write(path, root, mode, **kwargs)
    fd, _ = open_read(path, root)
    try:
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise
