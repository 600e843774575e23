"""How one file is copied: atomically (temp name + rename), in one read when small, in parallel
ranges when large, and how "already there, unchanged" is decided. The parallel engine that calls
this for many files is :mod:`air_magics.transfer.engine`.

Every step runs inside :data:`_READING` or :data:`_WRITING`, which mark an error with the side it
happened on (:func:`~air_magics.transfer.task.mark_side`), so a failure says "reading the source"
or "writing the destination" from where it happened, not from guesses about its message.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import IO

from ..io.confined import open_dir, open_read, publish_at, write_all
from ..io.forksafe import renew_after_fork
from ..io.leftovers import TEMP_MARK, sweep_stale, temp_name
from ..io.pools import job_pool, threads
from ..io.versions import MTIME_TOLERANCE, same_version
from ..volumes.location import Location, fs_mtime
from .task import DESTINATION, SOURCE, CopyTask, mark_side

__all__ = ["TEMP_MARK", "DirMaker", "copy_file", "is_unchanged", "source_stat"]

_ONE_READ_MAX = 64 << 20  # files up to this size are read with one call
_CHUNK = 8 << 20
_RANGE = 32 << 20  # large files are copied as parallel ranges of this size ...
_RANGE_THREADS = threads("ranges")  # ... this many at a time
_MAX_OPEN_DIRS = 256  # verified folder descriptors kept open per copy run


class _Side:
    """``with _READING:`` / ``with _WRITING:``: an error raised inside is marked with that side
    (the innermost mark is kept). A plain class, not a generator: it is entered a few times per file."""

    __slots__ = ("side",)

    def __init__(self, side: str) -> None:
        self.side = side

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool:
        if isinstance(exc, Exception):
            mark_side(exc, self.side)
        return False


_READING, _WRITING = _Side(SOURCE), _Side(DESTINATION)


class DirMaker:
    """Destination folders of one copy run: each is created once (concurrent callers never race into
    ``EEXIST``), opened once and verified inside its root (``io.confined.open_dir``); files are then
    created and renamed relative to that descriptor, so no link planted or swapped in later can
    redirect a write. With ``sweep``, the first visit of a folder removes temp files that dead
    processes left there. ``close()`` releases the descriptors."""

    def __init__(self, *, sweep: bool = False) -> None:
        self._fds: dict[str, int] = {}
        self._made: set[str] = set()
        self._lock = threading.Lock()
        self._sweep = sweep
        self._retired: list[int] = []  # descriptors of removed folders, closed with the rest
        renew_after_fork(self)  # a long-lived one (the cache's) is shared with forked workers

    def after_fork(self) -> None:
        """A forked child: a fresh lock (the descriptors stay valid, the parent's threads do not)."""
        self._lock = threading.Lock()

    def ensure(self, loc: Location) -> None:
        """Make the folder of an fsspec destination (local ones are handled by :meth:`folder`)."""
        parent = loc.path.rsplit("/", 1)[0]
        if loc.is_local or parent in self._made:
            return
        try:
            with _WRITING:
                loc.fs.makedirs(parent, exist_ok=True)
        except (NotImplementedError, FileExistsError):
            pass
        self._made.add(parent)  # set.add is atomic under the GIL

    @contextmanager
    def folder(self, loc: Location) -> Iterator[int]:
        """A verified descriptor of the local destination's folder, made if missing."""
        parent = os.path.dirname(loc.path)
        fd = self._fds.get(parent)
        if fd is not None:
            yield fd
            return
        fd = open_dir(parent, loc.root if loc.root is not None else parent, create=True)
        if self._sweep:
            sweep_stale(fd)
        with self._lock:
            if parent not in self._fds and len(self._fds) < _MAX_OPEN_DIRS:
                self._fds[parent] = fd
                cached = True
            else:
                cached = False
        try:
            yield fd
        finally:
            if not cached:
                os.close(fd)

    def forget(self, loc: Location) -> None:
        """Stop using the descriptor kept for *loc*'s folder (the folder was removed since; the next
        copy there opens it again). It is closed only by :meth:`close`: other threads may be
        creating files through it right now, and a closed number can be reused by any open."""
        with self._lock:
            fd = self._fds.pop(os.path.dirname(loc.path), None)
            if fd is not None:
                self._retired.append(fd)

    def close(self) -> None:
        with self._lock:
            fds, self._fds = [*self._fds.values(), *self._retired], {}
            self._retired = []
        for fd in fds:
            os.close(fd)

    def __enter__(self) -> DirMaker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _publish_atomic(dst: Location, dirs: DirMaker, mtime: float, fill: Callable[[int], None]) -> None:
    """Write *dst* through a temp name beside it, inside its verified folder; on any failure the
    temp file is removed and *dst* is untouched."""
    name = os.path.basename(dst.path)
    with _WRITING, dirs.folder(dst) as dfd:
        publish_at(dfd, name, fill, mtime=mtime, temp=temp_name(name))


def is_unchanged(task: CopyTask) -> int | None:
    """The source's size when the destination already holds this version of it, else ``None``.

    The destination is checked first (local disk, cheap); the source is stat'ed only when there
    is something to compare with and the listing did not already give its size and mtime."""
    dst = task.dst
    try:
        with _WRITING:
            if dst.is_local:  # a link at the destination is never "unchanged": the copy replaces it
                st = os.stat(dst.path, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    return None
                dsize, dmtime, exact = st.st_size, st.st_mtime, True
            else:
                info = dst.fs.info(dst.path)
                dsize, dmtime, exact = int(info.get("size") or -1), fs_mtime(info), False
    except (FileNotFoundError, NotADirectoryError):
        return None
    size, mtime = (task.size, task.mtime) if task.size is not None and task.mtime is not None else source_stat(task.src)
    if dsize != size:
        return None
    # fsspec stores cannot set mtime: a destination written after the source changed counts
    ok = same_version(dsize, dmtime, size, mtime) if exact else dmtime + MTIME_TOLERANCE >= mtime
    return size if ok else None


def source_stat(src: Location) -> tuple[int, float]:
    """Size and mtime of a source, one round trip. Nothing is read here: the copy itself opens the
    file through the confined primitive (``stat`` never blocks on a FIFO)."""
    with _READING:
        if src.is_local:
            st = os.stat(src.path)
            return st.st_size, st.st_mtime
        info = src.fs.info(src.path)
        return int(info.get("size") or 0), fs_mtime(info)


def _copy_large_local(fin: int, src: str, dst: Location, dirs: DirMaker, size: int, mtime: float) -> int:
    """Large local/mounted file: parallel ranged reads and writes (a remote mount serves each range
    concurrently), never the whole file in memory."""

    def fill(fout: int) -> None:
        def copy_range(start: int) -> None:
            pos, end = start, min(start + _RANGE, size)
            while pos < end:
                with _READING:
                    data = os.pread(fin, min(_CHUNK, end - pos), pos)
                    if not data:
                        raise OSError(errno.ESTALE, f"{src} shrank while it was copied")
                view = memoryview(data)
                while view:
                    n = os.pwrite(fout, view, pos)
                    view, pos = view[n:], pos + n

        with job_pool("ranges", "air-range", _RANGE_THREADS) as pool:
            list(pool.map(copy_range, range(0, size, _RANGE)))
        with _READING:
            if os.fstat(fin).st_size != size:
                raise OSError(errno.ESTALE, f"{src} changed size while it was copied")

    _publish_atomic(dst, dirs, mtime, fill)  # the mtime is stamped here too: a re-run sees "unchanged"
    return size


def _copy_stream(src: Location, dst: Location, dirs: DirMaker, mtime: float = 0.0) -> int:
    """Large file with an fsspec side: stream in chunks (confined on the local side)."""

    with _READING:
        if src.is_local:
            fd, _ = open_read(src.path, src.root)
            fin: IO[bytes] = os.fdopen(fd, "rb")
        else:
            fin = src.fs.open(src.path, "rb")

    def read() -> bytes:
        with _READING:
            return fin.read(_CHUNK)

    with fin:
        if dst.is_local:
            written = 0

            def fill(fout: int) -> None:
                nonlocal written
                while chunk := read():
                    write_all(fout, chunk)
                    written += len(chunk)

            _publish_atomic(dst, dirs, mtime, fill)  # the listing's mtime: a re-run sees "unchanged"
            return written
        with _WRITING, dst.fs.open(dst.path, "wb") as fout:
            while chunk := read():
                fout.write(chunk)
        with _WRITING:
            return int(dst.fs.info(dst.path).get("size") or 0)


def _read_all(fd: int, size: int) -> bytes:
    """The whole file; *size* is its ``fstat`` size. A read of ``size + 1`` bytes that returns
    exactly *size* has met the end (a regular file reads short only there): no second read to see
    it, and readahead advice only for a large file (each is a syscall per miss)."""
    want = max(size + 1, 1 << 16)
    if size >= 1 << 20 and hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    first = os.read(fd, want)
    if len(first) == size:
        return first
    chunks = [first]
    while b := os.read(fd, want):  # grown since the fstat, or a short read: on to the end
        chunks.append(b)
    return first if len(chunks) == 1 else b"".join(chunks)


_DEST_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
_NO_SENDFILE = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV})


