"""Fetching a shard into its extracted folder: parallel range reads, members served as they land.

One :class:`Extractor` per packed folder (its :class:`~.source.ShardSource`) and process. A shard is
read from the volume as parallel range reads (:func:`~.source.stream_shard`), processed in
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..io.locks import ProcessFileLock
from .members import MemberWriter
from .source import PLANNED_AHEAD, ShardSource, stream_shard

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


class Extractor:
    """Serves members of one packed folder as local paths in ``root`` (see the module docstring)."""

    def __init__(self, source: ShardSource, root: Path) -> None:
        self.source, self.root, self.pid = source, root, os.getpid()
        self._states = [_State() for _ in source.shards]
        self._drivers = ThreadPoolExecutor(max_workers=2 + PLANNED_AHEAD, thread_name_prefix="air-shard-fetch")
        self._plan: list[int] = []
        self._plan_pos: dict[int, int] = {}
        self.shards_fetched = 0
        self.bytes_read = 0

    def final(self, i: int) -> Path:
        """Shard *i*'s extracted folder."""
        return self.source.local_base(self.root, i)

    def complete(self, i: int) -> bool:
        """True when shard *i*'s extracted folder is complete (any process finished its fetch)."""
        return os.path.exists(f"{self.final(i)}.complete")

    def plan(self, shards: Sequence[int]) -> None:
        """The order this process will need shards in (repeats ignored): fetches start now for the
        first ones and then stay ``PLANNED_AHEAD`` shards ahead of the one in use, in this order."""
        seq = list(dict.fromkeys(shards))
        self._plan, self._plan_pos = seq, {s: k for k, s in enumerate(seq)}
        for i in seq[: 1 + PLANNED_AHEAD]:
            self._fetch_ahead(i)

    def ready(self, i: int, name: str) -> str | None:
        """The member's path if this process knows it is there (no I/O), else None."""
        st = self._states[i]
        if st.done or name in st.published:
            if not st.used:  # the first member of a shard fetched ahead: the shards after it go next
                st.used = True
                self._read_ahead(i)
            return os.path.join(self.final(i), *name.split("/"))
        return None

    def path(self, i: int, name: str) -> str:
        """The member's local path, waiting until its bytes are in (fetching the shard if needed)."""
        st, final = self._states[i], self.final(i)
        p = os.path.join(final, *name.split("/"))
        if not st.used:
            st.used = True
            self._read_ahead(i)
        nap = _POLL
        while True:
            with st.cond:
                if st.done or name in st.published:  # verified: served even after a later member failed
                    return p
                if st.error is not None:
                    raise st.error
                ev = st.events.setdefault(name, threading.Event()) if st.running else None
            if ev is not None:  # woken for this member only, not for each of the shard's others
                ev.wait(0.2)
                continue
            if self.complete(i):
                with st.cond:
                    st.done = True
                return p
            if self._start(i):
                continue
            if os.path.exists(p):  # another process fetches this shard and has published the member
                return p
            time.sleep(nap)
            nap = min(nap * 2, _POLL_MAX)

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
        if st.done or st.running or st.error is not None:
            return
        if self.complete(i):
            st.done = True
            return
        self._start(i)

    def _start(self, i: int) -> bool:
        """Start fetching shard *i* unless another process is; True when this process fetches it
        (or found it complete)."""
        st, final = self._states[i], self.final(i)
        with st.cond:
            if st.running or st.done:
                return True
            final.parent.mkdir(parents=True, exist_ok=True)
            lock = ProcessFileLock(f"{final}.lock")
            try:
                lock.acquire(timeout=0)
            except TimeoutError:
                lock.close()
                return False
            if self.complete(i):
                lock.release()
                lock.close()
                st.done = True
                return True
            st.running = True
        self._drivers.submit(self._fetch, i, lock)
        return True

    def _fetch(self, i: int, lock: ProcessFileLock) -> None:
        st, final = self._states[i], self.final(i)
        try:
            self._fetch_into(i, final, st)
            with st.cond:
                st.done = True
        except BaseException as exc:  # the folder stays: what it holds was verified, and may be in use
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

    def _fetch_into(self, i: int, final: Path, st: _State) -> None:
        src = self.source
        staging = Path(f"{final}.tmp")
        try:
            final.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(staging, ignore_errors=True)  # a dead fetcher's (this process holds the lock)
            staging.mkdir()

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

            try:
                stream_shard(src, i, consume)
            except BaseException:
                writer.abort()
                raise
            writer.finish()
            os.close(os.open(f"{final}.complete", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            self.shards_fetched += 1
        finally:
            shutil.rmtree(staging, ignore_errors=True)
