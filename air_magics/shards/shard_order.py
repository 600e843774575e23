"""A shard-aware epoch order for packed folders. Pure functions, no I/O.

A full shuffle of a packed folder's members asks for every shard at once: each stream's next item
sits at a random offset of a random shard, so the first items wait for shards to arrive and the
cache holds them all. :func:`windowed_order` shuffles in two levels instead, seeded by
``(seed, epoch)`` like :func:`air_magics.datasets.epoch_order.epoch_order`:

1. the shards' order is shuffled per epoch;
2. the shards, in that order, are cut into consecutive blocks of ``window`` shards, and the members
   of each block are shuffled together.

How far a member moves: anywhere within its block of ``window`` shards, never out of it. With
shards of ``S`` members, a member lands among the ``window * S`` positions its block occupies, and
the streams (the order dealt round-robin) read from the ``window`` shards of one block at a time,
plus the next block's near a boundary. ``window=1`` keeps each shard's members together (shuffled
within it); a window as large as the shard count is a full shuffle.

The order is a deterministic function of (member shards, seed, epoch, window), which is all the
exact resume of :mod:`air_magics.datasets.epoch_order` needs: the delivered set is recomputed from it on any
grid.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["windowed_order", "shard_sequence", "WINDOW"]

WINDOW = 4


def windowed_order(shard_of: Sequence[int], *, seed: int = 0, epoch: int = 0, window: int = WINDOW) -> list[int]:
    """Indices ``0..n-1`` (``shard_of[i]``: the shard of member ``i``) in this epoch's order."""
    if window < 1:
        raise ValueError(f"window={window}: give at least 1 shard per shuffle window")
    by_shard: dict[int, list[int]] = {}
    for i, s in enumerate(shard_of):
        by_shard.setdefault(s, []).append(i)
    rng = random.Random(f"air-shards:{seed}:{epoch}")
    shards = sorted(by_shard)
    rng.shuffle(shards)
    out: list[int] = []
    for k in range(0, len(shards), window):
        block = [i for s in shards[k : k + window] for i in by_shard[s]]
        rng.shuffle(block)
        out += block
    return out


def shard_sequence(shard_of: Sequence[int], items: Sequence[int]) -> list[int]:
    """The shards *items* (member indices, in the order a stream reads them) need, in the order
    they are first needed: what :meth:`~air_magics.shards.PackedFolder.plan_reads` takes."""
    return list(dict.fromkeys(shard_of[i] for i in items))
