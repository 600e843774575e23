"""Checkpoint files read straight from a mounted volume into memory, hashed while they arrive.

Why: a restore through the cache copies each file to local disk, hashes the copy, then torch reads
the copy: every byte crosses the disk twice. Here a file is read once, in whole chunks, into one
buffer (its checksum computed chunk by chunk as they arrive), verified, and torch reads the buffer
(:class:`MemoryFile`); the buffer is dropped as soon as the file's items are in their tensors.
"""

from __future__ import annotations

import io
import os
from typing import Any

from ..io.confined import open_read
from ..io.retry import retry_call
from ..volumes.location import Location
from ..volumes.object_io import read_object
from . import scratch as chunks
from .digests import ALGORITHM, new_hasher

__all__ = ["MemoryFile", "RandomAccessReader", "read_file", "read_remote", "CHUNK_BYTES"]

CHUNK_BYTES = 4 << 20  # what one read asks of the mount (it splits it into its own requests)


class RandomAccessReader(io.RawIOBase):
    """A read-only, seekable file of *length* bytes whose :meth:`read_at` fills a buffer from an
    offset: what ``torch.load`` and DCP's views of a file need, over bytes already in memory."""

    def __init__(self, length: int) -> None:
        super().__init__()
        self.length = length
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self.length}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, b: Any) -> int:
        out = memoryview(b).cast("B")
        n = max(0, min(out.nbytes, self.length - self._pos))
        self.read_at(self._pos, out[:n])
        self._pos += n
        return n

    def read_at(self, at: int, out: memoryview) -> None:
        raise NotImplementedError


class MemoryFile(RandomAccessReader):
    """A read-only, seekable file over a buffer (no copy of it), for ``torch.load`` and DCP's views."""

    def __init__(self, buffer: Any) -> None:
        self._view = memoryview(buffer).cast("B")
        super().__init__(self._view.nbytes)

    def read_at(self, at: int, out: memoryview) -> None:
        out[:] = self._view[at : at + out.nbytes]

    def close(self) -> None:
        self._view.release()
        super().close()


def read_file(
    loc: Location, *, keep: bool = True, digest: str | None = ALGORITHM
) -> tuple[bytearray | None, dict[str, Any]]:
    """Read the file at *loc* (a local or mounted path, confined to its root) in whole chunks.

    Returns its bytes (``None`` with ``keep=False``: only hashed, e.g. to verify) and
    ``{"size", <digest>: hex}`` of what was read, hashed with algorithm *digest* (``{"size"}``
    alone for ``digest=None``). Transient errors of the volume are retried."""
    fd, st = open_read(loc.path, loc.root)
    with open(fd, "rb", buffering=0, closefd=True) as f:
        h = new_hasher(digest or ALGORITHM)
        size, total = 0, st.st_size  # a file that changes meanwhile fails its checksum
        buf = bytearray(total) if keep else None
        with memoryview(buf) if buf is not None else chunks.borrowed(min(total, CHUNK_BYTES)) as view:
            while size < total:
                with view[size : size + CHUNK_BYTES] if keep else view[: min(CHUNK_BYTES, total - size)] as window:
                    n = retry_call(lambda w=window: f.readinto(w))
                    if digest:
                        with window[:n] as got:
                            h.update(got)  # releases the GIL for more than 2 KiB
                if not n:
                    break
                size += n
    if keep and size < total:  # shorter than it said: what was read is what is verified
        del buf[size:]
    return (buf if keep else None), ({"size": size, digest: h.hexdigest()} if digest else {"size": size})


def read_remote(
    loc: Location, size: int | None, *, keep: bool = True, digest: str | None = ALGORITHM
) -> tuple[bytearray | None, dict[str, Any]]:
    """:func:`read_file` for a file on an object store (*loc* on an fsspec filesystem): read into one
    buffer, in parallel ranges when its recorded *size* is known and large (no HEAD first), then hashed."""
    buf = read_object(loc.fs, loc.path, size)
    got: dict[str, Any] = {"size": len(buf)}
    if digest:
        h = new_hasher(digest)
        with memoryview(buf) as view:
            h.update(view)  # releases the GIL for more than 2 KiB
        got[digest] = h.hexdigest()
    return (buf if keep else None), got
