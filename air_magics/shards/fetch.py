"""Fetching a shard into its extracted folder: parallel range reads, members served as they land.

One :class:`Extractor` per packed folder (its :class:`~.shard_source.ShardSource`) and process. A shard is
read from the volume as parallel range reads (:func:`~.shard_source.stream_shard`), processed in
offset order: each member's bytes go straight into its own file (staged beside the shard's
extracted folder, verified, renamed into it), so a member is served as soon as its bytes are in,
long before the shard is.
A member asked for far ahead of its shard's stream (``JUMP_AHEAD`` bytes or more past where the
stream is, say the first item of an epoch in the middle of a 1 GiB shard) does not wait for the
stream: it is read by its own range (its tar header and data in one read, verified like any member,
:func:`.direct.read_member`) and published into the folder, and the stream steps over its bytes.
Those reads are bounded (``_JUMPS`` at a time per process; their bytes at most ``_JUMP_FREE`` plus
1/8 of the bytes streamed), so the first items come at once and the epoch still reads each shard
about once. A shard's last member is never read that way: it waits for the shard's checksum.
When a shard is first asked for, the shard that follows it in name order (the next one an
unshuffled epoch needs) is fetched too, ``_AHEAD`` deep; with a plan (:meth:`Extractor.plan`: the
order the epoch needs shards in) the next ``PLANNED_AHEAD`` shards of the plan instead.

Integrity: the shard's size is checked before anything is served (a truncated shard serves
nothing); every member is verified before it is published (:mod:`.members`: its tar header against
its index entry, its data against its CRC-32), so no byte that does not match the index is ever
served, and a damaged member is refused by name. The shard's CRC-32 is checked when its last byte
arrives, and its last member is published only after that check, so every full pass over a shard
meets the verdict. On a failure every later request for a member of the shard that was not
published raises the :class:`ShardError`; members already published stay (they were verified, and
paths already handed out must keep working).

A cache entry like a file: the extracted folder is the cache slot of the key
``.../shard-00001@<crc32>`` (:meth:`~.shard_source.ShardSource.cache_key`), its shard's bytes claimed
within the cache's limit before the fetch, its pin renewed while its paths are handed out, and
evicted as a unit (moved aside, then removed); with no room the members asked for are read one at a
time from the volume into the cache's overflow window (:mod:`.direct`: member-sized files within
the windows' bytes). A process whose folder was evicted extracts the shard again.

Processes (DataLoader workers) share the extracted folders: the fetch of a shard holds a
``flock`` on ``<folder>.lock``; another process that wants the shard meanwhile waits for its member
files to appear (a member file exists only complete and verified), and takes the fetch over if the
holder dies. A finished folder is marked by ``<folder>.complete``. The folder itself holds nothing
but members: the lock, the marker and the staging folder ``<folder>.tmp`` sit beside it.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..io.atomic import write_atomic
from ..io.folders import staging_folder
from ..io.locks import ProcessFileLock
from ..io.pools import job_pool
from .direct import RETRY_CLAIM, claim_or_go_direct, member_path, read_member
from .members import MemberWriter
from .renewal import renew_every
from .shard_source import BLOCK_BYTES, PLANNED_AHEAD, ReadAhead, ShardSource, stream_shard
from .shardmap import unlink_quiet

if TYPE_CHECKING:
    from ..cache import FileCache

__all__ = ["Extractor", "SIDECARS", "JUMP_AHEAD"]

SIDECARS = (".lock", ".complete", ".tmp")  # beside an extracted folder: fetch lock, done marker, staging
_AHEAD = 1  # shards fetched ahead of the one asked for, without a plan (the next in name order)
_POLL = 0.002  # polling for a member another process fetches: from 2 ms, doubling up to 32 ms
_POLL_MAX = 0.032
JUMP_AHEAD = 4 * BLOCK_BYTES  # a member this far past its shard's stream is read by its own range
_JUMPS = 8  # such reads at a time, per process
_JUMP_FREE = 8 << 20  # their bytes before the 1/8-of-the-stream budget applies


class _State:
    """This process's view of one shard."""

    def __init__(self) -> None:
        self.cond = threading.Condition()  # guards the fields; notified when the fetch ends
        self.published: set[str] = set()
        self.events: dict[str, threading.Event] = {}  # members waited for: set when published
        self.running = False
        self.done = False
        self.error: BaseException | None = None
        self.used = False  # a member was asked for: the read-ahead from this shard has started
        self.final = ""  # the folder its members are in (its cache slot)
        self.renewed = 0.0  # monotonic time its cache entry was last renewed by this process
        self.counted = False  # this process counted its hit (or fetched it)
        self.no_room = -1  # the process's hand-out count when its claim found no room (-1: none refused)
        self.writer: MemberWriter | None = None  # while this process streams the shard
        self.taken: set[int] = set()  # members (offset order) the stream writes or a jump read
        self.jumping = 0  # members of it being read by their own range now
        self.asked = -1  # the member the stream last asked about (it writes or steps over it)
        self.lost: set[int] = set()  # taken by such a read that failed after the stream passed them


