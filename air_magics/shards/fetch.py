"""Fetching a shard into its extracted folder: parallel range reads, members served as they land.

One :class:`Extractor` per :class:`~air_magics.shards.reader.PackedFolder` and process. A shard is
read from the volume as ``_BLOCK``-sized ranges on a shared pool of ``_THREADS`` threads (a remote
mount answers many reads at once; one stream would pay a round trip per 128 KiB), processed in
offset order: each member's bytes go straight into its own file in the shard's extracted folder
(temp name + rename), so a member is served as soon as its bytes are in, long before the shard is.
When a shard is first asked for, the shard that follows it in name order (the next one an
unshuffled epoch needs) is fetched too, ``_AHEAD`` deep.

Integrity: the shard's size is checked before anything is served (a truncated shard serves
nothing); its CRC-32 is checked when its last byte arrives, and its last member is published only
after that check, so every full pass over a shard meets the verdict. On a mismatch the extracted
folder is removed and every later request for the shard raises :class:`ShardError`; members of it
served before the check came from the damaged shard (the check is per shard, the index has no
per-member checksum).

Processes (DataLoader workers) share the extracted folders: the fetch of a shard holds a
``flock`` on ``<folder>.lock``; another process that wants the shard meanwhile waits for its member
files to appear (a member file exists only complete), and takes the fetch over if the holder dies.
A finished folder holds ``.air-complete``.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ShardError, VolumeNotFoundError
from ..io.confined import open_read
from ..io.leftovers import temp_name
from ..io.locks import ProcessFileLock
from ..io.retry import retry_call
from .format import Member

if TYPE_CHECKING:
    from .reader import PackedFolder

__all__ = ["Extractor", "COMPLETE"]

COMPLETE = ".air-complete"
_BLOCK = 1 << 20
_THREADS = 32
_IN_FLIGHT = 64  # blocks read ahead of the member writer at most
_AHEAD = 1  # shards fetched ahead of the one asked for
_POLL = 0.002  # polling for a member another process fetches: from 2 ms, doubling up to 32 ms
_POLL_MAX = 0.032

_WRITERS = 4  # member files created at once (a create waits on the local file system's journal)
_SMALL = 4 << 20  # members up to this size, whole in one block, are written by the writer pool
_PENDING = 64

_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_POOL_LOCK = threading.Lock()


def _pool(kind: str, threads: int) -> ThreadPoolExecutor:
    """The process's *kind* pool (made again after a fork: a forked worker has no threads)."""
    with _POOL_LOCK:
        pid, pool = _POOLS.get(kind, (0, None))
        if pool is None or pid != os.getpid():
            pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"air-shard-{kind}")
            _POOLS[kind] = (os.getpid(), pool)
        return pool


def _block_pool() -> ThreadPoolExecutor:
    return _pool("read", _THREADS)


class _State:
    """This process's view of one shard."""

    def __init__(self) -> None:
        self.cond = threading.Condition()  # guards the fields; notified when the fetch ends
        self.published: set[str] = set()
        self.events: dict[str, threading.Event] = {}  # members waited for: set when published
        self.running = False
        self.done = False
        self.error: BaseException | None = None


