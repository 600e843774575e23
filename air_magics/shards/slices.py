"""A member handed from a DataLoader worker to the training loop by its place, not by its bytes.

Why: with ``output="bytes"`` every member used to be pickled in the worker, pushed through a pipe
and unpickled in the loop's process: 440 MB for 30,000 x 15 KiB members, which made the hand-over
the slowest stage of a packed epoch once its shards were in. A :class:`MemberSlice` names the cached
shard file (and its inode) a worker verified the member in, and the loop's :class:`SliceMaps`
copies the bytes out of its own read-only map of that file: one copy out of the page cache.

Integrity: the loop maps only the file the worker verified the member in, found by its name and
its inode. The finished cached shard (the cache slot) is only ever made by renaming a complete,
verified fetch and is named after its content, and the worker's own map keeps that inode alive
while its members are handed out (so the number cannot be reused by another file meanwhile): its
bytes are taken as they are (a 150 KiB member is then one 7 us copy, where its CRC-32 cost 38 us).
A shard still being fetched (its ``.part`` file) has each member's CRC-32 checked here. A member
whose file is gone or replaced since, or whose bytes do not match, is read again through the
dataset (*fallback*), which fetches and verifies as usual: no byte that does not match the index
is handed out.
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["MemberSlice", "SliceMaps"]

_MAPS = 16  # shard maps the loop keeps open (a shuffle window and its read-ahead)
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class MemberSlice(NamedTuple):
    """Member bytes ``[offset, offset + size)`` of the cached shard *path* (inode *ino*), verified
    by the worker that made it; *crc32* is the member's, *item* its dataset index."""

    path: str
    ino: int
    offset: int
    size: int
    crc32: int
    item: int


class SliceMaps:
    """The loop's read-only maps of cached shards (a few, by inode) and the copy out of them.
    *fallback(item)* reads an item whose file is gone or replaced through the dataset."""

    def __init__(self, fallback: Callable[[int], bytes]) -> None:
        self._fallback = fallback
        self._maps: OrderedDict[int, tuple[mmap.mmap, bool]] = OrderedDict()  # by inode: (map, finished file)

    def read(self, s: MemberSlice) -> bytes:
        """The member's bytes (see the module docstring for what is checked)."""
        got = self._maps.get(s.ino)
        if got is None:
            got = self._open(s)
            if got is None:
                return self._fallback(s.item)
        mm, finished = got
        data = mm[s.offset : s.offset + s.size]
        if len(data) != s.size or (not finished and zlib.crc32(data) != s.crc32):
            return self._fallback(s.item)
        return data

    def _open(self, s: MemberSlice) -> tuple[mmap.mmap, bool] | None:
        for path, finished in ((s.path, True), (f"{s.path}.part", False)):
            try:
                fd = os.open(path, _FLAGS)
            except OSError:
                continue
            try:
                st = os.fstat(fd)
                if st.st_ino != s.ino or st.st_size < s.offset + s.size:
                    continue
                got = self._maps[s.ino] = (mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ), finished)
            finally:
                os.close(fd)
            while len(self._maps) > _MAPS:
                self._maps.popitem(last=False)[1][0].close()
            return got
        return None

    def close(self) -> None:
        """Let go of every map (the loop's epoch ended)."""
        while self._maps:
            self._maps.popitem()[1][0].close()
