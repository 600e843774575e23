"""Order, split and resume: pure functions, property-tested."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air_magics.datasets.epoch_order import (
    EpochState,
    Grid,
    OrderStateError,
    deal,
    epoch_order,
    remaining_order,
    stream_index,
    stream_items,
    with_progress,
)

grids = st.builds(Grid, st.integers(1, 3), st.integers(1, 4))


def test_epoch_order_is_seeded_and_changes_per_epoch():
    assert epoch_order(5) == [0, 1, 2, 3, 4]
    a = epoch_order(100, seed=1, epoch=0, shuffle=True)
    assert a == epoch_order(100, seed=1, epoch=0, shuffle=True)
    assert a != epoch_order(100, seed=1, epoch=1, shuffle=True)
    assert a != epoch_order(100, seed=2, epoch=0, shuffle=True)
    assert sorted(a) == list(range(100))


@given(st.integers(0, 200), st.integers(1, 12))
def test_deal_covers_everything_once_and_evenly(n, streams):
    parts = deal(list(range(n)), streams)
    flat = sorted(i for p in parts for i in p)
    assert flat == list(range(n))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_grid_and_stream_index():
    g = Grid(2, 3)
    assert g.streams == 6 and stream_index(g, 1, 2) == 5
    with pytest.raises(ValueError):
        stream_index(g, 2, 0)
    with pytest.raises(ValueError):
        Grid(0, 1)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 120),
    st.booleans(),
    st.integers(0, 3),
    st.lists(st.tuples(grids, st.lists(st.floats(0, 1), min_size=12, max_size=12)), max_size=3),
    grids,
)
def test_resume_delivers_each_file_exactly_once(n, shuffle, epoch, history, final_grid):
    """Any chain of partial runs on any grids, then a run to the end: every file exactly once."""
    state = EpochState(seed=7, epoch=epoch, n=n, shuffle=shuffle)
    delivered: list[int] = []
    for grid, fractions in history:
        streams = [stream_items(state, grid, s) for s in range(grid.streams)]
        counts = [int(len(items) * fractions[s]) for s, items in enumerate(streams)]
        for s, c in enumerate(counts):
            delivered += streams[s][:c]
        state = with_progress(state, grid, dict(enumerate(counts)))
    for s in range(final_grid.streams):
        delivered += stream_items(state, final_grid, s)
    assert sorted(delivered) == list(range(n))


@given(st.integers(1, 80), grids, st.data())
def test_same_grid_resume_needs_only_own_stream(n, grid, data):
    state = EpochState(seed=0, epoch=0, n=n, shuffle=True)
    streams = [stream_items(state, grid, s) for s in range(grid.streams)]
    counts = [data.draw(st.integers(0, len(x))) for x in streams]
    delivered = [i for s, c in enumerate(counts) for i in streams[s][:c]]
    for s in range(grid.streams):  # each rank saved only its own stream's count
        partial = with_progress(EpochState(0, 0, n, True), grid, {s: counts[s]})
        assert partial.segments[0][1].count(-1) == grid.streams - 1
        mine = stream_items(partial, grid, s)
        half = len(mine) // 2  # resume once more on the same grid, then finish
        again = with_progress(partial, grid, {s: half})
        delivered += mine[:half] + stream_items(again, grid, s)
    assert sorted(delivered) == list(range(n))


def test_unknown_counts_block_a_different_grid():
    state = EpochState(0, 0, 10, False, segments=[(Grid(2, 1), [3, -1])])
    with pytest.raises(OrderStateError, match="same grid"):
        stream_items(state, Grid(1, 2), 0)


def test_state_round_trip_and_corruption():
    st_ = EpochState(3, 1, 50, True, "abc", [(Grid(2, 2), [1, 2, 3, 4])])
    assert EpochState.from_dict(st_.to_dict()) == st_
    for bad in (
        {},
        {"seed": 1},
        {**st_.to_dict(), "segments": [{"world_size": 2, "num_workers": 2, "delivered": [1]}]},
        {**st_.to_dict(), "n": "many"},
    ):
        with pytest.raises(OrderStateError, match="corrupt"):
            EpochState.from_dict(bad)
    too_many = EpochState(0, 0, 4, False, segments=[(Grid(1, 1), [9])])
    with pytest.raises(OrderStateError, match="other data"):
        remaining_order(too_many)


def test_the_shuffle_is_numpys_frozen_permutation_and_old_states_keep_pythons():
    """New epochs shuffle with numpy's legacy RandomState (a frozen stream: the same order after a
    numpy upgrade); a state saved before the ``shuffler`` key existed resumes Python's shuffle."""
    import hashlib
    import random

    import numpy as np

    words = np.frombuffer(hashlib.sha256(b"air-order:4:2").digest(), dtype=np.uint32)
    assert epoch_order(1000, seed=4, epoch=2, shuffle=True) == np.random.RandomState(words).permutation(1000).tolist()
    old = list(range(1000))
    random.Random("air-order:4:2").shuffle(old)
    assert epoch_order(1000, seed=4, epoch=2, shuffle=True, shuffler="random") == old
    new = EpochState(4, 2, 1000, True, "f", [(Grid(1, 2), [10, 20])])
    assert new.shuffler == "mt19937" and EpochState.from_dict(new.to_dict()) == new
    saved_before = {k: v for k, v in new.to_dict().items() if k != "shuffler"}
    resumed = EpochState.from_dict(saved_before)
    assert resumed.shuffler == "random"
    rest = remaining_order(resumed)
    done = set(old[0:20:2]) | set(old[1:40:2])  # stream s of 2 had old[s::2]; they delivered 10 and 20
    assert rest == [i for i in old if i not in done]
    with pytest.raises(OrderStateError, match="shuffler 'bogus'"):
        EpochState.from_dict({**new.to_dict(), "shuffler": "bogus"})
    with pytest.raises(OrderStateError, match="unknown"):
        epoch_order(3, shuffle=True, shuffler="bogus")


def test_the_permutation_is_the_shuffle_kept_as_one_array():
    import hashlib
    from array import array

    import numpy as np

    from air_magics.datasets.epoch_order import epoch_permutation

    n = 50_000  # more than one fill block
    perm = epoch_permutation(n, seed=9, epoch=3)
    assert isinstance(perm, array) and perm.itemsize == 4  # 4 B an index below 2**31 files
    # the saved states' contract: numpy's legacy permutation seeded by the sha256 words, forever
    words = np.frombuffer(hashlib.sha256(b"air-order:9:3").digest(), dtype=np.uint32)
    assert list(perm) == np.random.RandomState(words).permutation(n).tolist()
    assert list(perm) == epoch_order(n, seed=9, epoch=3, shuffle=True) and sorted(perm) == list(range(n))
    for s in range(3):  # a stream's share, made without keeping the rest
        share = epoch_permutation(n, seed=9, epoch=3, stream=s, streams=3)
        assert list(share) == deal(epoch_order(n, seed=9, epoch=3, shuffle=True), 3)[s] == list(perm[s::3])
    assert len(epoch_permutation(0)) == 0 and len(epoch_permutation(2, stream=3, streams=4)) == 0
