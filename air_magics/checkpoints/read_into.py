"""A checkpoint file read from a mounted volume with each tensor's bytes landing in its destination.

Why (issue 34): read whole into a buffer, a 256 MB restore allocated and faulted in 256 MB, then
copied every tensor out of it once more; 8 plain readers reading into the tensors took 0.32 s where
that took 0.53. When the writer recorded where each tensor's data lies in its file (the manifest's
``items``: :func:`air_magics.checkpoints.tensor_layout.data_layout`), :func:`read_placed` reads the file
front to back once, each tensor's data straight into the destination's memory, every other byte
(the items' zip headers, objects, anything not placed) into small kept pieces, and hashes all of
it in file order. The whole file is verified against its checksum before the load goes on; a file
that fails is read once more, then reported corrupt (the destinations may then hold its bytes: the
load fails, as a load from a corrupt file always does).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from ..io.confined import open_read
from ..io.retry import retry_call
from ..volumes.location import Location
from . import scratch as chunks
from .digests import new_hasher
from .direct_read import CHUNK_BYTES, RandomAccessReader

__all__ = ["Kept", "KeptFile", "read_placed"]


class Kept:
    """The bytes of one file that were kept, by file offset (zeros read back where none were)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.starts: list[int] = []
        self.pieces: list[bytearray] = []

    def add(self, start: int, piece: bytearray) -> None:
        self.starts.append(start)  # added in file order
        self.pieces.append(piece)

    def piece(self, start: int, length: int) -> memoryview | None:
        """The kept bytes ``[start, start + length)`` when one piece holds exactly them."""
        i = bisect_right(self.starts, start) - 1
        if i >= 0 and self.starts[i] == start and len(self.pieces[i]) == length:
            return memoryview(self.pieces[i])
        return None

    def copy_into(self, at: int, out: memoryview) -> None:
        """Bytes ``[at, at + len(out))`` into *out*: kept bytes where there are some, zeros elsewhere."""
        out[:] = bytes(out.nbytes)
        i = max(0, bisect_right(self.starts, at) - 1)
        end = at + out.nbytes
        while i < len(self.starts) and self.starts[i] < end:
            s, p = self.starts[i], self.pieces[i]
            lo, hi = max(s, at), min(s + len(p), end)
            if lo < hi:
                out[lo - at : hi - at] = memoryview(p)[lo - s : hi - s]
            i += 1


class KeptFile(RandomAccessReader):
    """A read-only, seekable view of ``[base, base + length)`` of a :class:`Kept` file: what torch's
    own reading opens for the items that were kept (objects, unusual tensors)."""

    def __init__(self, kept: Kept, base: int = 0, length: int | None = None) -> None:
        super().__init__(kept.size - base if length is None else length)
        self.kept, self.base = kept, base

    def read_at(self, at: int, out: memoryview) -> None:
        self.kept.copy_into(self.base + at, out)


def read_placed(
    loc: Location, place: list[tuple[int, memoryview]], keep: list[tuple[int, int]], algorithm: str
) -> tuple[Kept, dict[str, Any]]:
    """Read the file at *loc* front to back once: the bytes at each ``(offset, view)`` of *place*
    straight into *view*, each ``[start, end)`` of *keep* into a kept piece, the rest only hashed.

    Returns the kept pieces and ``{"size", <algorithm>: hex}`` of every byte read, in file order.
    The regions must not overlap. Transient errors of the volume are retried."""
    fd, st = open_read(loc.path, loc.root)
    total = st.st_size
    h = new_hasher(algorithm)
    kept = Kept(total)
    regions = sorted(
        [(at, at + v.nbytes, v) for at, v in place if v.nbytes] + [(a, b, None) for a, b in keep if b > a],
        key=lambda r: r[0],
    )
    pos = 0
    # the skipped bytes' scratch: a kept chunk, touched only as far as headers reach (see .chunks)
    with open(fd, "rb", buffering=0, closefd=True) as f, chunks.borrowed(max(1, min(CHUNK_BYTES, total))) as scratch:

        def fill(view: memoryview) -> int:
            """Read into all of *view* (less at the end of the file), hashing as the bytes arrive."""
            got = 0
            while got < view.nbytes:
                window = view[got : got + CHUNK_BYTES]
                n = retry_call(lambda w=window: f.readinto(w))
                if not n:
                    break
                h.update(window[:n])
                got += n
            return got

        def skip_to(end: int) -> None:
            nonlocal pos
            while pos < end:
                n = fill(scratch[: min(scratch.nbytes, end - pos)])
                if not n:
                    return
                pos += n

        for start, end, view in regions:
            skip_to(min(start, total))
            if pos != start or pos >= total:  # the file is shorter than the checkpoint says
                break
            if view is None:
                piece = bytearray(min(end, total) - pos)
                n = fill(memoryview(piece))
                kept.add(pos, piece if n == len(piece) else piece[:n])
            else:
                n = fill(view[: min(end, total) - pos])
            pos += n
        skip_to(total)
    return kept, {"size": pos, algorithm: h.hexdigest()}
