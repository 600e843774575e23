"""Scratch chunks kept between checkpoint streams (air_magics.checkpoints.scratch)."""

from __future__ import annotations

import os

from air_magics.checkpoints import scratch as chunks


def test_a_chunk_given_back_is_the_next_one_taken_and_a_large_one_is_not_kept():
    a = chunks.take(100)
    assert len(a) == chunks.POOLED_BYTES
    chunks.give(a)
    assert chunks.take(5000) is a
    big = chunks.take(chunks.POOLED_BYTES + 1)
    assert len(big) == chunks.POOLED_BYTES + 1
    chunks.give(big)
    assert big.closed and chunks.take(1) is not big
    with chunks.borrowed(10) as view:
        assert view.nbytes == 10 and not view.readonly
        view[:3] = b"abc"
    assert chunks.take(1)[:3] == b"abc"  # the borrowed chunk came back (its bytes are not cleared)


def test_a_forked_childs_writes_stay_its_own():
    """A DataLoader worker forked while a save's chunks are kept must not write into the parent's."""
    c = chunks.take()
    c[:4] = b"mine"
    pid = os.fork()
    if pid == 0:  # the child
        c[:4] = b"kids"
        os._exit(0 if c[:4] == b"kids" else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert c[:4] == b"mine"