class Extractor:
    """Serves members of one packed folder as local paths in ``root`` (see the module docstring)."""

    def __init__(self, folder: PackedFolder, root: Path) -> None:
        self.folder, self.root, self.pid = folder, root, os.getpid()
        self._states = [_State() for _ in folder.manifest.shards]
        self._drivers = ThreadPoolExecutor(max_workers=2 + _AHEAD, thread_name_prefix="air-shard-fetch")
        self.shards_fetched = 0
        self.bytes_read = 0

    def final(self, i: int) -> Path:
        s = self.folder.manifest.shards[i]
        vp = self.folder.path
        return self.root.joinpath(
            "shards", vp.catalog, vp.schema, vp.volume, *vp.parts, f"{s.name[: -len('.tar')]}-{s.crc32:08x}"
        )

    def ready(self, i: int, name: str) -> str | None:
        """The member's path if this process knows it is there (no I/O), else None."""
        st = self._states[i]
        if st.done or name in st.published:
            return os.path.join(self.final(i), *name.split("/"))
        return None

    def path(self, i: int, name: str) -> str:
        """The member's local path, waiting until its bytes are in (fetching the shard if needed)."""
        st, final = self._states[i], self.final(i)
        p = os.path.join(final, *name.split("/"))
        self._read_ahead(i)
        nap = _POLL
        while True:
            with st.cond:
                if st.error is not None:
                    raise st.error
                if st.done or name in st.published:
                    return p
                ev = st.events.setdefault(name, threading.Event()) if st.running else None
            if ev is not None:  # woken for this member only, not for each of the shard's others
                ev.wait(0.2)
                continue
            if (final / COMPLETE).exists():
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
        for _ in range(_AHEAD):
            i = self.folder.next_shard[i]
            if i < 0:
                return
            st = self._states[i]
            if st.done or st.running or st.error is not None:
                continue
            if (self.final(i) / COMPLETE).exists():
                st.done = True
                continue
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
            if (final / COMPLETE).exists():
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
        except BaseException as exc:
            if isinstance(exc, ShardError):
                shutil.rmtree(final, ignore_errors=True)
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
        s = self.folder.manifest.shards[i]
        vp = self.folder.shard_path(i)
        read, close = self._opener(i)
        try:
            final.mkdir(parents=True, exist_ok=True)

            def published(name: str) -> None:
                with st.cond:
                    st.published.add(name)
                    ev = st.events.pop(name, None)
                if ev is not None:
                    ev.set()

            writer = _MemberWriter(final, self.folder.shard_members[i], published)
            pool = _block_pool()
            offsets = iter(range(0, s.bytes, _BLOCK))
            window: deque[tuple[int, int, Future]] = deque()

            def submit() -> None:
                off = next(offsets, None)
                if off is not None:
                    n = min(_BLOCK, s.bytes - off)
                    window.append((off, n, pool.submit(retry_call, lambda o=off, k=n: read(o, k))))

            for _ in range(_IN_FLIGHT):
                submit()
            crc = 0
            try:
                while window:
                    off, n, fut = window.popleft()
                    data = fut.result()
                    submit()
                    if len(data) != n:
                        raise ShardError(
                            f"shard {vp} ended at byte {off + len(data)} but its index says {s.bytes} bytes "
                            f"(truncated on the volume); the packed folder is damaged: pack the source again"
                        )
                    crc = zlib.crc32(data, crc)
                    writer.feed(data)
                    self.bytes_read += n
                if crc != s.crc32:
                    raise ShardError(
                        f"shard {vp} does not match the checksum in its index (changed or damaged on the "
                        f"volume); the packed folder is damaged: pack the source again"
                    )
            except BaseException:
                for _, _, fut in window:
                    fut.cancel()
                writer.abort()
                raise
            writer.finish()
            fd = os.open(final / COMPLETE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.close(fd)
            self.shards_fetched += 1
        finally:
            close()

    def _opener(self, i: int) -> tuple[Any, Any]:
        """``(read(offset, n) -> bytes, close())`` over shard *i* on its volume, its size checked."""
        s = self.folder.manifest.shards[i]
        vp = self.folder.shard_path(i)
        try:
            loc = self.folder.store.locate(vp)
            if loc.is_local:
                fd, stat = retry_call(lambda: open_read(loc.path, loc.root))
                size = stat.st_size
            else:
                fd, size = -1, int(loc.fs.size(loc.path))
        except (FileNotFoundError, VolumeNotFoundError):
            raise ShardError(
                f"shard {vp} named by the manifest is missing on the volume; pack the source again"
            ) from None
        if size != s.bytes:
            if fd >= 0:
                os.close(fd)
            raise ShardError(
                f"shard {vp} is {size} bytes but its index says {s.bytes} (truncated or replaced "
                f"on the volume); the packed folder is damaged: pack the source again"
            )
        if fd < 0:
            return (lambda off, n: loc.fs.cat_file(loc.path, start=off, end=off + n)), (lambda: None)

        def pread(off: int, n: int) -> bytes:
            parts, got = [], 0
            while got < n:
                b = os.pread(fd, n - got, off + got)
                if not b:
                    break
                parts.append(b)
                got += len(b)
            return b"".join(parts) if len(parts) != 1 else parts[0]

        return pread, (lambda: os.close(fd))


class _MemberWriter:
    """Turns the shard's bytes, fed in order, into member files (temp + rename each); the last
    member is held back until :meth:`finish` (after the shard's checksum)."""

    def __init__(self, into: Path, members: list[Member], published: Any) -> None:
        self.into, self.members, self.published = into, members, published
        self.pos = 0
        self.j = 0
        self.fd = -1
        self.tmp = ""
        self.held: tuple[str, str, Member] | None = None
        self.made: set[str] = set()
        self.pending: deque[Future] = deque()
        self._open_empty()

    def _write_whole(self, m: Member, data: memoryview) -> None:
        """On the writer pool: one member whose bytes are all in *data*."""
        path = self._path_made(m)
        tmp = os.path.join(os.path.dirname(path), temp_name(os.path.basename(path)))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            ns = int(m.mtime * 1e9)
            os.utime(fd, ns=(ns, ns))
        finally:
            os.close(fd)
        os.rename(tmp, path)
        self.published(m.name)

    def _path_made(self, m: Member) -> str:
        return os.path.join(self.into, *m.name.split("/"))

    def _drain(self, keep: int) -> None:
        while len(self.pending) > keep or (self.pending and self.pending[0].done()):
            self.pending.popleft().result()

    def _path(self, m: Member) -> str:
        parent, _, _ = m.name.rpartition("/")
        if parent not in self.made:
            os.makedirs(os.path.join(self.into, *parent.split("/")), exist_ok=True)
            self.made.add(parent)
        return os.path.join(self.into, *m.name.split("/"))

    def _begin(self, m: Member) -> None:
        path = self._path(m)
        self.tmp = os.path.join(os.path.dirname(path), temp_name(os.path.basename(path)))
        self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)

    def _end(self, m: Member) -> None:
        ns = int(m.mtime * 1e9)
        os.utime(self.fd, ns=(ns, ns))
        os.close(self.fd)
        self.fd = -1
        path = self._path(m)
        self.j += 1
        if self.j == len(self.members):
            self.held = (self.tmp, path, m)
        else:
            os.rename(self.tmp, path)
            self.published(m.name)
        self._open_empty()

    def _open_empty(self) -> None:
        """Members of size 0 complete as soon as their offset is reached."""
        while self.j < len(self.members) and self.fd < 0:
            m = self.members[self.j]
            if m.size or m.offset > self.pos:
                return
            self._begin(m)
            self._end(m)

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view and self.j < len(self.members):
            m = self.members[self.j]
            if self.pos < m.offset:
                skip = min(len(view), m.offset - self.pos)
                view, self.pos = view[skip:], self.pos + skip
                self._open_empty()
                continue
            if (
                self.fd < 0
                and self.pos == m.offset
                and m.size <= min(len(view), _SMALL)
                and self.j + 1 < len(self.members)  # the last member is held for the checksum
            ):
                self._path(m)  # its folder, made here, in order
                self.pending.append(_pool("write", _WRITERS).submit(self._write_whole, m, view[: m.size]))
                self._drain(_PENDING)
                view, self.pos, self.j = view[m.size :], self.pos + m.size, self.j + 1
                self._open_empty()
                continue
            if self.fd < 0:
                self._begin(m)
            take = min(len(view), m.offset + m.size - self.pos)
            written = 0
            while written < take:
                written += os.write(self.fd, view[written:take])
            view, self.pos = view[take:], self.pos + take
            if self.pos == m.offset + m.size:
                self._end(m)
        self.pos += len(view)

    def finish(self) -> None:
        self._drain(0)
        if self.j != len(self.members) or self.fd >= 0:  # pragma: no cover - the index was checked
            raise ShardError(f"shard data ended inside member {self.members[self.j].name!r}; pack the source again")
        if self.held is not None:
            tmp, path, m = self.held
            os.rename(tmp, path)
            self.published(m.name)
            self.held = None

    def abort(self) -> None:
        for fut in self.pending:
            fut.cancel()
        while self.pending:
            try:
                self.pending.popleft().result()
            except BaseException:
                pass
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        for tmp in (self.tmp, self.held[0] if self.held else ""):
            if tmp:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
