"""A read-only file object over one member's bytes in a mapped shard (what ``MemberRef.open`` wraps).

Seek, tell, read, readinto and readall work on the member's byte range only; ``name`` is the
member's name, so decoders that guess a format from it (PIL) do. Nothing is copied until it is read.
"""

from __future__ import annotations

import io
import mmap

__all__ = ["MemberFile"]


class MemberFile(io.RawIOBase):
    """A read-only file over one member's bytes in a mapped shard (``name``: the member's name)."""

    def __init__(self, mm: mmap.mmap, offset: int, size: int, name: str) -> None:
        super().__init__()
        self._mm, self._off, self._size, self._pos = mm, offset, size, 0
        self.name = name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.closed:
            raise ValueError("I/O operation on closed file")
        n = min(len(b), self._size - self._pos)
        if n <= 0:
            return 0
        start = self._off + self._pos
        memoryview(b).cast("B")[:n] = self._mm[start : start + n]
        self._pos += n
        return n

    def readall(self) -> bytes:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        start, self._pos = self._off + self._pos, max(self._pos, self._size)
        return self._mm[start : self._off + self._size] if start < self._off + self._size else b""

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + pos < 0:
            raise ValueError(f"negative seek position {base + pos}")
        self._pos = base + pos
        return self._pos

    def tell(self) -> int:
        return self._pos

    def __repr__(self) -> str:
        return f"<MemberFile {self.name!r} {self._size} bytes>"
