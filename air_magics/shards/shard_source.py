"""What fetching a packed folder's shards needs to know, and reading a shard's bytes by range.

:class:`ShardSource` is the part of a :class:`~air_magics.shards.packed_folder.PackedFolder` the fetchers
(:mod:`.fetch` for extracted member files, :mod:`.shard_reader` for the cached shard read by offset)
use: the store, the folder, the manifest's shards and each shard's members in offset order. It
sits below both the reader and the fetchers, so they import it and not each other.

:func:`stream_shard` reads one shard from the volume as ``_BLOCK``-sized ranges on a shared pool of
``_THREADS`` threads (a remote mount answers many reads at once; one stream would pay a round trip
per 128 KiB), hands them on in offset order, and checks the shard's size before the first byte and
its CRC-32 after the last: a truncated or damaged shard is a :class:`ShardError` naming it. On an
object store the ranges are ``STORE_BLOCK_BYTES`` (a request costs more there; the same bytes in flight).
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ShardError, SpecialFileError, VolumeNotFoundError
from ..io.confined import open_read
from ..io.pools import ProcessPool
from ..io.retry import retry_call
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .format import Member, ShardInfo

if TYPE_CHECKING:
    pass

__all__ = ["ShardSource", "ReadAhead", "stream_shard", "BLOCK_BYTES", "PLANNED_AHEAD"]

BLOCK_BYTES = 1 << 20  # one range read
STORE_BLOCK_BYTES = 4 << 20  # one range read on an object store (a request costs more than a mount's read)
PLANNED_AHEAD = 4  # a fetcher with a plan stays a shuffle window's worth of shards ahead
_THREADS = 64  # range reads in flight per process (one worker fetches a packed folder: 64 beat 32 by ~15%)
_IN_FLIGHT = 64  # blocks read ahead of the consumer at most

_POOL = ProcessPool(_THREADS, "air-shard-read")  # range reads (made again after a fork)


@dataclass(frozen=True, eq=False)
class ShardSource:
    """A validated packed folder as its fetchers see it. ``shard_members[i]``: shard *i*'s members
    in offset order; ``next_shard[i]``: the shard an unshuffled epoch needs after *i* (-1: none)."""

    store: VolumeStore
    path: VolumePath
    shards: tuple[ShardInfo, ...]
    shard_members: list[list[Member]]
    next_shard: list[int]

    def shard_path(self, i: int) -> VolumePath:
        return self.path.joinpath(self.shards[i].name)

    def local_base(self, root: Path, i: int) -> Path:
        """Where shard *i*'s local copies live under cache root *root*, without a suffix: the
        extracted folder is this path, the cached shard file this path + ``.tar``. Named after the
        shard's content (its id and CRC-32), so a copy can never be stale."""
        s, vp = self.shards[i], self.path
        return root.joinpath(
            "shards", vp.catalog, vp.schema, vp.volume, *vp.parts, f"{s.name[: -len('.tar')]}-{s.crc32:08x}"
        )

    def cache_key(self, i: int, *, extracted: bool = False) -> str:
        """Shard *i*'s key in the cache (:meth:`~air_magics.cache.claims.Claims.claim`): the shard's volume
        path and its CRC-32, ``.../shard-00001.tar@1a2b3c4d`` for the cached file, or
        ``.../shard-00001@1a2b3c4d`` for the folder it is extracted into. Named after the content, so
        the copy at its slot can never be stale."""
        key = str(self.shard_path(i))
        if extracted:
            key = key[: -len(".tar")]
        return f"{key}@{self.shards[i].crc32:08x}"

    def opener(
        self, i: int, *, sized: bool = True
    ) -> tuple[Callable[[int, memoryview | None, int], bytes | int], Callable[[], None]]:
        """``(read(offset, into, n), close())`` over shard *i* on its volume, its size checked (on an
        object store not with *sized* False: one request less, for a read whose bytes are verified):
        ``read`` returns the *n* bytes at *offset*, or, given a buffer *into*, reads them straight
        into it and returns how many it read (short only at the end of the file)."""
        s, vp = self.shards[i], self.shard_path(i)
        try:
            loc = self.store.locate(vp)
            if loc.is_local:
                fd, stat = retry_call(lambda: open_read(loc.path, loc.root))
                size = stat.st_size
            else:
                fd, size = -1, int(loc.fs.size(loc.path)) if sized else s.bytes
        except (FileNotFoundError, VolumeNotFoundError):
            raise ShardError(
                f"shard {vp} named by the manifest is missing on the volume; pack the source again"
            ) from None
        except (IsADirectoryError, NotADirectoryError, SpecialFileError):
            raise ShardError(
                f"shard {vp} named by the manifest is not a regular file on the volume; pack the source again"
            ) from None
        if size != s.bytes:
            if fd >= 0:
                os.close(fd)
            raise ShardError(
                f"shard {vp} is {size} bytes but its index says {s.bytes} (truncated or replaced "
                f"on the volume); the packed folder is damaged: pack the source again"
            )
        if fd < 0:

            def cat(off: int, into: memoryview | None, n: int) -> bytes | int:
                data = loc.fs.cat_file(loc.path, start=off, end=off + n)
                if into is None:
                    return data
                into[: len(data)] = data
                return len(data)

            return cat, (lambda: None)

        def pread(off: int, into: memoryview | None, n: int) -> bytes | int:
            if into is not None:  # straight into the caller's buffer: no copy in between
                got = 0
                while got < n:
                    k = os.preadv(fd, [into[got:n]], off + got)
                    if not k:
                        break
                    got += k
                return got
            parts, got = [], 0
            while got < n:
                b = os.pread(fd, n - got, off + got)
                if not b:
                    break
                parts.append(b)
                got += len(b)
            return b"".join(parts) if len(parts) != 1 else parts[0]

        return pread, (lambda: os.close(fd))


