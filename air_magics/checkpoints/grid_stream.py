"""torch's stream onto a checkpoint file: whole requests of the mount only, hashed as they leave.

Why a module of its own: it is the byte path of every file a direct save writes
(:mod:`.direct_write` opens the files and publishes them; this decides what each ``write`` of
``torch.save`` becomes on the mount).
"""

from __future__ import annotations

import io
import mmap
import os
from typing import Any, Protocol

from ..io.retry import retry_call
from . import scratch as chunks
from .digests import new_hasher

__all__ = ["CHUNK_BYTES", "GRID", "GridStream", "Target"]

GRID = 1 << 20  # a mount's largest request (FUSE: 1 MiB): writes leave in whole multiples of it
CHUNK_BYTES = 4 << 20  # what a stream holds at most between its writes (headers, partial requests)


class Target(Protocol):
    """The file a :class:`GridStream` writes into (an ``AtomicFile``, or a file written in place)."""

    def fileno(self) -> int: ...

    def close(self) -> None: ...

    def discard(self) -> None: ...


class GridStream(io.RawIOBase):
    """torch's stream onto an :class:`AtomicFile`: whole requests only, hashed as they leave.

    torch.save writes a few header bytes before each tensor's storage; through a plain buffered
    file each header is a request of its own to the volume and each storage an odd-sized tail. Here
    only whole multiples of ``GRID`` leave (a mount splits each into full-size requests): the bytes
    held from earlier writes go out together with the head of a large write in one ``writev`` (no
    copy of the storage's bytes), and what is left over (under ``GRID``) is held for the next. So a
    file takes about as many requests as a plain writer's, and a storage's bytes are copied only
    for its last partial megabyte."""

    def __init__(self, file: Target, chunk_bytes: int = CHUNK_BYTES) -> None:
        super().__init__()
        self.file = file
        self.hash = new_hasher()
        self.size = 0  # bytes accepted
        self.writes: list[tuple[int, int]] = []  # (file offset, bytes) of each write torch made
        self._chunk: mmap.mmap | None = chunks.take(chunk_bytes)
        self._view = memoryview(self._chunk)
        self._cap = chunk_bytes
        self._fill = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        src = memoryview(b).cast("B")
        n = src.nbytes
        self.writes.append((self.size, n))
        total = self._fill + n
        if n >= GRID or total > self._cap:  # whole requests leave now, held bytes first
            head = total - total % GRID - self._fill
            if head > 0:
                self._put(self._view[: self._fill], src[:head])
                self._fill = 0
                src = src[head:]
            elif self._fill:  # (more held than GRID can only be a full buffer)
                self._drain()
        take = src.nbytes
        if take:  # a header, or a storage's last partial request: held for the next write
            if self._fill + take > self._cap:
                self._drain()
            self._view[self._fill : self._fill + take] = src
            self._fill += take
        self.size += n
        return n

    def _drain(self) -> None:
        self._put(self._view[: self._fill], memoryview(b""))
        self._fill = 0

    def _put(self, held: memoryview, data: memoryview) -> None:
        hash_update = self.hash.update
        hash_update(held)
        hash_update(data)
        fd = self.file.fileno()
        while held or data:  # a write may be short; a transient error is retried
            parts = [p for p in (held, data) if p]
            done = retry_call(lambda parts=parts: os.writev(fd, parts))
            k = min(done, held.nbytes)
            held, data = held[k:], data[done - k :]

    def flush(self) -> None:
        """Nothing: ``torch.save`` flushes after every item, and a partial chunk written then would
        be an extra request, and every chunk after it would start off the mount's request grid
        (448 writes of ~560 KiB for a 256 MB save instead of ~256 of 1 MiB). The bytes still held
        are written by :meth:`close` (and by :meth:`fileno`, before an fsync)."""

    def _write_held(self) -> None:
        if self._fill and not self.closed:
            self._drain()

    def tell(self) -> int:
        return self.size

    def fileno(self) -> int:
        self._write_held()  # for ``sync_files``: what is fsynced is everything written
        return self.file.fileno()

    def discard(self) -> None:
        self.file.discard()
        self._fill = 0
        self._let_go()
        super().close()

    def _let_go(self) -> None:
        if self._chunk is not None:
            self._view.release()
            chunks.give(self._chunk)
            self._chunk = None

    def close(self) -> None:
        if self.closed:
            return
        try:
            if self.size:
                self._write_held()
                self.file.close()  # publishes: temp name -> name
            else:  # torch opens one file per writer thread, items or not: an empty one is not kept
                self.file.discard()
        except BaseException:
            self.file.discard()
            raise
        finally:
            self._let_go()
            super().close()
