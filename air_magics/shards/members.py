"""Turning a shard's bytes, fed in order, into verified member files (used by :mod:`.fetch`).

Every member is checked before it is published: the tar header in front of its data against its
index entry (:func:`.verify.check_header`), its data against its CRC-32 (:class:`.verify.MemberCheck`);
a member that fails is never renamed into place and the fetch stops with a :class:`ShardError`
naming it. The last member is held back until :meth:`MemberWriter.finish` (after the shard's
checksum), so a full pass over a shard always meets the shard's verdict.

Names: the folder a shard is extracted into holds its members and nothing else. Member bytes are
written in a staging folder beside it (``<folder>.tmp/<member number>``: short names, so a member
with a 255-byte name still has a temp name that fits, and no internal name ever shares the members'
namespace), then renamed to the member's own name.

Members read out of order: a member someone asked for far ahead of the stream may be read by its own
range and published by the extractor (:mod:`.fetch`); *take(j)*, asked once as member *j*'s data
begins, says whether this writer writes it (True) or only steps over its bytes (False: taken).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..errors import ShardError
from ..io.folders import publish_staged
from ..io.pools import ProcessPool, threads
from .format import Member
from .verify import OrderedParse

__all__ = ["MemberWriter", "writer_pool", "write_member_file"]

_WRITERS = threads("local-io")  # member files created at once (a create waits on the local file system's journal)
_SMALL = 4 << 20  # members up to this size, whole in one block, are written by the writer pool
_PENDING = 64
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

_POOL = ProcessPool(_WRITERS, "air-shard-write")  # member files (made again after a fork)


def writer_pool() -> ThreadPoolExecutor:
    """The process's pool for member files."""
    return _POOL.get()


def write_member_file(path: str, data: memoryview | bytes, mtime: float) -> None:
    """*data* into a new file at *path* (not followed if a link), stamped *mtime*."""
    fd = os.open(path, _FLAGS, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        ns = int(mtime * 1e9)
        os.utime(fd, ns=(ns, ns))
    finally:
        os.close(fd)


class MemberWriter(OrderedParse):
    """Member files of one shard in *into*, staged in *staging* (see the module docstring).
    *where* names the shard in errors; *published(name)* is called once a member is in place."""

    def __init__(
        self,
        into: Path,
        staging: Path,
        members: list[Member],
        where: str,
        published: Callable[[str], None],
        take: Callable[[int], bool] | None = None,
    ) -> None:
        super().__init__(where, members)
        self.into, self.staging, self.published = str(into), str(staging), published
        self.fd = -1  # member j's staged file, when it is streamed
        self.held: tuple[str, str, Member] | None = None
        self.staged: set[str] = set()
        self.made: set[str] = {""}
        self.pending: deque[Future] = deque()
        self.take = take
        self.asked = -1  # the member *take* was last asked about
        self.skipping = False  # member j was taken (read by its own range): its bytes are stepped over

    def _tmp(self, j: int) -> str:
        tmp = os.path.join(self.staging, str(j))
        self.staged.add(tmp)
        return tmp

    def _path(self, m: Member) -> str:
        """The member's final path, its folder made (in member order, on the feeding thread)."""
        parent, _, _ = m.name.rpartition("/")
        if parent not in self.made:
            os.makedirs(os.path.join(self.into, *parent.split("/")), exist_ok=True)
            self.made.add(parent)
        return os.path.join(self.into, *m.name.split("/"))

    def _publish(self, tmp: str, path: str, m: Member) -> None:
        publish_staged(tmp, path)
        self.staged.discard(tmp)
        self.published(m.name)

    def _whole(self, tmp: str, path: str, m: Member, data: memoryview) -> None:
        """On the writer pool: a verified member whose bytes are all in *data*."""
        write_member_file(tmp, data, m.mtime)
        self._publish(tmp, path, m)

    def _drain(self, keep: int) -> None:
        while len(self.pending) > keep or (self.pending and self.pending[0].done()):
            self.pending.popleft().result()

    def feed(self, data: bytes) -> None:
        """The shard's next bytes (in order, from offset 0)."""
        view = memoryview(data)
        members, last = self.members, len(self.members) - 1
        while view and self.j <= last:
            m = members[self.j]
            if self.pos < m.offset:  # the previous member's padding, then this one's tar header
                view = self.gap(view, m)
                continue
            if self.take is not None and self.asked != self.j and self.fd < 0 and self.pos == m.offset:
                self.asked, self.skipping = self.j, not self.take(self.j)
            if self.skipping:  # (its bytes still count towards the shard's CRC-32, in stream_shard)
                take = min(len(view), m.offset + m.size - self.pos)
                view, self.pos = view[take:], self.pos + take
                if self.pos == m.offset + m.size:
                    self.skipping = False
                    self.next_member(m)
                continue
            check = self.check
            assert check is not None  # set when the header was checked: parse_index keeps one in front
            if self.fd < 0 and self.pos == m.offset and m.size <= min(len(view), _SMALL) and self.j < last:
                body = view[: m.size]
                check.update(body)
                check.verify()  # before anything of it is written
                tmp, path = self._tmp(self.j), self._path(m)
                self.pending.append(writer_pool().submit(self._whole, tmp, path, m, body))
                self._drain(_PENDING)
                view, self.pos = view[m.size :], self.pos + m.size
                self.next_member(m)
                continue
            if self.fd < 0:
                self.fd = os.open(self._tmp(self.j), _FLAGS, 0o644)
            take = min(len(view), m.offset + m.size - self.pos)
            body = view[:take]
            check.update(body)
            written = 0
            while written < take:
                written += os.write(self.fd, body[written:])
            view, self.pos = view[take:], self.pos + take
            if self.pos == m.offset + m.size:
                self._end(m)
        self.pos += len(view)

    def _end(self, m: Member) -> None:
        assert self.check is not None
        self.check.verify()
        ns = int(m.mtime * 1e9)
        os.utime(self.fd, ns=(ns, ns))
        os.close(self.fd)
        self.fd = -1
        tmp, path = os.path.join(self.staging, str(self.j)), self._path(m)
        if self.j == len(self.members) - 1:
            self.held = (tmp, path, m)  # published by finish(), after the shard's checksum
        else:
            self._publish(tmp, path, m)
        self.next_member(m)

    def finish(self) -> None:
        """After the shard's checksum: wait for the member files, publish the last member."""
        self._drain(0)
        if self.j != len(self.members) or self.fd >= 0:  # pragma: no cover - the index was checked
            raise ShardError(
                f"shard {self.where}: its data ended inside member {self.members[self.j].name!r}; pack the source again"
            )
        if self.held is not None:
            tmp, path, m = self.held
            self.held = None
            self._publish(tmp, path, m)

    def abort(self) -> None:
        """Stop: members already verified and being written are published, nothing after them;
        staged files are removed."""
        while self.pending:
            try:
                self.pending.popleft().result()
            except BaseException:
                pass
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.held = None
        for tmp in list(self.staged):
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self.staged.clear()