def stream_shard(
    source: ShardSource,
    i: int,
    consume: Callable[[int, bytes | memoryview], None],
    *,
    checksum: bool = True,
    into: mmap.mmap | None = None,
) -> None:
    """Read shard *i* from its volume and pass ``consume(offset, block)`` every block in offset
    order; raises :class:`ShardError` (naming the shard) when it is shorter than its index says or,
    with *checksum*, does not match its CRC-32 (after the last block was consumed: a consumer holds
    back what must meet that verdict). Given *into* (a writable map of the shard's size), blocks are
    read straight into it and passed as views of it. An error from *consume* stops the reads."""
    s, vp = source.shards[i], source.shard_path(i)
    read, close = source.opener(i)
    try:
        pool = _POOL.get()
        block = BLOCK_BYTES if source.store.locate(vp).is_local else STORE_BLOCK_BYTES
        offsets = iter(range(0, s.bytes, block))
        window: deque[tuple[int, int, Future]] = deque()
        whole = memoryview(into) if into is not None else None

        def submit() -> None:
            off = next(offsets, None)
            if off is not None:
                n = min(block, s.bytes - off)
                buf = whole[off : off + n] if whole is not None else None
                window.append((off, n, pool.submit(retry_call, lambda o=off, b=buf, k=n: read(o, b, k))))

        for _ in range(_IN_FLIGHT * BLOCK_BYTES // block):  # (the same bytes in flight)
            submit()
        crc = 0
        try:
            while window:
                off, n, fut = window.popleft()
                got = fut.result()
                submit()
                data = got if whole is None else whole[off : off + got]
                if len(data) != n:
                    raise ShardError(
                        f"shard {vp} ended at byte {off + len(data)} but its index says {s.bytes} bytes "
                        f"(truncated on the volume); the packed folder is damaged: pack the source again"
                    )
                if checksum:
                    crc = zlib.crc32(data, crc)
                consume(off, data)
            if checksum and crc != s.crc32:
                raise ShardError(
                    f"shard {vp} does not match the checksum in its index (changed or damaged on the "
                    f"volume); the packed folder is damaged: pack the source again"
                )
        except BaseException:
            for _, _, fut in window:
                fut.cancel()
            for _, _, fut in window:  # no read may still write into *into* once this returns
                if not fut.cancelled():
                    try:
                        fut.result()
                    except BaseException:
                        pass
            raise
        finally:
            window.clear()
            if whole is not None:
                whole.release()
    finally:
        close()


class ReadAhead:
    """Which shards to fetch ahead of the one in use: the next ``PLANNED_AHEAD`` of a plan (the order
    a stream needs shards in, :meth:`plan`), else the next ``ahead`` in name order
    (``next_shard``). Shared by the reader by offset and the extractor; *fetch(i)* starts shard *i*
    unless it is in or under way, called on *pool* (the fetcher's driver threads): a read-ahead's
    claim, and the evictions it makes, never hold up the thread that asked for a member (the
    consumer's, in a loop: it stalled 0.8 s there, past a short pin of the paths it held)."""

    def __init__(self, next_shard: Sequence[int], fetch: Callable[[int], None], pool: Executor, ahead: int = 1) -> None:
        self._next, self._ahead = next_shard, ahead
        self._fetch: Callable[[int], object] = lambda i: pool.submit(fetch, i)
        self._plan: list[int] = []
        self._pos: dict[int, int] = {}

    def plan(self, shards: Sequence[int]) -> None:
        """The order this process will need shards in (repeats ignored): the first ones start now."""
        seq = list(dict.fromkeys(shards))
        self._plan, self._pos = seq, {s: k for k, s in enumerate(seq)}
        for i in seq[: 1 + PLANNED_AHEAD]:
            self._fetch(i)

    def after(self, i: int) -> None:
        """Shard *i* is in use: start the ones that come after it."""
        k = self._pos.get(i)
        if k is not None:
            for j in self._plan[k + 1 : k + 1 + PLANNED_AHEAD]:
                self._fetch(j)
            return
        for _ in range(self._ahead):
            i = self._next[i]
            if i < 0:
                return
            self._fetch(i)
