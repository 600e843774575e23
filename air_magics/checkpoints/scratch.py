"""Scratch chunks for checkpoint streams, kept between streams and saves.

Why not ``bytearray(n)``: it zero-fills every page at once, and fresh pages are what a first touch
costs (on a VM, 400-600 MB/s once the process has freed memory): a save's 8-10 writer streams of
4 MiB each were ~30 ms of CPU in every save, and a restore's per-file scratch the same. A chunk
here is a private anonymous mapping whose pages are touched only as far as bytes are held
(headers, a storage's last partial MiB, skipped bytes), and a kept chunk is not touched again.
Private: a forked child's writes stay its own.
"""

from __future__ import annotations

import mmap
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["POOLED_BYTES", "borrowed", "give", "take"]

POOLED_BYTES = 4 << 20  # the size of every kept chunk (a larger ask gets a mapping of its own)
_SPARE: deque[mmap.mmap] = deque()  # chunks given back, for the next take (append/pop: atomic, no lock)
_SPARE_MAX = 16


def take(size: int = POOLED_BYTES) -> mmap.mmap:
    """A chunk of at least *size* bytes (exactly ``POOLED_BYTES`` when *size* fits in it); hand it
    back with :func:`give` once no view of it is left."""
    if size <= POOLED_BYTES:
        try:
            return _SPARE.pop()
        except IndexError:
            size = POOLED_BYTES
    return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


def give(chunk: mmap.mmap) -> None:
    """Keep *chunk* for the next :func:`take` (up to 16 kept; a larger one is unmapped)."""
    if len(chunk) == POOLED_BYTES and len(_SPARE) < _SPARE_MAX:
        _SPARE.append(chunk)
    else:
        chunk.close()


@contextmanager
def borrowed(size: int) -> Iterator[memoryview]:
    """A writable view of *size* bytes of a chunk (not zeroed), for the block's duration."""
    chunk = take(size)
    view = memoryview(chunk)[:size]
    try:
        yield view
    finally:
        view.release()
        give(chunk)
