"""The packed-folder format: plain tar shards, one index per shard, one manifest for the folder.

Why plain tar: ``tar -tf``/``tar -xf`` and webdataset read it, nothing needs this package to get
the bytes back. Headers are POSIX pax (:data:`tarfile.PAX_FORMAT`): ustar when a name fits, a pax
extended header when it does not (long or non-ASCII names). Headers are deterministic (mode 0644,
uid/gid 0, integer mtime), so the same members always give the same bytes.

A packed folder holds::

    air-shards.json            the manifest (replaced last, atomically: it *is* the commit)
    shard-<id>.tar             members, each header + data padded to 512 bytes, two zero blocks
    shard-<id>.idx.json        that shard's index: name, offset (of the data), size, source size, mtime,
                               CRC-32 of the member's data

``<id>`` is a digest of the shard's member list (name, size, mtime): a shard name never names two
different contents, so a killed run's completed shards are reused and a new generation never
overwrites a shard the published manifest refers to. The manifest records each shard's byte
count and CRC-32 and each index's CRC-32, so it is the one root of trust a reader validates from.

Before a member's bytes are handed out they are checked by :func:`.verify.verify_member` (or its
streaming form, :func:`.verify.check_header` + :class:`.verify.MemberCheck`): the tar header in front of the data must name
the member with the index's size and end exactly where the index says the data starts, and the
data must match the member's CRC-32. A crafted index (names swapped, an offset into another
member) or a damaged or swapped shard is refused by member name; bytes that do not match the
index are never served. Version 2 added the per-member CRC-32: a version-1 folder is refused with
"pack the source again" (pack rewrites it).
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ShardError

__all__ = [
    "MANIFEST_NAME",
    "FORMAT",
    "VERSION",
    "BLOCK",
    "Member",
    "ShardInfo",
    "Manifest",
    "member_header",
    "padding",
    "END_OF_ARCHIVE",
    "MAX_HEADER",
    "shard_id",
    "shard_names",
    "check_member_name",
    "Index",
    "dump_index",
    "parse_index",
    "load_index",
    "dump_manifest",
    "load_manifest",
    "member_bytes",
    "legacy_manifest",
]

MANIFEST_NAME = "air-shards.json"
FORMAT = "air-shards"
VERSION = 2  # 2: per-member CRC-32 in the index
BLOCK = 512
END_OF_ARCHIVE = b"\0" * (2 * BLOCK)
MAX_HEADER = 64 << 10  # a member's tar header(s): pax + ustar for a 4 KiB path is 11 blocks


@dataclass(frozen=True)
class Member:
    """One packed file: ``offset`` is where its data starts in the shard; ``size`` the bytes stored
    there, ``src_size``/``mtime`` the source's when it was packed (equal sizes: tar stores files as
    they are); ``crc32`` that of its data, checked before the bytes are handed out."""

    name: str
    offset: int
    size: int
    src_size: int
    mtime: float
    crc32: int


@dataclass(frozen=True)
class ShardInfo:
    """A shard as the manifest names it: file, index, member count, bytes and checksums."""

    name: str
    index: str
    members: int
    bytes: int
    data_bytes: int
    crc32: int
    mtime: float
    index_crc32: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Manifest:
    """The packed folder: shards in order, totals, generation, and the source listing's fingerprint."""

    generation: int
    source: str
    shard_size: int
    fingerprint: str
    files: int
    bytes: int
    shards: tuple[ShardInfo, ...]
    created: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "generation": self.generation,
            "source": self.source,
            "shard_size": self.shard_size,
            "fingerprint": self.fingerprint,
            "files": self.files,
            "bytes": self.bytes,
            "created": self.created,
            "shards": [s.to_dict() for s in self.shards],
        }


def check_member_name(name: Any, where: str) -> str:
    """A member name is a relative ``/``-path with no empty, ``.`` or ``..`` segment and no NUL:
    anything else could escape the folder it is extracted into."""
    if (
        not isinstance(name, str)
        or not name
        or name.startswith("/")
        or "\0" in name
        or any(seg in ("", ".", "..") or (len(seg) > 63 and _too_long(seg)) for seg in name.split("/"))
    ):
        raise ShardError(
            f"{where}: member name {name!r} is not a relative path inside the folder; "
            f"the packed folder is damaged: pack the source again"
        )
    return name