class Extractor:
    """Serves members of one packed folder as local paths in ``root`` (see the module docstring)."""

    def __init__(self, source: ShardSource, cache: FileCache) -> None:
        self.source, self.cache, self.root, self.pid = source, cache, cache.root, os.getpid()
        self._keys = [source.cache_key(i, extracted=True) for i in range(len(source.shards))]
        self._states = [_State() for _ in source.shards]
        for key, st in zip(self._keys, self._states, strict=True):
            st.final = cache.slot(key)
        self.handed = 0  # paths handed out by this process (no lock: a lost count only delays a retry)
        self._index: list[dict[str, int] | None] = [None] * len(source.shards)  # member name -> j, per shard
        self._renew_every = renew_every(cache.pin_seconds)
        self._drivers = job_pool("stream", "air-shard-fetch", 2 + PLANNED_AHEAD)
        self._ahead = ReadAhead(source.next_shard, self._fetch_ahead, self._drivers, _AHEAD)
        self.shards_fetched = 0
        self.bytes_read = 0
        self.jumps = 0  # members read by their own range, ahead of their shard's stream
        self._jumped = 0  # their bytes
        self._jumping = 0
        self._jump_lock = threading.Lock()

    def final(self, i: int) -> Path:
        """Shard *i*'s extracted folder: its cache slot."""
        return Path(self._states[i].final)

    def complete(self, i: int) -> bool:
        """True when shard *i*'s extracted folder in the cache is complete (any process finished its
        fetch, and it was not evicted since)."""
        slot = self.cache.slot(self._keys[i])
        return os.path.exists(f"{slot}.complete") and os.path.isdir(slot)

    def plan(self, shards: Sequence[int]) -> None:
        """The order this process will need shards in (repeats ignored): fetches start now for the
        first ones and then stay ``PLANNED_AHEAD`` shards ahead of the one in use, in this order."""
        self._ahead.plan(shards)

    def ready(self, i: int, name: str) -> str | None:
        """The member's path if this process knows it is there (no I/O), else None."""
        st = self._states[i]
        if st.done or name in st.published:
            final = st.final
            if not self._handed_out(i, st):
                return None
            if not st.used:  # the first member of a shard fetched ahead: the shards after it go next
                st.used = True
                self._ahead.after(i)
            return os.path.join(final, *name.split("/"))
        return None

    def path(self, i: int, name: str) -> str:
        """The member's local path, waiting until its bytes are in (fetching the shard if needed)."""
        st = self._states[i]
        if not st.used:
            st.used = True
            self._ahead.after(i)
        while True:
            final = self._wait(i, st, name)
            if final is None:  # no room in the cache: from the volume, through the overflow window
                return self._direct(i, name)
            if self._handed_out(i, st):
                return os.path.join(final, *name.split("/"))
            # its cache entry is gone (evicted): extract it again

    def _direct(self, i: int, name: str) -> str:
        index = self._index[i]
        if index is None:
            index = self._index[i] = {m.name: j for j, m in enumerate(self.source.shard_members[i])}
        self.handed += 1
        return member_path(self.source, self.cache, i, index[name])

    def _refused(self, st: _State) -> bool:
        """The shard's claim found no room fewer than ``RETRY_CLAIM`` hand-outs ago (and no fetch
        of it runs here): its members are read from the volume meanwhile."""
        return st.no_room >= 0 and not st.running and not st.done and self.handed - st.no_room < RETRY_CLAIM

    # -- the folder's cache entry --------------------------------------------------------------------
    def _handed_out(self, i: int, st: _State) -> bool:
        """Count a path of shard *i* handed out (renewing a cached folder's entry every few seconds);
        False when that entry is gone (evicted): forgotten here, to extract it again."""
        self.handed += 1
        if not st.running and time.monotonic() - st.renewed > self._renew_every:
            if not self.cache.claims.renew(self._keys[i], hit=0 if st.counted else self.source.shards[i].bytes):
                self._forget(st)
                return False
            st.renewed, st.counted = time.monotonic(), True
        return True

    def _forget(self, st: _State) -> None:
        """This process knows nothing of the shard's folder any more (evicted: extract it again)."""
        with st.cond:
            if st.running:
                return
            st.done, st.published, st.renewed = False, set(), 0.0

    def _wait(self, i: int, st: _State, name: str) -> str | None:
        """Shard *i*'s folder once member *name* is in it (fetching the shard if needed); ``None``
        when the shard found no room in the cache (its claim is tried again every ``RETRY_CLAIM``
        hand-outs)."""
        nap = _POLL
        while True:
            with st.cond:
                if st.done or name in st.published:  # verified: served even after a later member failed
                    return st.final
                if st.error is not None:
                    raise st.error
                ev = st.events.setdefault(name, threading.Event()) if st.running else None
            if ev is not None:  # woken for this member only, not for each of the shard's others
                if self._jump(i, st, name):
                    continue
                ev.wait(0.2)
                continue
            if self.complete(i):
                with st.cond:
                    st.done = True
                return st.final
            if self._refused(st):
                return None
            if self._start(i):
                if self._refused(st):
                    return None
                continue
            if os.path.exists(os.path.join(st.final, *name.split("/"))):  # another process fetches it
                return st.final
            time.sleep(nap)
            nap = min(nap * 2, _POLL_MAX)

    def _jump(self, i: int, st: _State, name: str) -> bool:
        """Read member *name* of shard *i* by its own range and publish it, when the shard's stream
        here is ``JUMP_AHEAD`` or more before it and the budget allows (see the module); True once
        it is published, False to wait for the stream."""
        index = self._index[i]
        if index is None:
            index = self._index[i] = {m.name: j for j, m in enumerate(self.source.shard_members[i])}
        j, members = index[name], self.source.shard_members[i]
        m, w = members[j], st.writer
        if j == len(members) - 1 or m.offset < (w.pos if w is not None else 0) + JUMP_AHEAD:
            return False
        with self._jump_lock:
            if self._jumping >= _JUMPS or self._jumped > _JUMP_FREE + self.bytes_read // 8:
                return False
            with st.cond:
                if j in st.taken or not st.running:
                    return False
                st.taken.add(j)
                st.jumping += 1
            self._jumping += 1
            self._jumped += m.size
        try:
            self._land(i, st, j)
            self.jumps += 1
        except BaseException:
            with st.cond:  # the stream writes it if it is not past it yet, else lands it at its end
                if st.asked < j:
                    st.taken.discard(j)
                else:
                    st.lost.add(j)
            raise
        finally:
            with self._jump_lock:
                self._jumping -= 1
            with st.cond:
                st.jumping -= 1
                st.cond.notify_all()
        return True

    def _land(self, i: int, st: _State, j: int) -> None:
        """Member *j* of shard *i* read by its own range (verified: header and CRC-32), staged and
        published into the folder the stream fills."""
        m = self.source.shard_members[i][j]
        data = read_member(
            self.source, i, j, sized=False
        )  # (a pid-named temp file beside it, swept if this process dies)
        write_atomic(os.path.join(st.final, *m.name.split("/")), data, root=os.path.dirname(st.final), mtime=m.mtime)
        with st.cond:
            st.published.add(m.name)
            ev = st.events.pop(m.name, None)
        if ev is not None:
            ev.set()

    def _take(self, st: _State, j: int) -> bool:
        """The stream's question (:class:`.members.MemberWriter`): does it write member *j*?"""
        with st.cond:
            st.asked = j
            if j in st.taken:
                return False
            st.taken.add(j)
            return True

    def _fetch_ahead(self, i: int) -> None:
        st = self._states[i]
        if st.done or st.running or st.error is not None:
            return
        if self.complete(i):
            st.done = True
            return
        if not self._refused(st):
            self._start(i, inline=True)

    def _start(self, i: int, *, inline: bool = False) -> bool:
        """Start extracting shard *i* into its cache slot unless another process is; True when this
        process extracts it, found it complete, or found no room for it (``no_room`` set: its
        members are read from the volume, :mod:`.direct`)."""
        st, key, size = self._states[i], self._keys[i], self.source.shards[i].bytes
        slot = self.cache.slot(key)
        with st.cond:
            if st.running or st.done:
                return True
            Path(slot).parent.mkdir(parents=True, exist_ok=True)
            lock = ProcessFileLock(f"{slot}.lock")
            try:
                lock.acquire(timeout=0)
            except TimeoutError:
                lock.close()
                return False
            if self.complete(i) and self.cache.claims.renew(key):
                lock.release()
                lock.close()
                st.done, st.final = True, slot
                return True
            if self.complete(i):  # left without an entry (a crash, a reset): not counted, extracted again
                unlink_quiet(f"{slot}.complete")  # first: no process takes the folder for complete from here on
                shutil.rmtree(slot, ignore_errors=True)
            unlink_quiet(f"{slot}.complete")  # an evicted folder's marker
            if not claim_or_go_direct(self.cache, key, size, lock, st, self.handed):
                return True  # no room: its members come from the volume (.direct)
            st.running, st.final, st.counted, st.renewed = True, slot, True, time.monotonic()
            st.taken, st.asked, st.lost = set(), -1, set()
        if inline:  # (a read-ahead, on a driver thread already)
            self._fetch(i, lock, slot)
        else:
            self._drivers.submit(self._fetch, i, lock, slot)
        return True

    def _fetch(self, i: int, lock: ProcessFileLock, final: str) -> None:
        st, key, size = self._states[i], self._keys[i], self.source.shards[i].bytes
        try:
            self._fetch_into(i, Path(final), st, key)
            self.cache.claims.commit(key, size)
            with st.cond:
                st.done = True
        except BaseException as exc:  # the folder stays: what it holds was verified, and may be in use
            # (and stays counted: its claim is kept, so eviction removes it once it is not pinned)
            with st.cond:
                st.error = exc
        finally:
            with st.cond:
                st.running = False
                for ev in st.events.values():
                    ev.set()
                st.events.clear()
                st.cond.notify_all()
            lock.release()
            lock.close()

    def _fetch_into(self, i: int, final: Path, st: _State, key: str) -> None:
        src = self.source
        final.mkdir(parents=True, exist_ok=True)
        with staging_folder(f"{final}.tmp") as staging:  # a dead fetcher's is replaced (this process holds the lock)

            def published(name: str) -> None:
                with st.cond:
                    st.published.add(name)
                    ev = st.events.pop(name, None)
                if ev is not None:
                    ev.set()

            writer = MemberWriter(
                final, staging, src.shard_members[i], str(src.shard_path(i)), published, lambda j: self._take(st, j)
            )
            with st.cond:
                st.writer = writer

            def consume(off: int, data: bytes) -> None:
                writer.feed(data)
                self.bytes_read += len(data)
                if key and time.monotonic() - st.renewed > self._renew_every:  # a long fetch keeps its claim pinned
                    st.renewed = time.monotonic()
                    self.cache.claims.renew(key)

            try:
                try:
                    stream_shard(src, i, consume)
                except BaseException:
                    writer.abort()
                    raise
                with st.cond:
                    while st.jumping:
                        st.cond.wait()
                    lost, st.lost = sorted(st.lost), set()
                for j in lost:  # taken by a read of its own that failed after the stream passed it
                    self._land(i, st, j)
                writer.finish()
            finally:  # no member read by its own range is still in flight once the fetch ends
                with st.cond:
                    st.writer = None
                    while st.jumping:
                        st.cond.wait()
            os.close(os.open(f"{final}.complete", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            self.shards_fetched += 1