def _send_all(src: int, out: int, size: int) -> int:
    """Move the open source's bytes into *out* in the kernel (``sendfile``: none pass through
    Python, one call for a file whose ``fstat`` size is *size*, as :func:`_read_all` reads it);
    the bytes moved. Where the kernel cannot (``EINVAL``: some file systems), read and write."""
    sent = 0
    try:
        n = sent = os.sendfile(out, src, None, size + 1)
        while n and sent != size:  # grown since the fstat, or a short transfer: on to the end
            n = os.sendfile(out, src, None, 1 << 24)
            sent += n
    except OSError as exc:
        if sent == 0 and exc.errno in _NO_SENDFILE:
            data = _read_all(src, size)
            write_all(out, data)
            return len(data)
        mark_side(exc, DESTINATION if exc.errno in _DEST_ERRNOS else SOURCE)
        raise
    return sent


def _send_local(fd: int, st: os.stat_result, dst: Location, dirs: DirMaker, task: CopyTask) -> int:
    """A local source's copy to local disk with nobody wanting its bytes: see :func:`_send_all`."""
    sent = 0

    def fill(out: int) -> None:
        nonlocal sent
        sent = _send_all(fd, out, st.st_size)

    _publish_atomic(dst, dirs, st.st_mtime, fill)
    if task.landed is not None:
        task.landed.mtime = st.st_mtime
    return sent


