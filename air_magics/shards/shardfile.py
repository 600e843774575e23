"""Writing one shard: source files read ahead on a thread pool (:class:`Feed`), tar bytes written
as parallel ranges (:class:`RangeWriter`), the shard renamed into place, then its index
(:func:`write_shard`). Used by the local engine (:mod:`.writer`) and by Spark tasks (:mod:`.spark`).
"""

from __future__ import annotations

import os
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import PackError
from ..io.confined import open_read, publish_at, write_all
from ..io.leftovers import temp_name
from ..io.pools import job_pool, threads
from ..io.retry import retry_call
from ..io.versions import same_version
from ..volumes.location import Location
from ..volumes.walk import Entry
from .format import END_OF_ARCHIVE, Index, Member, dump_index, member_header, padding
from .pack_plan import ShardPlan

__all__ = ["Feed", "RangeWriter", "read_source", "write_shard"]

_ONE_READ_MAX = 64 << 20  # files up to this size are read whole; larger ones are streamed
_CHUNK = 8 << 20
_WINDOW_BYTES = 256 << 20  # source bytes read ahead of the writer at most
_WRITE_RANGES = threads("ranges")  # shard ranges being written at once


def read_source(sloc: Location, f: Entry, retries: int) -> bytes | tuple[int, int]:
    """A source file's bytes (or, when large, its open descriptor), checked against the listing."""

    def once() -> bytes | tuple[int, int]:
        path = sloc.join(f.rel).path
        fd, st = open_read(path, sloc.root)
        keep = False
        try:
            if not same_version(st.st_size, st.st_mtime, f.size, f.mtime):
                raise PackError(
                    f"{path} changed while it was packed ({f.size} -> {st.st_size} bytes, mtime "
                    f"{f.mtime:.3f} -> {st.st_mtime:.3f}); nothing was published: run pack again"
                )
            if f.size > _ONE_READ_MAX:
                keep = True
                return fd, f.size
            data = os.read(fd, f.size + 1) if f.size else b""
            while len(data) < f.size + 1:
                more = os.read(fd, f.size + 1 - len(data))
                if not more:
                    break
                data += more
            if len(data) != f.size:
                raise PackError(
                    f"{path} changed while it was packed (read {len(data)} bytes, listed {f.size}); "
                    f"nothing was published: run pack again"
                )
            return data
        finally:
            if not keep:
                os.close(fd)

    return retry_call(once, retries=retries)


class Feed:
    """Source reads in plan order on a thread pool, at most ``_WINDOW_BYTES`` ahead of the writer."""

    def __init__(self, pool: ThreadPoolExecutor, sloc: Location, shards: list[ShardPlan], retries: int) -> None:
        self._todo: Iterator[Entry] = (f for sp in shards for f in sp.files)
        self._window: deque[tuple[Entry, Future]] = deque()
        self._ahead = 0
        self._pool, self._sloc, self._retries = pool, sloc, retries
        self._fill()

    def _fill(self) -> None:
        while self._ahead < _WINDOW_BYTES or not self._window:
            f = next(self._todo, None)
            if f is None:
                return
            self._window.append((f, self._pool.submit(read_source, self._sloc, f, self._retries)))
            self._ahead += min(f.size, _ONE_READ_MAX)

    def next(self, want: Entry) -> bytes | tuple[int, int]:
        f, fut = self._window.popleft()
        if f is not want:  # pragma: no cover - an invariant of the plan order
            raise RuntimeError(f"pack feed out of order: {f.rel} != {want.rel}")
        self._ahead -= min(f.size, _ONE_READ_MAX)
        self._fill()
        return fut.result()

    def close(self) -> None:
        for _, fut in self._window:
            fut.cancel()
        for _, fut in self._window:
            if not fut.cancelled() and fut.done() and fut.exception() is None and isinstance(fut.result(), tuple):
                os.close(fut.result()[0])


class RangeWriter:
    """Buffered writes of one shard: 8 MiB ranges written with ``pwrite`` on a few threads, so a
    remote mount (one round trip per write request) overlaps them instead of paying each in turn."""

    def __init__(self, fd: int, pool: ThreadPoolExecutor) -> None:
        self.fd, self.pool = fd, pool
        self.buf = bytearray()
        self.flushed = 0
        self.pending: deque[Future] = deque()

    def write(self, b: bytes) -> None:
        self.buf += b
        if len(self.buf) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            data, off = bytes(self.buf), self.flushed
            self.buf.clear()
            self.flushed += len(data)
            self.pending.append(self.pool.submit(_pwrite_all, self.fd, data, off))
        while len(self.pending) > _WRITE_RANGES or (self.pending and self.pending[0].done()):
            self.pending.popleft().result()

    def close(self) -> None:
        self.flush()
        while self.pending:
            self.pending.popleft().result()


def _pwrite_all(fd: int, data: bytes, off: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, off)
        view, off = view[n:], off + n


def write_shard(dfd: int, sp: ShardPlan, feed: Feed, progress: Callable[[int], None]) -> Index:
    """Write shard *sp* under a temp name, rename it into place, then its index (steps 3)."""
    members: list[Member] = []
    crc, pos = 0, 0
    stamp = float(int(time.time()))

    def fill(fd: int) -> None:
        with job_pool("ranges", "air-pack-write", _WRITE_RANGES) as pool:
            out = RangeWriter(fd, pool)
            try:
                _fill(out)
            finally:
                out.close()

    def put(out: RangeWriter, b: bytes) -> None:
        nonlocal crc, pos
        out.write(b)
        crc, pos = zlib.crc32(b, crc), pos + len(b)

    def _fill(out: RangeWriter) -> None:
        for f in sp.files:
            data = feed.next(f)
            put(out, member_header(f.rel, f.size, f.mtime))
            start, mcrc = pos, 0
            if isinstance(data, tuple):
                sfd, size = data
                try:
                    for off in range(0, size, _CHUNK):
                        chunk = os.pread(sfd, min(_CHUNK, size - off), off)
                        if len(chunk) != min(_CHUNK, size - off):
                            raise PackError(
                                f"{f.rel} shrank while it was packed; nothing was published: run pack again"
                            )
                        put(out, chunk)
                        mcrc = zlib.crc32(chunk, mcrc)
                finally:
                    os.close(sfd)
            else:
                put(out, data)
                mcrc = zlib.crc32(data)
            members.append(Member(f.rel, start, f.size, f.size, f.mtime, mcrc))
            put(out, padding(f.size))
            progress(f.size)
        put(out, END_OF_ARCHIVE)

    publish_at(dfd, sp.name, fill, mtime=stamp, temp=temp_name(sp.name), fsync=True)
    if pos != sp.bytes:  # pragma: no cover - the plan and the writer share member_bytes
        raise RuntimeError(f"shard {sp.name} is {pos} bytes, planned {sp.bytes}")
    ix = Index(sp.name, pos, crc, stamp, tuple(members))
    raw = dump_index(ix)
    publish_at(dfd, sp.index, lambda fd: write_all(fd, raw), temp=temp_name(sp.index), fsync=True)
    return ix
