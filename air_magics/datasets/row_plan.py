"""Which rows of a table go to which stream, and what is left after a checkpoint. Pure, no I/O.

The table is a list of *units* (Parquet row groups) with a known number of rows each (after the
row filter). An epoch orders the units (sorted, or a seeded shuffle per epoch: row-group
granularity), concatenates them and cuts that sequence into one contiguous slice per stream of the
grid (slice sizes differ by at most one row, so no stream is empty while rows >= streams; a row
group is cut where a slice ends). A stream then reads its slice in *windows* of ``window`` rows and,
with shuffling on, permutes each window (seeded by seed, epoch, segment, stream, window): a bounded
in-memory shuffle on top of the row-group order.

Resume reuses :mod:`air_magics.datasets.epoch_order`'s :class:`EpochState` with *rows* as the unit: each
segment records the grid and how many rows each stream delivered. Because the output of a stream
is a deterministic function of its slice, the delivered rows follow from the counts: whole windows,
plus the first ``r`` positions of the partly delivered window's permutation. What is left (in
stream order) is cut anew over the next grid.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .epoch_order import EpochState, Grid, OrderStateError

__all__ = ["Piece", "epoch_pieces", "split", "window_perm", "remaining_after", "stream_plan", "total"]


@dataclass(frozen=True)
class Piece:
    """Rows ``lo..hi-1`` (counted after the filter) of unit ``unit``."""

    unit: int
    lo: int
    hi: int

    @property
    def rows(self) -> int:
        return self.hi - self.lo


def total(pieces: Sequence[Piece]) -> int:
    return sum(p.rows for p in pieces)


def epoch_pieces(unit_rows: Sequence[int], *, seed: int, epoch: int, shuffle: bool) -> list[Piece]:
    """Every unit with rows, whole, in this epoch's order (a seeded shuffle of the units)."""
    order = list(range(len(unit_rows)))
    if shuffle:
        random.Random(f"air-table-units:{seed}:{epoch}").shuffle(order)
    return [Piece(u, 0, unit_rows[u]) for u in order if unit_rows[u] > 0]


def take_range(pieces: Sequence[Piece], start: int, stop: int) -> list[Piece]:
    """The rows at positions ``start..stop-1`` of the concatenation of *pieces*, as pieces."""
    out: list[Piece] = []
    pos = 0
    for p in pieces:
        a, b = max(start, pos), min(stop, pos + p.rows)
        if a < b:
            out.append(Piece(p.unit, p.lo + a - pos, p.lo + b - pos))
        pos += p.rows
        if pos >= stop:
            break
    return out


def split(pieces: Sequence[Piece], streams: int) -> list[list[Piece]]:
    """Contiguous slices of *pieces* for *streams* streams; their sizes differ by at most one row."""
    n = total(pieces)
    q, r = divmod(n, streams)
    out, start = [], 0
    for s in range(streams):
        size = q + (1 if s < r else 0)
        out.append(take_range(pieces, start, start + size))
        start += size
    return out


def window_perm(size: int, *, shuffle: bool, key: tuple[int, ...]) -> Any:
    """The order in which a window's *size* rows are delivered (a NumPy int64 array): identity, or a
    shuffle seeded by *key* (stable across processes and platforms)."""
    import numpy as np

    if not shuffle:
        return np.arange(size, dtype=np.int64)
    digest = hashlib.sha256(("air-table-window:" + ":".join(map(str, key))).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little")).permutation(size)


def _runs(positions: Any) -> list[tuple[int, int]]:
    """Positions (a NumPy array) as sorted (start, stop) runs of consecutive values."""
    import numpy as np

    p = np.sort(np.asarray(positions, dtype=np.int64))
    if p.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(p) != 1) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [p.size]))
    return [(int(p[a]), int(p[b - 1]) + 1) for a, b in zip(starts, stops, strict=True)]


def stream_left(
    pieces: Sequence[Piece], delivered: int, *, window: int, shuffle: bool, key: tuple[int, ...]
) -> list[Piece]:
    """What a stream with slice *pieces* has not delivered after *delivered* rows, in slice order."""
    n = total(pieces)
    if delivered > n:
        raise OrderStateError(
            f"dataset state says a stream delivered {delivered} rows but it only had {n}; the state belongs to other data"
        )
    w, r = divmod(delivered, window)
    start = w * window
    size = min(window, n - start)
    out: list[Piece] = []
    if r and size > 0:
        perm = window_perm(size, shuffle=shuffle, key=(*key, w))
        for a, b in _runs(perm[r:] + start):
            out += take_range(pieces, a, b)
        start += size
    return out + take_range(pieces, start, n)


def _key(state: EpochState, segment: int, stream: int) -> tuple[int, ...]:
    return (state.seed, state.epoch, segment, stream)


def remaining_after(state: EpochState, unit_rows: Sequence[int], window: int, upto: int | None = None) -> list[Piece]:
    """The epoch's rows minus what the first *upto* segments (default all) delivered."""
    left = epoch_pieces(unit_rows, seed=state.seed, epoch=state.epoch, shuffle=state.shuffle)
    segments = state.segments if upto is None else state.segments[:upto]
    for i, (grid, counts) in enumerate(segments):
        if any(c < 0 for c in counts):
            raise OrderStateError(
                f"dataset state lacks the progress of some streams of its {grid.world_size} x {grid.num_workers} grid "
                f"(saved without a process group?); resume on the same grid, or call state_dict() on every rank "
                f"with torch.distributed initialised"
            )
        slices = split(left, grid.streams)
        left = []
        for s, c in enumerate(counts):
            left += stream_left(slices[s], c, window=window, shuffle=state.shuffle, key=_key(state, i, s))
    return left


@dataclass(frozen=True)
class StreamPlan:
    """One stream's work for this run: its slice, where in it to start, and its shuffle key."""

    pieces: list[Piece]
    skip: int  # rows of the slice's output already delivered (same grid continued)
    key: tuple[int, ...]

    @property
    def rows(self) -> int:
        return total(self.pieces) - self.skip


def stream_plan(state: EpochState, unit_rows: Sequence[int], window: int, grid: Grid, stream: int) -> StreamPlan:
    """What stream *stream* of *grid* delivers from where *state* left off.

    When the last segment is on this same grid the stream continues its own output (same slice,
    same windows), skipping what it delivered; otherwise the remaining rows are cut over *grid*
    as a new segment.
    """
    segs = state.segments
    if segs and segs[-1][0] == grid:
        counts = segs[-1][1]
        if counts[stream] < 0:
            raise OrderStateError(
                f"dataset state has no progress for stream {stream}; load the state saved by this rank"
            )
        mine = split(remaining_after(state, unit_rows, window, upto=len(segs) - 1), grid.streams)[stream]
        if counts[stream] > total(mine):
            raise OrderStateError(
                f"dataset state says stream {stream} delivered {counts[stream]} rows but it only had {total(mine)}; "
                f"the state belongs to other data"
            )
        return StreamPlan(mine, counts[stream], _key(state, len(segs) - 1, stream))
    mine = split(remaining_after(state, unit_rows, window), grid.streams)[stream]
    return StreamPlan(mine, 0, _key(state, len(segs), stream))