def _too_long(seg: str) -> bool:
    """A path component longer than a file name can be (255 bytes) could never be extracted."""
    return len(seg.encode("utf-8", "surrogateescape")) > 255


_USTAR_NAME = tarfile.LENGTH_NAME  # (100) longer names take a pax header in PAX_FORMAT
_USTAR_NUMBER = 8**11  # a 12-byte octal field holds less than this; a larger value takes a pax header


def member_header(name: str, size: int, mtime: float) -> bytes:
    """The tar header block(s) of a member: ustar, or pax + ustar for names ustar cannot hold."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.type = size, int(mtime), 0o644, tarfile.REGTYPE
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def padding(size: int) -> bytes:
    return b"\0" * (-size % BLOCK)


def member_bytes(name: str, size: int, mtime: float) -> int:
    """Bytes a member takes in a shard: header(s), data, padding. A member whose fields all fit a
    plain ustar header (an ASCII name of up to 100 characters, size and mtime below 8**11) has a
    one-block header, known without making it (the plan sizes every member: making each header
    twice was a third of a pack's time at 100,000 small files)."""
    if name.isascii() and len(name) <= _USTAR_NAME and 0 <= size < _USTAR_NUMBER and 0 <= int(mtime) < _USTAR_NUMBER:
        return BLOCK + size + (-size % BLOCK)
    return len(member_header(name, size, mtime)) + size + (-size % BLOCK)


def shard_id(files: Sequence[tuple[str, int, float]]) -> str:
    """Digest of a shard's member list ``(name, size, mtime)``: its content, named."""
    h = hashlib.sha256(f"{FORMAT}/{VERSION}\n".encode())
    for name, size, mtime in files:
        h.update(f"{name}\0{size}\0{mtime!r}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:20]


def shard_names(sid: str) -> tuple[str, str]:
    """``(shard file, index file)`` names of shard *sid*."""
    return f"shard-{sid}.tar", f"shard-{sid}.idx.json"


@dataclass(frozen=True)
class Index:
    """A shard's index: its members and the shard file's bytes, CRC-32 and stamped mtime (written
    after the shard, so a complete index means a complete shard; a re-run reuses it as is)."""

    shard: str
    bytes: int
    crc32: int
    mtime: float
    members: tuple[Member, ...]


_COLUMNS = ("name", "offset", "size", "src_size", "mtime", "crc32")
# what json.loads can raise on a damaged or crafted document (RecursionError: deeply nested brackets)
_BAD_JSON = (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8", "surrogateescape"))
    except RecursionError:
        raise ValueError("nested too deeply to be one of ours") from None


def _version(doc: dict[str, Any], what: str, where: str) -> None:
    v = doc.get("version")
    if v != VERSION:
        older = isinstance(v, int) and 0 < v < VERSION
        raise ShardError(
            f"{what} {where} is in format version {v!r}; this air_magics reads version {VERSION}: "
            + ("pack the source again to rewrite it" if older else "upgrade air_magics or pack the source again")
        )


def dump_index(ix: Index) -> bytes:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "shard": ix.shard,
        "bytes": ix.bytes,
        "crc32": ix.crc32,
        "mtime": ix.mtime,
        "columns": list(_COLUMNS),
        "members": [[m.name, m.offset, m.size, m.src_size, m.mtime, m.crc32] for m in ix.members],
    }
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogateescape")


def parse_index(raw: bytes, where: str, shard: str) -> Index:
    """Parse an index and check its layout: names, offsets in order on block boundaries, total bytes."""
    try:
        doc = _json(raw)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("shard") != shard:
            raise ValueError(f"it is not the index of {shard}")
    except _BAD_JSON as exc:
        raise ShardError(f"index {where} is corrupt ({exc}); pack the source again to rewrite it") from None
    _version(doc, "index", where)
    try:
        if tuple(doc["columns"]) != _COLUMNS:
            raise ValueError(f"columns {doc['columns']!r}")
        members = tuple(
            Member(str(n), int(o), int(s), int(ss), float(t), int(c)) for n, o, s, ss, t, c in doc["members"]
        )
        ix = Index(shard, int(doc["bytes"]), int(doc["crc32"]), float(doc["mtime"]), members)
    except _BAD_JSON as exc:
        raise ShardError(f"index {where} is corrupt ({exc}); pack the source again to rewrite it") from None
    end = 0
    for m in members:
        check_member_name(m.name, where)
        if not end + BLOCK <= m.offset <= end + MAX_HEADER or m.offset % BLOCK or m.size < 0 or m.size != m.src_size:
            raise ShardError(
                f"index {where}: member {m.name!r} at offset {m.offset} ({m.size} bytes) does not fit "
                f"the tar layout; the packed folder is damaged: pack the source again"
            )
        end = m.offset + m.size + (-m.size % BLOCK)
    if end + len(END_OF_ARCHIVE) != ix.bytes:
        raise ShardError(
            f"index {where}: members end at byte {end} but the shard is {ix.bytes} bytes; pack the source again"
        )
    return ix


def load_index(raw: bytes, where: str, shard: ShardInfo) -> list[Member]:
    """Parse an index and check it against its manifest entry (checksum, count, bytes)."""
    if zlib.crc32(raw) != shard.index_crc32:
        raise ShardError(
            f"index {where} does not match the checksum its manifest recorded (changed or damaged "
            f"on the volume); pack the source again"
        )
    ix = parse_index(raw, where, shard.name)
    members = list(ix.members)
    if len(members) != shard.members or (ix.bytes, ix.crc32) != (shard.bytes, shard.crc32):
        raise ShardError(
            f"index {where} lists {len(members)} members in {ix.bytes} bytes but the manifest says "
            f"{shard.members} members in {shard.bytes} bytes; pack the source again"
        )
    return members


def dump_manifest(m: Manifest) -> dict[str, Any]:
    return m.to_dict()


def load_manifest(raw: bytes, where: str) -> Manifest:
    """Parse and check a manifest (format, version, shard entries, totals)."""
    try:
        doc = _json(raw)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError("not an air-shards manifest")
    except _BAD_JSON as exc:
        raise ShardError(f"manifest {where} is corrupt ({exc}); pack the source again to rewrite it") from None
    _version(doc, "packed folder", where)
    try:
        shards = tuple(
            ShardInfo(
                str(s["name"]),
                str(s["index"]),
                int(s["members"]),
                int(s["bytes"]),
                int(s["data_bytes"]),
                int(s["crc32"]),
                float(s["mtime"]),
                int(s["index_crc32"]),
            )
            for s in doc["shards"]
        )
        m = Manifest(
            int(doc["generation"]),
            str(doc["source"]),
            int(doc["shard_size"]),
            str(doc["fingerprint"]),
            int(doc["files"]),
            int(doc["bytes"]),
            shards,
            float(doc.get("created", 0.0)),
        )
    except _BAD_JSON as exc:
        raise ShardError(f"manifest {where} is corrupt ({exc}); pack the source again to rewrite it") from None
    for s in shards:
        for n in (s.name, s.index):
            if "/" in n or not n.startswith("shard-"):
                raise ShardError(
                    f"manifest {where} names {n!r}, which is not a shard of this folder; pack the source again"
                )
    if sum(s.members for s in shards) != m.files or sum(s.data_bytes for s in shards) != m.bytes:
        raise ShardError(
            f"manifest {where}: its totals ({m.files} files, {m.bytes} bytes) disagree with its shards; "
            f"pack the source again"
        )
    return m


def legacy_manifest(raw: bytes) -> tuple[int, set[str]] | None:
    """``(generation, shard and index names)`` of a manifest an older air_magics wrote (an older
    format version), so pack can rewrite that folder in place; None for anything else."""
    try:
        doc = _json(raw)
        v = doc.get("version")
        if doc.get("format") != FORMAT or not isinstance(v, int) or not 0 < v < VERSION:
            return None
        names = {str(s[k]) for s in doc["shards"] for k in ("name", "index")}
        gen = int(doc["generation"])
    except _BAD_JSON:
        return None
    return gen, {n for n in names if "/" not in n and n.startswith("shard-")}
