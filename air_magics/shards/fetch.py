"""Fetching a shard into its extracted folder: parallel range reads, members served as they land.

One :class:`Extractor` per packed folder (its :class:`~.shard_source.ShardSource`) and process. A shard is
read from the volume as parallel range reads (:func:`~.shard_source.stream_shard`), processed in
offset order: each member's bytes go straight into its own file (staged beside the shard's
extracted folder, verified, renamed into it), so a member is served as soon as its bytes are in,
long before the shard is.
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

from ..io.folders import staging_folder
from ..io.locks import ProcessFileLock
from ..io.pools import job_pool
from .direct import RETRY_CLAIM, claim_or_go_direct, member_path
from .members import MemberWriter
from .renewal import renew_every
from .shard_source import PLANNED_AHEAD, ReadAhead, ShardSource, stream_shard
from .shardmap import unlink_quiet

if TYPE_CHECKING:
    from ..cache import FileCache

__all__ = ["Extractor", "SIDECARS"]

SIDECARS = (".lock", ".complete", ".tmp")  # beside an extracted folder: fetch lock, done marker, staging
_AHEAD = 1  # shards fetched ahead of the one asked for, without a plan (the next in name order)
_POLL = 0.002  # polling for a member another process fetches: from 2 ms, doubling up to 32 ms
_POLL_MAX = 0.032


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

            writer = MemberWriter(final, staging, src.shard_members[i], str(src.shard_path(i)), published)

            def consume(off: int, data: bytes) -> None:
                writer.feed(data)
                self.bytes_read += len(data)
                if key and time.monotonic() - st.renewed > self._renew_every:  # a long fetch keeps its claim pinned
                    st.renewed = time.monotonic()
                    self.cache.claims.renew(key)

            try:
                stream_shard(src, i, consume)
            except BaseException:
                writer.abort()
                raise
            writer.finish()
            os.close(os.open(f"{final}.complete", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            self.shards_fetched += 1
