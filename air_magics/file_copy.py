"""How one file is copied: atomically (temp name + rename), in one read when small, in parallel
ranges when large, and how "already there, unchanged" is decided. The parallel engine that calls
this for many files is :mod:`air_magics.transfer`.
"""
from __future__ import annotations

import errno
import os
import threading
from typing import TYPE_CHECKING, Callable

from .volumes.store import Location, fs_mtime

if TYPE_CHECKING:  # pragma: no cover
    from .transfer import CopyTask

__all__ = ["TEMP_MARK", "DirMaker", "copy_file", "is_unchanged", "source_stat"]

_ONE_READ_MAX = 64 << 20  # files up to this size are read with one call
_CHUNK = 8 << 20
_RANGE = 32 << 20          # large files are copied as parallel ranges of this size ...
_RANGE_THREADS = 8         # ... this many at a time
_MTIME_TOLERANCE = 1e-3
TEMP_MARK = ".air-tmp-"


class DirMaker:
    """Creates each destination folder once; concurrent callers never race into ``EEXIST``."""

    def __init__(self) -> None:
        self._made: set[str] = set()

    def ensure(self, loc: Location) -> None:
        parent = os.path.dirname(loc.path)
        if not parent or parent in self._made:
            return
        if loc.is_local:
            os.makedirs(parent, exist_ok=True)
        else:
            try:
                loc.fs.makedirs(parent, exist_ok=True)
            except (NotImplementedError, FileExistsError):
                pass
        self._made.add(parent)  # set.add is atomic under the GIL


def _temp_name(dst: str) -> str:
    """Unique per (process, thread) and stable across retries of one file, so a retry reuses it."""
    head, tail = os.path.split(dst)
    return os.path.join(head, f".{tail}{TEMP_MARK}{os.getpid()}-{threading.get_ident()}")


def _publish_atomic(dst: str, mtime: float, fill: "Callable[[int], None]") -> None:
    """Create a temp file beside *dst*, let *fill* write it, stamp *mtime*, rename it into place;
    on any failure the temp file is removed and *dst* is untouched."""
    tmp = _temp_name(dst)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fill(fd)
            if mtime:  # on the open file: no second path lookup
                ns = int(mtime * 1e9)
                os.utime(fd, ns=(ns, ns))
        finally:
            os.close(fd)
        os.replace(tmp, dst)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def is_unchanged(task: "CopyTask") -> int | None:
    """The source's size when the destination already holds this version of it, else ``None``.

    The destination is checked first (local disk, cheap); the source is stat'ed only when there
    is something to compare with and the listing did not already give its size and mtime."""
    dst = task.dst
    try:
        if dst.is_local:
            st = os.stat(dst.path)
            dsize, dmtime, exact = st.st_size, st.st_mtime, True
        else:
            info = dst.fs.info(dst.path)
            dsize, dmtime, exact = int(info.get("size") or -1), fs_mtime(info), False
    except (FileNotFoundError, NotADirectoryError):
        return None
    size, mtime = (task.size, task.mtime) if task.size >= 0 else source_stat(task.src)
    if dsize != size:
        return None
    # fsspec stores cannot set mtime: a destination written after the source changed counts
    ok = abs(dmtime - mtime) <= _MTIME_TOLERANCE if exact else dmtime + _MTIME_TOLERANCE >= mtime
    return size if ok else None


def source_stat(src: Location) -> tuple[int, float]:
    if src.is_local:
        st = os.stat(src.path)
        return st.st_size, st.st_mtime
    info = src.fs.info(src.path)
    return int(info.get("size") or 0), fs_mtime(info)


def _copy_large_local(fin: int, src: str, dst: str, size: int, mtime: float) -> int:
    """Large local/mounted file: parallel ranged reads and writes (a remote mount serves each range
    concurrently), never the whole file in memory."""
    from concurrent.futures import ThreadPoolExecutor

    def fill(fout: int) -> None:
        def copy_range(start: int) -> None:
            pos, end = start, min(start + _RANGE, size)
            while pos < end:
                data = os.pread(fin, min(_CHUNK, end - pos), pos)
                if not data:
                    raise OSError(errno.ESTALE, f"{src} shrank while it was copied")
                view = memoryview(data)
                while view:
                    n = os.pwrite(fout, view, pos)
                    view, pos = view[n:], pos + n

        with ThreadPoolExecutor(max_workers=_RANGE_THREADS, thread_name_prefix="air-range") as pool:
            list(pool.map(copy_range, range(0, size, _RANGE)))
        if os.fstat(fin).st_size != size:
            raise OSError(errno.ESTALE, f"{src} changed size while it was copied")

    _publish_atomic(dst, mtime, fill)
    return size


def _copy_stream(src: Location, dst: Location) -> int:
    """Large file with an fsspec side: stream in chunks."""
    import shutil

    fin = open(src.path, "rb") if src.is_local else src.fs.open(src.path, "rb")
    with fin:
        if dst.is_local:
            tmp = _temp_name(dst.path)
            try:
                with open(tmp, "wb") as fout:
                    shutil.copyfileobj(fin, fout, _CHUNK)
                os.replace(tmp, dst.path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            return os.path.getsize(dst.path)
        with dst.fs.open(dst.path, "wb") as fout:
            shutil.copyfileobj(fin, fout, _CHUNK)
        return int(dst.fs.info(dst.path).get("size") or 0)


def _read_all(fd: int, size: int) -> bytes:
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    chunks = []
    while True:
        b = os.read(fd, max(size + 1, 1 << 16))  # one large read; the next returns b"" at EOF
        if not b:
            break
        chunks.append(b)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def copy_file(task: "CopyTask", dirs: DirMaker) -> int:
    """Copy one file; returns bytes written. A local source is opened once: its size and mtime come
    from ``fstat`` of that open file (served from the lookup the open made), so no separate stat
    round trip is needed and what is stamped on the copy is what was read."""
    src, dst = task.src, task.dst
    if not src.is_local:
        size = task.size if task.size >= 0 else source_stat(src)[0]
        if size > _ONE_READ_MAX:
            dirs.ensure(dst)
            return _copy_stream(src, dst)
        data, mtime = src.fs.cat_file(src.path), task.mtime
    else:
        fd = os.open(src.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if st.st_size > _ONE_READ_MAX:
                dirs.ensure(dst)
                if dst.is_local:
                    return _copy_large_local(fd, src.path, dst.path, st.st_size, st.st_mtime)
                return _copy_stream(src, dst)
            data, mtime = _read_all(fd, st.st_size), st.st_mtime
        finally:
            os.close(fd)
    dirs.ensure(dst)
    if dst.is_local:
        _publish_atomic(dst.path, mtime, lambda fd: _write_all(fd, data))
    else:  # object stores publish an object only when its upload completes
        with dst.fs.open(dst.path, "wb") as f:
            f.write(data)
    return len(data)
