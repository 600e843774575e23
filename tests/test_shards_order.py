"""The shard-windowed epoch order: a permutation, deterministic per (seed, epoch), changing per
epoch, shards shuffled, every member kept inside its block of `window` shards."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from air_magics.shards.shard_order import windowed_order


def _shards(sizes):
    return [s for s, k in enumerate(sizes) for _ in range(k)]


@given(st.lists(st.integers(1, 30), min_size=1, max_size=25), st.integers(0, 5), st.integers(1, 6))
def test_permutation_and_members_stay_in_their_block(sizes, seed, window):
    shard_of = _shards(sizes)
    order = windowed_order(shard_of, seed=seed, epoch=1, window=window)
    assert sorted(order) == list(range(len(shard_of)))
    # walk the order block by block: each block holds exactly the members of `window` whole shards
    pos = 0
    seen_shards = set()
    while pos < len(order):
        first = shard_of[order[pos]]
        assert first not in seen_shards
        block_shards, end = set(), pos
        # the block's shards: the next `window` distinct shards not seen before
        rest = [shard_of[i] for i in order[pos:]]
        for s in rest:
            if s not in block_shards and len(block_shards) == window:
                break
            block_shards.add(s)
        size = sum(sizes[s] for s in block_shards)
        end = pos + size
        assert {shard_of[i] for i in order[pos:end]} == block_shards  # nobody from outside the block
        seen_shards |= block_shards
        pos = end


def test_deterministic_per_seed_and_epoch_and_changes_per_epoch():
    shard_of = _shards([20] * 12)
    a = windowed_order(shard_of, seed=3, epoch=0)
    assert a == windowed_order(shard_of, seed=3, epoch=0)
    assert a != windowed_order(shard_of, seed=3, epoch=1) and a != windowed_order(shard_of, seed=4, epoch=0)
    firsts = {shard_of[windowed_order(shard_of, seed=3, epoch=e)[0]] for e in range(10)}
    assert len(firsts) > 3  # the shard order itself is shuffled per epoch


def test_window_one_keeps_a_shards_members_together_and_shuffles_them():
    shard_of = _shards([10, 10, 10])
    order = windowed_order(shard_of, seed=1, epoch=0, window=1)
    runs = [shard_of[i] for i in order]
    assert runs == sorted(runs, key=runs.index)  # each shard's members consecutive
    assert order != sorted(order, key=lambda i: (runs.index(shard_of[i]), i))  # shuffled within


def test_bad_window():
    with pytest.raises(ValueError, match="window=0"):
        windowed_order([0, 1], window=0)
