"""The one check before a packed member's bytes are handed out (see :mod:`.format`).

:func:`verify_member` takes the shard's bytes from :func:`header_start` to the member's offset (its
tar header) and the member's data; the streaming fetch (:mod:`.members`) uses its two parts as the
bytes arrive (:func:`check_header`, then :class:`MemberCheck`), and a reader by offset calls it on
what it read. Either way a member is served only if its tar header names it with the index's size
and ends exactly where its data starts, and its data matches its CRC-32.
"""

from __future__ import annotations

import io
import tarfile
import zlib
from collections.abc import Sequence

from ..errors import ShardError
from .format import BLOCK, Member

__all__ = ["header_start", "check_header", "MemberCheck", "OrderedParse", "StreamCheck", "verify_member"]


def header_start(members: Sequence[Member], j: int) -> int:
    """Where member *j*'s tar header starts: the padded end of member ``j - 1`` (*members* in
    offset order, as :func:`parse_index` checked them), 0 for the first."""
    if j == 0:
        return 0
    p = members[j - 1]
    return p.offset + p.size + (-p.size % BLOCK)


def _octal(field: bytes) -> int:
    return int(field.split(b"\0", 1)[0].strip() or b"x", 8)


def _plain_ustar_of(m: Member, header: bytes) -> bool:
    """Fast path (a fifth of :mod:`tarfile`'s cost): True when *header* is one ustar block, with a
    valid checksum, for a regular file named ``m.name`` of ``m.size`` bytes. False means "ask
    tarfile" (pax headers, prefix-split names, anything unusual or wrong)."""
    if len(header) != BLOCK or header[257:263] != b"ustar\x00" or header[156:157] not in (b"0", b"\0"):
        return False
    try:
        if _octal(header[148:156]) != 256 + sum(header[:148]) + sum(header[156:]):
            return False
        if _octal(header[124:136]) != m.size or header[345:346] != b"\0":  # size; no name prefix
            return False
    except ValueError:
        return False
    return header[:100].split(b"\0", 1)[0] == m.name.encode("utf-8", "surrogateescape")


def check_header(where: str, m: Member, header: bytes) -> None:
    """Check the shard's bytes from :func:`header_start` to ``m.offset``: they must be exactly the
    tar header (ustar, or pax + ustar) of a regular file named ``m.name`` of ``m.size`` bytes, so
    an index that points a name at another member's bytes (names swapped, an offset into the next
    member) is refused; a plain ``tar -x`` of the shard would give what the index promises."""
    if _plain_ustar_of(m, header):
        return
    try:
        tf = tarfile.open(fileobj=io.BytesIO(header), mode="r:", encoding="utf-8", errors="surrogateescape")
        ti = tf.firstmember
    except (tarfile.TarError, ValueError, UnicodeError, EOFError, OverflowError) as exc:
        ti, problem = None, f"not a tar header ({exc})"
    else:
        problem = "" if ti is not None else "no tar header"
    if ti is not None and (ti.name != m.name or ti.size != m.size or not ti.isreg() or ti.offset_data != len(header)):
        problem = f"its tar header says {ti.name!r}, {ti.size} bytes, data at +{ti.offset_data}"
    if problem:
        raise ShardError(
            f"shard {where}: member {m.name!r} ({m.size} bytes at offset {m.offset}) does not match the shard: "
            f"{problem}; the shard or its index is damaged or was altered: pack the source again"
        )


class MemberCheck:
    """:func:`verify_member` for data that arrives in pieces: ``update`` each, then ``verify``."""

    __slots__ = ("where", "member", "crc")

    def __init__(self, where: str, member: Member) -> None:
        self.where, self.member, self.crc = where, member, 0

    def update(self, data: bytes | memoryview) -> None:
        self.crc = zlib.crc32(data, self.crc)

    def verify(self) -> None:
        m = self.member
        if self.crc != m.crc32:
            raise ShardError(
                f"shard {self.where}: member {m.name!r} does not match the checksum in its index (damaged or "
                f"changed on the volume); refusing to serve it: pack the source again"
            )


def verify_member(where: str, m: Member, header: bytes, data: bytes | memoryview) -> None:
    """The check before member *m*'s bytes are handed out: *header* (the shard's bytes from
    :func:`header_start` to ``m.offset``) is its tar header and *data* matches its checksum.
    Raises :class:`ShardError` naming the shard (*where*) and the member."""
    check_header(where, m, header)
    if len(data) != m.size:
        raise ShardError(
            f"shard {where}: member {m.name!r} is {len(data)} bytes but its index says {m.size}; pack the source again"
        )
    c = MemberCheck(where, m)
    c.update(data)
    c.verify()


class OrderedParse:
    """A shard's bytes fed in offset order, from offset 0: where the parse is (``pos``), which
    member is next (``j``), and the step over the padding after a member and its successor's tar
    header, checked as it completes (then ``check`` takes the member's data). Shared by the
    verifier below and the extractor's writer (:mod:`.members`)."""

    def __init__(self, where: str, members: list[Member]) -> None:
        self.where, self.members = where, members
        self.j = self.pos = self.hstart = 0  # hstart: where member j's header starts
        self.header = bytearray()
        self.check: MemberCheck | None = None

    def gap(self, view: memoryview, m: Member) -> memoryview:
        """Consume what of *view* lies before member *m*'s data (padding, then its header, checked
        once whole); returns the rest of *view*."""
        if self.pos < self.hstart:
            skip = min(len(view), self.hstart - self.pos)
            self.pos += skip
            return view[skip:]
        take = min(len(view), m.offset - self.pos)
        self.header += view[:take]
        self.pos += take
        if self.pos == m.offset:
            check_header(self.where, m, bytes(self.header))
            self.header.clear()
            self.check = MemberCheck(self.where, m)
        return view[take:]

    def next_member(self, m: Member) -> None:
        """Member *m* (number ``j``) is through: the next one's header follows its padding."""
        self.j += 1
        self.hstart = m.offset + m.size + (-m.size % BLOCK)
        self.check = None


class StreamCheck(OrderedParse):
    """:func:`verify_member` for a whole shard's bytes fed in order (from offset 0): ``feed`` checks
    each member's header and data as they pass (raising the :class:`ShardError` of the first that
    fails) and returns how many members, in offset order, are verified so far (also in ``j``)."""

    def feed(self, data: bytes) -> int:
        view, members = memoryview(data), self.members
        while self.j < len(members):
            m = members[self.j]
            if self.pos < m.offset:  # the previous member's padding, then this one's tar header
                if not view:
                    break
                view = self.gap(view, m)
                continue
            check = self.check
            assert check is not None  # parse_index keeps a header in front of every member
            take = min(len(view), m.offset + m.size - self.pos)
            if take:
                check.update(view[:take])
                view, self.pos = view[take:], self.pos + take
            if self.pos < m.offset + m.size:
                break
            check.verify()
            self.next_member(m)
        self.pos += len(view)
        return self.j
