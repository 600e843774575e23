"""Members of a shard that found no room in the cache: read one at a time from the volume, verified.

Why: a shard is fetched whole into its cache slot, claimed within the cache's limit first. When the
cache is at its limit with entries in use, a whole copy past the cache (in the process's overflow
folder) took disk that no budget counted: packed data twice the limit peaked at 2.0x the limit on
disk, and shards of 1 GiB under a few-GiB limit could not be bounded at all (issue 36). So such a
shard's members are served the way a raw folder's files are served past a full cache: each member
asked for is read from the shard on the volume by range (its tar header and its data in one read),
checked like any member served (header and CRC-32), and handed out as bytes (nothing on disk) or,
as a path, through the cache's overflow window (member-sized files, within the windows' bytes:
:meth:`~air_magics.cache.claims.Claims.overflow_file`). The claim is tried again every
``RETRY_CLAIM`` hand-outs, so a shard is cached whole again once the cache has room.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..io.atomic import write_atomic
from ..io.retry import retry_call
from .verify import header_start, verify_member

if TYPE_CHECKING:
    from ..cache import FileCache
    from ..io.locks import ProcessFileLock
    from .shard_source import ShardSource


class _RefusedMark(Protocol):
    no_room: int  # the process's hand-out count when the shard's claim found no room (-1: none refused)


__all__ = ["read_member", "member_path", "claim_or_go_direct", "RETRY_CLAIM", "MEMBER_MTIME"]

RETRY_CLAIM = 64  # hand-outs of a process before it tries again to claim a shard that found no room
MEMBER_MTIME = 1.0  # stamped on a member's overflow file: its key names the shard's content (never stale)


def read_member(source: ShardSource, i: int, j: int, *, sized: bool = True) -> bytes:
    """Member *j* (offset order) of shard *i*, read from the volume and verified; a member that
    does not match its index is a :class:`~air_magics.errors.ShardError` naming it. *sized* False:
    no size request first on an object store (the member is verified all the same)."""
    members = source.shard_members[i]
    m = members[j]
    start = header_start(members, j)

    def once() -> bytes:
        read, close = source.opener(i, sized=sized)  # (the shard's size is checked at the open)
        try:
            return read(start, None, m.offset + m.size - start)  # type: ignore[return-value]
        finally:
            close()

    raw = memoryview(retry_call(once))
    head = m.offset - start
    verify_member(str(source.shard_path(i)), m, bytes(raw[:head]), raw[head:])
    return bytes(raw[head:])


def member_path(source: ShardSource, cache: FileCache, i: int, j: int) -> str:
    """A local path holding member *j* of shard *i*, in the cache's overflow window (see the
    module): the window's copy when it still holds one, else read from the volume and written there."""
    m = source.shard_members[i][j]
    key = f"{source.cache_key(i, extracted=True)}/{m.name}"

    def write(dest: str) -> int:
        data = read_member(source, i, j)
        write_atomic(dest, data, root=str(cache.claims.overflow_folder()), mtime=MEMBER_MTIME)
        return len(data)

    return cache.claims.overflow_file(key, m.size, MEMBER_MTIME, write)


def claim_or_go_direct(
    cache: FileCache, key: str, size: int, lock: ProcessFileLock, st: _RefusedMark, handed: int
) -> bool:
    """Claim room for a shard's copy in the cache (True: fetch it, under *lock*); with none, the
    shard's fetch lock is given back and *st* marked refused at hand-out count *handed* (False: its
    members come from the volume, and the claim is tried again ``RETRY_CLAIM`` hand-outs later)."""
    if cache.claims.claim(key, size) is not None:
        st.no_room = -1
        return True
    lock.release()
    lock.close()
    st.no_room = handed
    return False
