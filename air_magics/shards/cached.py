"""Members read straight from the cached shard by offset: one local file per shard, none per member.

One :class:`ShardReader` per packed folder (its :class:`~.source.ShardSource`) and process. The
first read of a member of shard *i* fetches the whole shard from the volume once
(:func:`~.source.stream_shard`: parallel range reads, size and CRC-32 checked) into
``<base>.tar`` under the cache root (``base``: :meth:`~.source.ShardSource.local_base`, named after
the shard's content, so it is never stale). Members are then sliced out of that one file by the
offsets of the index, through a read-only memory map: a read is one copy out of the page cache,
with no file opened, no path resolved and no descriptor held per shard.

Served as the bytes land: the range reads write straight into a map of ``<base>.tar.part`` (made
at its full size first; no copy in between) and the bytes are checked in order as they pass
(:mod:`.verify`: each member's tar header against its index entry, its data against its CRC-32),
so a member is served as soon as its own bytes are in and verified, long before the shard is. As
every served byte is checked by its member's CRC-32, the shard's own CRC-32 (a second pass over
every byte) is not computed here; the shard's size is still checked first. The part file is
renamed to ``<base>.tar`` when the shard is complete (the same file: maps made of it stay valid).

Integrity, once per member per process: bytes this process did not check as they streamed in (a
cached shard another process or an earlier run fetched, or another process's part file) are
checked on their first read here (tar header and CRC-32; about 30 us per 100 KiB), never again.
A member that fails in the finished cached file is a :class:`ShardError` naming the shard, the
member and the fix (delete the cached copy); in another process's part file it means "not in
yet". No byte that does not match the index is ever handed out.

Processes (DataLoader workers) share the cached file: the fetch holds a ``flock`` on
``<base>.tar.lock``; another process that wants the shard meanwhile reads the members it needs
from the part file as soon as they verify there, and takes the fetch over if the holder dies (a new
part file: maps of the old one keep their verified bytes).
"""

from __future__ import annotations

import io
import mmap
import os
import threading
import time
import zlib
from bisect import bisect_left
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import ShardError
from ..io.locks import ProcessFileLock
from .format import Member
from .memberfile import MemberFile
from .source import PLANNED_AHEAD, ShardSource, stream_shard
from .verify import StreamCheck, check_header, header_start

__all__ = ["ShardReader", "SUFFIXES", "PLANNED_AHEAD"]

SUFFIXES = (".tar.part-new", ".tar.part", ".tar.lock", ".tar")  # the cached file and its sidecars
_AHEAD = 1  # shards fetched ahead of the one asked for, without a plan (the next in name order)
_FETCHES = 2 + PLANNED_AHEAD  # shards fetched at once (their range reads share one pool, first come first served)
_POLL = 0.002  # polling another process's fetch: from 2 ms, doubling up to 32 ms
_POLL_MAX = 0.032
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class _Shard:
    """This process's view of one shard: the map its verified members are read from."""

    def __init__(self, members: int) -> None:
        self.cond = threading.Condition()  # guards the fields; notified as members verify
        self.mm: mmap.mmap | None = None
        self.ino = -1  # the mapped file's inode: ok[] holds for that file only
        self.ok = bytearray(members)  # member j (offset order) verified in self.mm
        self.running = False
        self.done = False
        self.error: BaseException | None = None
        self.used = False  # a member was asked for: the read-ahead from this shard has started

    def use(self, mm: mmap.mmap, ino: int) -> None:
        """Read from *mm* from now on (call with ``cond`` held); a different file's checks do not carry."""
        if ino != self.ino:
            self.ok = bytearray(len(self.ok))
        self.mm, self.ino = mm, ino


