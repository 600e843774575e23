"""Which file goes to which stream, and what is left after a checkpoint. Pure functions, no I/O.

A *stream* is one (rank, worker) pair of a grid of ``world_size x num_workers`` streams; stream
``s = rank * num_workers + worker``. An epoch's order is the sorted file list, or a seeded shuffle
that changes with the epoch. It is dealt round-robin over the streams, so counts differ by at most
one and every file goes to exactly one stream.

Resuming: a checkpoint records, for the grid in force, how many items each stream *delivered*.
Because dealing is deterministic, the delivered set follows from (seed, epoch, grid, counts). A
resumed run deals the *remaining* files, in epoch order, over its own grid, which may differ. To
survive several resumes within one epoch the state keeps the history of (grid, counts) segments;
each segment removes its delivered items from what the previous ones left.

The shuffle (``shuffler``): ``"mt19937"``, numpy's legacy ``RandomState`` permutation (its stream
is frozen across numpy versions, so a saved state resumes the same order after an upgrade; 85 ms
for a million files), for every state made now; ``"random"``, Python's ``random.shuffle`` (0.5 s
for a million), for states saved before it (no ``shuffler`` key), so they resume exactly.
"""

from __future__ import annotations

import hashlib
import mmap
import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import AirError

__all__ = [
    "SHUFFLER",
    "Grid",
    "EpochState",
    "epoch_order",
    "epoch_permutation",
    "stream_order",
    "deal",
    "stream_index",
    "remaining_order",
    "stream_items",
    "with_progress",
    "OrderStateError",
]


SHUFFLER = "mt19937"  # what a new epoch's shuffle uses (see the module docstring)
_SHUFFLERS = ("mt19937", "random")
_FILL = 1 << 13  # indices written per block while a permutation is made


class OrderStateError(AirError, ValueError):
    """A saved dataset state is corrupt or belongs to other data."""


@dataclass(frozen=True)
class Grid:
    """``world_size`` ranks times ``num_workers`` streams each (``num_workers=0`` counts as 1)."""

    world_size: int = 1
    num_workers: int = 1

    def __post_init__(self) -> None:
        if self.world_size < 1 or self.num_workers < 1:
            raise ValueError(
                f"grid needs world_size >= 1 and num_workers >= 1, got {self.world_size} x {self.num_workers}"
            )

    @property
    def streams(self) -> int:
        return self.world_size * self.num_workers


def stream_index(grid: Grid, rank: int, worker: int) -> int:
    if not (0 <= rank < grid.world_size and 0 <= worker < grid.num_workers):
        raise ValueError(f"rank {rank} / worker {worker} outside grid {grid.world_size} x {grid.num_workers}")
    return rank * grid.num_workers + worker


def epoch_order(
    n: int,
    *,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = False,
    groups: Sequence[int] | None = None,
    shuffler: str = SHUFFLER,
) -> list[int]:
    """Indices ``0..n-1`` in this epoch's order: identity, or a shuffle seeded by (seed, epoch).

    ``groups`` (item -> group, e.g. the shard each member of a packed folder lives in): the shuffle
    is shard-aware (:func:`air_magics.shards.shard_order.windowed_order`: groups shuffled, items shuffled
    within blocks of a few groups), so streams read a few shards at a time instead of all at once.
    """
    if shuffle and groups is not None:
        from ..shards.shard_order import windowed_order

        if len(groups) != n:
            raise OrderStateError(f"{len(groups)} group ids for {n} items: give one per item")
        return windowed_order(groups, seed=seed, epoch=epoch)
    if not shuffle:
        return list(range(n))
    if shuffler == "mt19937":
        return epoch_permutation(n, seed=seed, epoch=epoch).tolist()
    if shuffler != "random":
        raise OrderStateError(f"shuffler {shuffler!r} is unknown: use one of {_SHUFFLERS}")
    order = list(range(n))
    random.Random(f"air-order:{seed}:{epoch}").shuffle(order)
    return order


def epoch_permutation(n: int, *, seed: int = 0, epoch: int = 0, stream: int = 0, streams: int = 1) -> array:
    """The ``"mt19937"`` shuffle of ``0..n-1`` (numpy's legacy ``RandomState(words).permutation(n)``),
    or stream *stream*'s share of it (``[stream::streams]``), as one ``array`` of 4 B an index
    (8 B from 2**31 files). Why so: a DataLoader worker of a million-file epoch keeps its share and
    nothing else. The whole permutation is made in place in a mapping of its own, unmapped at the
    end (numpy's copies of it, freed into the heap, stayed in each worker: ~24 B a listed file)."""
    import numpy as np

    words = np.frombuffer(hashlib.sha256(f"air-order:{seed}:{epoch}".encode()).digest(), dtype=np.uint32)
    share = len(range(stream, n, streams))
    out = array("i" if n < 2**31 else "q", [0]) * share
    if not n:
        return out
    buf = mmap.mmap(-1, n * 8)
    try:
        perm = np.frombuffer(buf, dtype=np.int64)
        for i in range(0, n, _FILL):  # arange(n), a block at a time (no second array of n)
            perm[i : i + _FILL] = np.arange(i, min(n, i + _FILL))
        np.random.RandomState(words).shuffle(perm)  # what permutation(n) does to its arange
        view = np.frombuffer(out, dtype=np.int32 if out.typecode == "i" else np.int64)
        view[:] = perm[stream::streams]
        del perm, view  # (the mapping closes only once no view of it is left)
    finally:
        buf.close()
    return out


