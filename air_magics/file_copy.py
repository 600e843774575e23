"""How one file is copied: atomically (temp name + rename), in one read when small, in parallel
ranges when large, and how "already there, unchanged" is decided. The parallel engine that calls
this for many files is :mod:`air_magics.transfer`.
"""
from __future__ import annotations

import errno
import os
import threading
from typing import TYPE_CHECKING

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


def _read_local(src: str, size_hint: int) -> tuple[bytes, os.stat_result | None]:
    fd = os.open(src, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        want = size_hint if 0 <= size_hint <= _ONE_READ_MAX else _CHUNK
        chunks = []
        while True:
            b = os.read(fd, max(want, 1 << 16))
            if not b:
                break
            chunks.append(b)
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        st = os.fstat(fd) if len(data) != size_hint else None
        return data, st
    finally:
        os.close(fd)


def _write_local_atomic(dst: str, data: bytes, mtime: float) -> None:
    tmp = _temp_name(dst)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        if mtime:
            ns = int(mtime * 1e9)
            os.utime(tmp, ns=(ns, ns))
        os.replace(tmp, dst)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def is_unchanged(task: "CopyTask", size: int, mtime: float) -> bool:
    """True when the destination already holds this version of the source."""
    dst = task.dst
    try:
        if dst.is_local:
            st = os.stat(dst.path)
            return st.st_size == size and abs(st.st_mtime - mtime) <= _MTIME_TOLERANCE
        info = dst.fs.info(dst.path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    # fsspec stores cannot set mtime: a destination written after the source changed counts
    return int(info.get("size") or -1) == size and fs_mtime(info) + _MTIME_TOLERANCE >= mtime


def source_stat(src: Location) -> tuple[int, float]:
    if src.is_local:
        st = os.stat(src.path)
        return st.st_size, st.st_mtime
    info = src.fs.info(src.path)
    return int(info.get("size") or 0), fs_mtime(info)


def _copy_large_local(src: str, dst: str, size: int, mtime: float) -> int:
    """Large local/mounted file: parallel ranged reads and writes (a remote mount serves each range
    concurrently), never the whole file in memory."""
    from concurrent.futures import ThreadPoolExecutor

    tmp = _temp_name(dst)
    fin = os.open(src, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        fout = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
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
        finally:
            os.close(fout)
        if mtime:
            ns = int(mtime * 1e9)
            os.utime(tmp, ns=(ns, ns))
        os.replace(tmp, dst)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        os.close(fin)
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


def copy_file(task: "CopyTask", size: int, mtime: float, dirs: DirMaker) -> int:
    """Copy one file; returns bytes written."""
    src, dst = task.src, task.dst
    if size > _ONE_READ_MAX:
        dirs.ensure(dst)
        if src.is_local and dst.is_local:
            return _copy_large_local(src.path, dst.path, size, mtime)
        return _copy_stream(src, dst)
    if src.is_local:
        data, st = _read_local(src.path, size)
        if st is not None:  # changed since listing: stamp what we actually read
            mtime = st.st_mtime
    else:
        data = src.fs.cat_file(src.path)
    dirs.ensure(dst)
    if dst.is_local:
        _write_local_atomic(dst.path, data, mtime)
    else:  # object stores publish an object only when its upload completes
        with dst.fs.open(dst.path, "wb") as f:
            f.write(data)
    return len(data)
