"""Members read straight from the cached shard by offset: one local file per shard, none per member.

One :class:`ShardReader` per packed folder (its :class:`~.shard_source.ShardSource`) and process. The
first read of a member of shard *i* fetches the whole shard from the volume once
(:func:`~.shard_source.stream_shard`: parallel range reads, size and CRC-32 checked) into its cache slot
``<cache root>/files/<catalog>/<schema>/<volume>/.../shard-00001.tar@<crc32>`` (key:
:meth:`~.shard_source.ShardSource.cache_key`, named after the shard's content, so it is never stale).
Members are then sliced out of that file by the index's offsets through a read-only memory map:
one copy out of the page cache, no file opened, no path resolved, no descriptor held per shard.

A cache entry like a file: its bytes are claimed within the cache's limit before the fetch
(:meth:`~air_magics.cache.claims.Claims.claim`), its pin renewed while members are read from it, and
it is evicted as a unit; with no room its members are read one at a time from the volume
(:mod:`.direct`: nothing on disk). A process whose shard was evicted drops its map and fetches it again.

Served as the bytes land: the range reads write straight into a map of ``<base>.tar.part`` (made
at its full size first; no copy in between) and the bytes are checked in order as they pass
(:mod:`.verify`: each member's tar header against its index entry, its data against its CRC-32),
so a member is served as soon as its own bytes are in and verified, long before the shard is. As
every served byte is checked by its member's CRC-32, the shard's own (a second pass) is not
computed; its size is. The part file becomes ``<base>.tar`` when complete (maps of it stay valid).

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
import time
import zlib
from bisect import bisect_left
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ShardError
from ..io.atomic import replace
from ..io.locks import ProcessFileLock
from ..io.pools import job_pool
from .direct import RETRY_CLAIM, claim_or_go_direct, read_member
from .format import Member
from .memberfile import MemberFile
from .renewal import renew_every
from .shard_source import PLANNED_AHEAD, ReadAhead, ShardSource, stream_shard
from .shardmap import ShardMap, map_file, unlink_quiet
from .slices import MemberSlice
from .verify import StreamCheck, check_header, header_start

if TYPE_CHECKING:
    from ..cache import FileCache

__all__ = ["ShardReader", "SUFFIXES", "PLANNED_AHEAD"]

SUFFIXES = (".tar.part-new", ".tar.part", ".tar.lock", ".tar")  # a legacy (uncounted) cached file and its sidecars
SIDECARS = (".part-new", ".part", ".lock")  # beside a cached shard's slot
_AHEAD = 1  # shards fetched ahead of the one asked for, without a plan (the next in name order)
_FETCHES = 2 + PLANNED_AHEAD  # shards fetched at once (their range reads share one pool, first come first served)
_POLL = 0.002  # polling another process's fetch: from 2 ms, doubling up to 32 ms
_POLL_MAX = 0.032
_SWEEP_SECONDS = 2.0  # how often a reader looks for maps of shards it no longer reads
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class ShardReader:
    """Serves members of one packed folder as bytes sliced from cached shards in ``root`` (see the
    module docstring)."""

    def __init__(self, source: ShardSource, cache: FileCache) -> None:
        self.source, self.cache, self.root, self.pid = source, cache, cache.root, os.getpid()
        self._keys = [source.cache_key(i) for i in range(len(source.shards))]
        self.handed = 0  # members handed out by this process (no lock: a lost count only delays a retry)
        self._renew_every = renew_every(cache.pin_seconds)
        self._swept = time.monotonic()
        self._states = [ShardMap(len(ms)) for ms in source.shard_members]
        self._offsets: list[list[int] | None] = [None] * len(source.shards)
        self._drivers = job_pool("stream", "air-shard-cache", _FETCHES)
        self._ahead = ReadAhead(source.next_shard, self._fetch_ahead, self._drivers, _AHEAD)
        self.shards_fetched = 0
        self.bytes_read = 0

    def plan(self, shards: Sequence[int]) -> None:
        """The order this process will need shards in (e.g. the shards of its stream's items, in
        order; repeats are ignored): fetches start now for the first ones and then stay
        ``PLANNED_AHEAD`` shards ahead of the one in use, in this order, so a shuffled epoch's next
        shards are in before it reaches them. Without a plan, the next shard in name order is read ahead."""
        self._ahead.plan(shards)

    def file(self, i: int) -> str:
        """Shard *i*'s cached file, its cache slot (present once complete)."""
        return self.cache.slot(self._keys[i])

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

    def _ready_map(self, i: int, m: Member) -> mmap.mmap | None:
        st = self._states[i]
        mm = st.mm
        if mm is not None and st.ok[self._j(i, m)] and self._handed_out(i, st):
            if not st.used:  # the first member of a shard fetched ahead: the shards after it go next
                st.used = True
                self._ahead.after(i)
            return mm
        return None

    def ready(self, i: int, m: Member) -> bytes | None:
        """The member's bytes if this process has them verified in its map (no wait, no fetch)."""
        mm = self._ready_map(i, m)
        return None if mm is None else mm[m.offset : m.offset + m.size]

    def read(self, i: int, m: Member) -> bytes:
        """The member's bytes, waiting until they are in (fetching the shard if needed)."""
        j = self._j(i, m)
        mm = self._wait(i, j)
        return self._direct(i, j) if mm is None else mm[m.offset : m.offset + m.size]

    def ready_slice(self, i: int, m: Member, item: int) -> MemberSlice | bytes | None:
        """:meth:`ready` as a :class:`~.slices.MemberSlice` a DataLoader's loop reads itself
        (dataset index *item*); the bytes when they come from another map than the cached file's."""
        mm = self._ready_map(i, m)
        return None if mm is None else self._slice(i, m, mm, item)

    def read_slice(self, i: int, m: Member, item: int) -> MemberSlice | bytes:
        """:meth:`read` as a :class:`~.slices.MemberSlice` (see :meth:`ready_slice`); the bytes
        when they come from the volume (the shard found no room in the cache)."""
        j = self._j(i, m)
        mm = self._wait(i, j)
        return self._direct(i, j) if mm is None else self._slice(i, m, mm, item)

    def _slice(self, i: int, m: Member, mm: mmap.mmap, item: int) -> MemberSlice | bytes:
        st = self._states[i]
        ino = st.ino
        if st.mm is not mm:
            return mm[m.offset : m.offset + m.size]
        return MemberSlice(self.file(i), ino, m.offset, m.size, m.crc32, item)

    def open(self, i: int, m: Member) -> io.BufferedReader:
        """A read-only, seekable file object over the member's bytes (see :class:`MemberFile`)."""
        j = self._j(i, m)
        mm = self._wait(i, j)
        if mm is None:
            return io.BufferedReader(MemberFile(self._direct(i, j), 0, m.size, m.name))
        return io.BufferedReader(MemberFile(mm, m.offset, m.size, m.name))

    def _direct(self, i: int, j: int) -> bytes:
        """Member *j* of shard *i* from the volume (its shard found no room): counted past the cache."""
        data = read_member(self.source, i, j)
        self.bytes_read += len(data)
        self.cache.claims.count_past(len(data))
        return data

    # -- the shard's cache entry ---------------------------------------------------------------------
    def _handed_out(self, i: int, st: ShardMap) -> bool:
        """Count a member of shard *i* handed out (renewing a cached shard's entry every few
        seconds); False when that entry is gone (evicted): the map is dropped, to fetch it again."""
        self.handed += 1
        if st.done and time.monotonic() - st.renewed > self._renew_every and not self._renew(i, st):
            return False  # (a map of another process's part file is not renewed here: its fetcher does)
        return True

    def _renew(self, i: int, st: ShardMap) -> bool:
        now = time.monotonic()
        if not self.cache.claims.renew(self._keys[i], hit=0 if st.counted else self.source.shards[i].bytes):
            self._drop(st)
            st.evicted = True
            return False
        st.renewed, st.counted = now, True
        if now - self._swept > _SWEEP_SECONDS:  # maps of shards not read for pin_seconds (evictable) go:
            self._swept = now  # a map would hold an evicted file's disk space
            for other in self._states:
                if other.done and now - other.renewed > self.cache.pin_seconds:
                    self._drop(other)
        return True

    def _drop(self, st: ShardMap) -> None:
        """Forget *st*'s map (readers holding it keep it)."""
        with st.cond:
            if st.running:
                return
            st.mm, st.ino, st.done, st.ok = None, -1, False, bytearray(len(st.ok))
            st.renewed = 0.0

    # -- waiting for a member ------------------------------------------------------------------------
    def _wait(self, i: int, j: int) -> mmap.mmap | None:
        """A map of shard *i* with member *j* verified in it, counted as handed out; ``None``: the
        shard found no room in the cache (read the member from the volume)."""
        st = self._states[i]
        if not st.used:  # the first member asked for: the shards after this one go next
            st.used = True
            self._ahead.after(i)
        while True:
            mm = self._verified(i, j)
            if self._handed_out(i, st):
                return mm
            # its cache entry is gone (evicted): the map was dropped; fetch it again

    def _verified(self, i: int, j: int) -> mmap.mmap | None:
        """A map of shard *i* in which member *j* is verified, fetching the shard if needed;
        ``None`` when it found no room in the cache (its claim is tried again every
        ``RETRY_CLAIM`` hand-outs)."""
        st = self._states[i]
        mm = st.mm
        if mm is not None and st.ok[j]:
            return mm
        if self._refused(st):
            return None
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
            if not st.evicted:  # (an evicted entry's file, if any, is an orphan: _start removes it)
                got = self._check_file(i, j, self.file(i), final=True)
                if got is not None:
                    return got
            if self._start(i):
                if self._refused(st):
                    return None
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
        got = map_file(path, s.bytes)
        if got is None:
            return None
        mm, ino = got
        with st.cond:
            if st.ino == ino and st.mm is not None:  # the same file: keep the map and what it verified
                mm = st.mm
                if st.ok[j]:
                    return mm
            new_file = st.ino != ino
        if final and new_file:  # a finished file this process has not checked: all of it, in one pass
            with st.verifying:  # by one thread: the others asking meanwhile find it done
                with st.cond:
                    checked = st.ino == ino
                if not checked:
                    self._verify_all(i, mm, ino)
            with st.cond:
                if st.ino == ino and st.ok[j]:
                    return st.mm
        return self._verify_in(i, j, mm, ino, path, final=final)

    def _verify_all(self, i: int, mm: mmap.mmap, ino: int) -> None:
        """Check every member of the finished shard file mapped as *mm* (headers and CRC-32s, ~20 ms
        per 64 MiB here) so that all are served inline from now on, not one by one on fetch
        threads; from a damaged member on, each is checked when asked for (and refused by name)."""
        st, check = self._states[i], StreamCheck(str(self.source.shard_path(i)), self.source.shard_members[i])
        try:
            check.feed(memoryview(mm))
        except ShardError:
            pass
        with st.cond:
            st.use(mm, ino)
            st.ok[: check.j] = b"\1" * check.j
            st.done = True

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

    def _fetch_ahead(self, i: int) -> None:
        st = self._states[i]
        if st.done or st.running or st.error is not None or st.mm is not None or self._refused(st):
            return
        if not self.complete(i):
            self._start(i, inline=True)

    def _refused(self, st: ShardMap) -> bool:
        """The shard's claim found no room fewer than ``RETRY_CLAIM`` hand-outs ago (and no fetch
        of it runs here): its members are read from the volume meanwhile."""
        return st.no_room >= 0 and not st.running and self.handed - st.no_room < RETRY_CLAIM

    def _start(self, i: int, *, inline: bool = False) -> bool:
        """Start fetching shard *i* into its cache slot unless another process is; True when this
        process fetches it, found it cached, or found no room for it (``no_room`` set: its members
        are read from the volume, :mod:`.direct`)."""
        st, path, key, size = self._states[i], self.file(i), self._keys[i], self.source.shards[i].bytes
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
            st.evicted = False
            if self.complete(i):
                if self.cache.claims.renew(key):  # finished meanwhile: read it from there
                    lock.release()
                    lock.close()
                    return True
                unlink_quiet(path)  # a file the cache has no entry for (left by a crash or a reset): not counted
            if not claim_or_go_direct(self.cache, key, size, lock, st, self.handed):
                return True  # no room: its members come from the volume (.direct)
            st.running, st.error, st.counted, st.renewed = True, None, True, time.monotonic()
        if inline:  # (a read-ahead, on a driver thread already)
            self._fetch(i, lock, path)
        else:
            self._drivers.submit(self._fetch, i, lock, path)
        return True

    # -- fetching a shard ----------------------------------------------------------------------------
    def _fetch(self, i: int, lock: ProcessFileLock, path: str) -> None:
        st, key, size = self._states[i], self._keys[i], self.source.shards[i].bytes
        try:
            try:
                self._fetch_into(i, path, st, key)
                self.cache.claims.commit(key, size)
            except BaseException:
                unlink_quiet(path)
                self.cache.claims.release(key)
                raise
        except BaseException as exc:  # members verified so far stay readable from the map
            with st.cond:
                st.error = exc
        finally:
            with st.cond:
                st.running = False
                st.cond.notify_all()
            lock.release()
            lock.close()

    def _fetch_into(self, i: int, path: str, st: ShardMap, key: str) -> None:
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
            replace(new, part)  # a dead fetcher's part file goes; maps of it keep their bytes
            with st.cond:
                st.use(mm, ino)
            check = StreamCheck(str(src.shard_path(i)), members)
            seen = 0

            def consume(off: int, data: bytes | memoryview) -> None:
                nonlocal seen
                self.bytes_read += len(data)
                if key and time.monotonic() - st.renewed > self._renew_every:  # a long fetch keeps its claim pinned
                    st.renewed = time.monotonic()
                    self.cache.claims.renew(key)
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
            replace(part, path)
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