def _map(path: str, size: int) -> tuple[mmap.mmap, int] | None:
    """A read-only map of *path* and its inode, or None when it is missing or not *size* bytes yet."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_size != size:
            return None
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ), st.st_ino
    finally:
        os.close(fd)


class ShardReader:
    """Serves members of one packed folder as bytes sliced from cached shards in ``root`` (see the
    module docstring)."""

    def __init__(self, source: ShardSource, root: Path) -> None:
        self.source, self.root, self.pid = source, root, os.getpid()
        self._states = [_Shard(len(ms)) for ms in source.shard_members]
        self._offsets: list[list[int] | None] = [None] * len(source.shards)
        self._drivers = ThreadPoolExecutor(max_workers=_FETCHES, thread_name_prefix="air-shard-cache")
        self._plan: list[int] = []
        self._plan_pos: dict[int, int] = {}
        self.shards_fetched = 0
        self.bytes_read = 0

    def plan(self, shards: Sequence[int]) -> None:
        """The order this process will need shards in (e.g. the shards of its stream's items, in
        order; repeats are ignored): fetches start now for the first ones and then stay
        ``PLANNED_AHEAD`` shards ahead of the one in use, in this order, so a shuffled epoch's next
        shards are in before it reaches them. Without a plan, the next shard in name order is read ahead."""
        seq = list(dict.fromkeys(shards))
        self._plan, self._plan_pos = seq, {s: k for k, s in enumerate(seq)}
        for i in seq[: 1 + PLANNED_AHEAD]:
            self._fetch_ahead(i)

    def file(self, i: int) -> str:
        """Shard *i*'s cached file (present once complete)."""
        return f"{self.source.local_base(self.root, i)}.tar"

    def complete(self, i: int) -> bool:
        """True when shard *i* is cached whole (any process finished its fetch)."""
        return os.path.exists(self.file(i))

    def _j(self, i: int, m: Member) -> int:
        offs = self._offsets[i]
        if offs is None:
            offs = self._offsets[i] = [x.offset for x in self.source.shard_members[i]]
        j = bisect_left(offs, m.offset)
        if j == len(offs) or self.source.shard_members[i][j].name != m.name:
            raise ValueError(f"member {m.name!r} is not in shard {self.source.shards[i].name}")
        return j

    def ready(self, i: int, m: Member) -> bytes | None:
        """The member's bytes if this process has them verified in its map (no wait, no fetch)."""
        st = self._states[i]
        mm = st.mm
        if mm is not None and st.ok[self._j(i, m)]:
            if not st.used:  # the first member of a shard fetched ahead: the shards after it go next
                st.used = True
                self._read_ahead(i)
            return mm[m.offset : m.offset + m.size]
        return None

    def read(self, i: int, m: Member) -> bytes:
        """The member's bytes, waiting until they are in (fetching the shard if needed)."""
        mm = self._wait(i, self._j(i, m))
        return mm[m.offset : m.offset + m.size]

    def open(self, i: int, m: Member) -> io.BufferedReader:
        """A read-only, seekable file object over the member's bytes (see :class:`MemberFile`)."""
        mm = self._wait(i, self._j(i, m))
        return io.BufferedReader(MemberFile(mm, m.offset, m.size, m.name))

    # -- waiting for a member ------------------------------------------------------------------------
    def _wait(self, i: int, j: int) -> mmap.mmap:
        st = self._states[i]
        mm = st.mm
        if not st.used:  # the first member asked for: the shards after this one go next
            st.used = True
            self._read_ahead(i)
        if mm is not None and st.ok[j]:
            return mm
        nap = _POLL
        while True:
            with st.cond:
                if st.mm is not None and st.ok[j]:
                    return st.mm
                if st.running:
                    st.cond.wait(0.2)
                    continue
                if st.error is not None:
                    raise st.error
            if st.done and st.mm is not None:  # the finished file is mapped: check the member in it
                got = self._verify_in(i, j, st.mm, st.ino, self.file(i), final=True)
                if got is not None:
                    return got
                continue
            got = self._check_file(i, j, self.file(i), final=True)
            if got is not None:
                return got
            if self._start(i):
                continue
            got = self._check_file(i, j, f"{self.file(i)}.part", final=False)  # another process fetches
            if got is not None:
                return got
            time.sleep(nap)
            nap = min(nap * 2, _POLL_MAX)

    def _check_file(self, i: int, j: int, path: str, *, final: bool) -> mmap.mmap | None:
        """Map *path* (unless it is what this process maps already) and verify member *j* in it; the
        map when it verifies. In the finished file a failure is a ShardError; in another process's
        part file it means "not in yet" (None)."""
        st, s = self._states[i], self.source.shards[i]
        got = _map(path, s.bytes)
        if got is None:
            return None
        mm, ino = got
        with st.cond:
            if st.ino == ino and st.mm is not None:  # the same file: keep the map and what it verified
                mm = st.mm
                if st.ok[j]:
                    return mm
        return self._verify_in(i, j, mm, ino, path, final=final)

    def _verify_in(self, i: int, j: int, mm: mmap.mmap, ino: int, path: str, *, final: bool) -> mmap.mmap | None:
        st, members = self._states[i], self.source.shard_members[i]
        m, where = members[j], str(self.source.shard_path(i))
        problem = ""
        try:
            check_header(where, m, mm[header_start(members, j) : m.offset])
        except ShardError:
            problem = "its tar header"
        if not problem and zlib.crc32(memoryview(mm)[m.offset : m.offset + m.size]) != m.crc32:
            problem = "its checksum"
        if problem:
            if not final:
                return None
            try:
                replaced = os.stat(path).st_ino != ino
            except FileNotFoundError:
                replaced = True
            if replaced:  # removed (pruned) since it was mapped: forget the map, fetch again
                with st.cond:
                    if st.ino == ino:
                        st.mm, st.ino, st.done, st.ok = None, -1, False, bytearray(len(st.ok))
                return None
            raise ShardError(
                f"shard {where}: member {m.name!r} in the cached copy {path} does not match {problem} in the "
                f"index (damaged on local disk); delete that file (or call air_magics.shards.prune_extracted) "
                f"to fetch the shard again; if the fresh copy fails too, pack the source again"
            )
        with st.cond:
            if st.ino != ino:
                st.use(mm, ino)
            st.ok[j] = 1
            st.done = st.done or final
            return st.mm

    def _read_ahead(self, i: int) -> None:
        k = self._plan_pos.get(i)
        if k is not None:
            for j in self._plan[k + 1 : k + 1 + PLANNED_AHEAD]:
                self._fetch_ahead(j)
            return
        for _ in range(_AHEAD):
            i = self.source.next_shard[i]
            if i < 0:
                return
            self._fetch_ahead(i)

    def _fetch_ahead(self, i: int) -> None:
        st = self._states[i]
        if st.done or st.running or st.error is not None or st.mm is not None or self.complete(i):
            return
        self._start(i)

    def _start(self, i: int) -> bool:
        """Start fetching shard *i* unless another process is; True when this process fetches it."""
        st, path = self._states[i], self.file(i)
        with st.cond:
            if st.running:
                return True
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            lock = ProcessFileLock(f"{path}.lock")
            try:
                lock.acquire(timeout=0)
            except TimeoutError:
                lock.close()
                return False
            if self.complete(i):  # finished meanwhile: read it from there
                lock.release()
                lock.close()
                return True
            st.running, st.error = True, None
        self._drivers.submit(self._fetch, i, lock)
        return True

    # -- fetching a shard ----------------------------------------------------------------------------
    def _fetch(self, i: int, lock: ProcessFileLock) -> None:
        st, path = self._states[i], self.file(i)
        try:
            self._fetch_into(i, path, st)
        except BaseException as exc:  # members verified so far stay readable from the map
            with st.cond:
                st.error = exc
        finally:
            with st.cond:
                st.running = False
                st.cond.notify_all()
            lock.release()
            lock.close()

    def _fetch_into(self, i: int, path: str, st: _Shard) -> None:
        src = self.source
        s, members = src.shards[i], src.shard_members[i]
        new, part = f"{path}.part-new", f"{path}.part"
        fd = os.open(new, _FLAGS, 0o644)  # this process holds the lock: nobody else writes it
        out: mmap.mmap | None = None
        try:
            os.ftruncate(fd, s.bytes)  # full size before anyone can map it
            ino = os.fstat(fd).st_ino
            mm = mmap.mmap(fd, s.bytes, access=mmap.ACCESS_READ)
            out = mmap.mmap(fd, s.bytes, access=mmap.ACCESS_WRITE)  # range reads land here directly
            os.replace(new, part)  # a dead fetcher's part file goes; maps of it keep their bytes
            with st.cond:
                st.use(mm, ino)
            check = StreamCheck(str(src.shard_path(i)), members)
            seen = 0

            def consume(off: int, data: bytes | memoryview) -> None:
                nonlocal seen
                self.bytes_read += len(data)
                try:
                    check.feed(data)
                finally:  # those verified before a damaged one are served
                    if check.j > seen:
                        with st.cond:
                            st.ok[seen : check.j] = b"\1" * (check.j - seen)
                            st.cond.notify_all()
                        seen = check.j

            # every member's header and CRC-32 are checked as they pass, so a pass over the whole
            # shard's CRC-32 would check nothing served twice: skipped (the padding is never served)
            stream_shard(src, i, consume, checksum=False, into=out)
            if seen != len(members):  # pragma: no cover - parse_index checked the layout
                raise ShardError(f"shard {src.shard_path(i)}: its data ended inside a member; pack the source again")
            self.shards_fetched += 1
            os.replace(part, path)
            with st.cond:
                st.done = True
                st.cond.notify_all()
        except BaseException:
            for leftover in (new, part):
                try:
                    os.unlink(leftover)
                except OSError:
                    pass
            raise
        finally:
            if out is not None:
                try:
                    out.close()
                except BufferError:  # pragma: no cover - a view still alive: the collector closes it
                    pass
            os.close(fd)