def copy_file(task: CopyTask, dirs: DirMaker) -> int:
    """Copy one file; returns bytes written. A local source is opened once: its size and mtime come
    from ``fstat`` of that open file (served from the lookup the open made), so no separate stat
    round trip is needed and what is stamped on the copy is what was read."""
    src, dst = task.src, task.dst
    if not src.is_local:
        size = task.size if task.size is not None else source_stat(src)[0]
        if size > _ONE_READ_MAX:
            dirs.ensure(dst)
            return _copy_stream(src, dst, dirs, task.mtime or source_stat(src)[1])
        with _READING:
            data, mtime = src.fs.cat_file(src.path), task.mtime
    else:
        with _READING:
            fd, st = open_read(src.path, src.root)  # confined at the moment of use; FIFOs refused
        try:
            if st.st_size > _ONE_READ_MAX:
                dirs.ensure(dst)
                if task.landed is not None:
                    task.landed.mtime = st.st_mtime
                if dst.is_local:
                    return _copy_large_local(fd, src.path, dst, dirs, st.st_size, st.st_mtime)
                return _copy_stream(src, dst, dirs)
            if dst.is_local and (task.landed is None or not task.landed.keep_data):
                return _send_local(fd, st, dst, dirs, task)
            with _READING:
                data, mtime = _read_all(fd, st.st_size), st.st_mtime
        finally:
            os.close(fd)
    if dst.is_local:
        _publish_atomic(dst, dirs, mtime, lambda fd: write_all(fd, data))
    else:  # object stores publish an object only when its upload completes
        dirs.ensure(dst)
        with _WRITING, dst.fs.open(dst.path, "wb") as f:
            f.write(data)
    landed = task.landed
    if landed is not None:
        landed.mtime = mtime
        if landed.keep_data:
            landed.data = data
    return len(data)