def stream_order(
    n: int,
    stream: int,
    streams: int,
    *,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = False,
    groups: Sequence[int] | None = None,
    shuffler: str = SHUFFLER,
) -> Sequence[int]:
    """Stream *stream*'s items of a fresh epoch, ``epoch_order(...)[stream::streams]``, kept
    compact: a ``range`` in name order, the stream's share of :func:`epoch_permutation` for the
    ``"mt19937"`` shuffle (a list of a million int objects per stream grew each DataLoader worker
    by ~45 B a listed file)."""
    if not shuffle:
        return range(n)[stream::streams]
    if groups is None and shuffler == "mt19937":
        return epoch_permutation(n, seed=seed, epoch=epoch, stream=stream, streams=streams)
    return epoch_order(n, seed=seed, epoch=epoch, shuffle=shuffle, groups=groups, shuffler=shuffler)[stream::streams]


def deal(order: Sequence[int], streams: int) -> list[list[int]]:
    """Round-robin split of *order* over *streams*: stream ``s`` gets ``order[s::streams]``."""
    return [list(order[s::streams]) for s in range(streams)]


@dataclass
class EpochState:
    """Progress of one epoch: the (grid, delivered counts) segments so far."""

    seed: int
    epoch: int
    n: int
    shuffle: bool
    fingerprint: str = ""
    segments: list[tuple[Grid, list[int]]] = field(default_factory=list)
    groups: Sequence[int] | None = field(default=None, repr=False, compare=False)  # see epoch_order; not saved
    shuffler: str = SHUFFLER  # how the epoch was shuffled (see the module docstring)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "epoch": self.epoch,
            "n": self.n,
            "shuffle": self.shuffle,
            "fingerprint": self.fingerprint,
            "shuffler": self.shuffler,
            "segments": [
                {"world_size": g.world_size, "num_workers": g.num_workers, "delivered": list(c)}
                for g, c in self.segments
            ],
        }

    @classmethod
    def from_dict(cls, d: Any) -> EpochState:
        try:
            segs = [
                (Grid(int(s["world_size"]), int(s["num_workers"])), [int(x) for x in s["delivered"]])
                for s in d["segments"]
            ]
            st = cls(
                int(d["seed"]),
                int(d["epoch"]),
                int(d["n"]),
                bool(d["shuffle"]),
                str(d.get("fingerprint", "")),
                segs,
                shuffler=str(d.get("shuffler", "random")),  # saved before the key existed: Python's shuffle
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise OrderStateError(
                f"dataset state is corrupt ({type(exc).__name__}: {exc}); pass a dict from state_dict()"
            ) from None
        for g, counts in st.segments:
            if len(counts) != g.streams or any(c < -1 for c in counts):
                raise OrderStateError(
                    f"dataset state is corrupt: {len(counts)} counts for a {g.world_size} x {g.num_workers} grid"
                )
        if st.shuffler not in _SHUFFLERS:
            raise OrderStateError(f"dataset state names shuffler {st.shuffler!r}; this version knows {_SHUFFLERS}")
        return st


def remaining_order(state: EpochState, upto: int | None = None) -> list[int]:
    """Epoch order minus everything the first *upto* (default all) segments delivered, order kept."""
    left = epoch_order(
        state.n,
        seed=state.seed,
        epoch=state.epoch,
        shuffle=state.shuffle,
        groups=state.groups,
        shuffler=state.shuffler,
    )
    for grid, counts in state.segments[:upto]:
        if any(c < 0 for c in counts):
            raise OrderStateError(
                f"dataset state lacks the progress of some streams of its {grid.world_size} x {grid.num_workers} grid "
                f"(saved without a process group?); resume on the same grid, or call state_dict() on every rank "
                f"with torch.distributed initialised"
            )
        streams = deal(left, grid.streams)
        done: set[int] = set()
        for s, c in enumerate(counts):
            if c > len(streams[s]):
                raise OrderStateError(
                    f"dataset state says stream {s} delivered {c} items but it only had {len(streams[s])}; "
                    f"the state belongs to other data"
                )
            done.update(streams[s][:c])
        left = [i for i in left if i not in done]
    return left


def with_progress(state: EpochState, grid: Grid, counts: dict[int, int]) -> EpochState:
    """*state* plus a run on *grid* whose streams delivered *counts* (stream -> items; others -1).

    A run on the same grid as the last segment continued each stream's own list, so its counts
    are added to that segment's; a run on another grid becomes a new segment.
    """
    segments = list(state.segments)
    full = [-1] * grid.streams
    if segments and segments[-1][0] == grid:
        prev = segments.pop()[1]
        for s, c in counts.items():
            if c >= 0 and prev[s] < 0:
                raise OrderStateError(
                    f"no saved progress for stream {s} to continue from; load the state this rank saved"
                )
            full[s] = prev[s] + c if c >= 0 else -1
    else:
        for s, c in counts.items():
            full[s] = c
    return replace(state, segments=segments + [(grid, full)])


def stream_items(state: EpochState, grid: Grid, stream: int) -> list[int]:
    """What stream *stream* of *grid* delivers from where *state* left off.

    When the last segment is on this very grid, only this stream's own count is needed (ranks
    that saved their state separately can each resume their own streams).
    """
    if state.segments and state.segments[-1][0] == grid:
        counts = state.segments[-1][1]
        if counts[stream] < 0:
            raise OrderStateError(
                f"dataset state has no progress for stream {stream}; load the state saved by this rank"
            )
        mine = deal(remaining_order(state, upto=-1), grid.streams)[stream]
        if counts[stream] > len(mine):
            raise OrderStateError(
                f"dataset state says stream {stream} delivered {counts[stream]} items but it only had {len(mine)}; "
                f"the state belongs to other data"
            )
        return mine[counts[stream] :]
    return deal(remaining_order(state), grid.streams)[stream]
