"""The cache's stripe locks: one key's fetches exclude each other in any thread, cache instance or
process; keys of different stripes never wait for each other (a cold miss no longer waits for a
stranger's copy); eviction takes a batch of stripes together without waiting in a circle."""

from __future__ import annotations

import multiprocessing as mp
import threading

import pytest

from air_magics.cache import stripes as stripes_mod
from air_magics.cache.stripes import STRIPES, Stripes


def _two_keys_in_different_stripes() -> tuple[str, str]:
    a = "/Volumes/c/s/v/a.bin"
    for n in range(1000):
        b = f"/Volumes/c/s/v/b{n}.bin"
        if Stripes.of(b) != Stripes.of(a):
            return a, b
    raise AssertionError("no second stripe found")


def _hold(root, key, held, release) -> None:
    with Stripes(root).held(key):
        held.set()
        release.wait(30)


def test_many_stripes_on_linux():
    # 256 stripes made a quarter of 64 concurrent cold misses wait for another key's copy
    assert STRIPES >= 4096
    assert (stripes_mod._OFD_SETLK is not None) == (STRIPES == 1 << 14)


def test_same_key_excluded_across_cache_instances_in_one_process(tmp_path):
    a, b = Stripes(tmp_path), Stripes(tmp_path)
    key = "/Volumes/c/s/v/x.bin"
    with a.held(key):
        with b.try_held(Stripes.of(key), 0.05) as got:
            assert not got  # another descriptor of this process holds the byte: excluded
    with b.try_held(Stripes.of(key), 0.05) as got:
        assert got


def test_same_key_excluded_across_threads(tmp_path):
    s = Stripes(tmp_path)
    key = "/Volumes/c/s/v/x.bin"
    inside, order = threading.Event(), []

    def other() -> None:
        inside.wait(5)
        with s.held(key):
            order.append("other")

    t = threading.Thread(target=other)
    t.start()
    with s.held(key):
        inside.set()
        t.join(0.2)
        assert t.is_alive()  # waiting for the stripe
        order.append("first")
    t.join(5)
    assert order == ["first", "other"]


def test_different_stripes_do_not_wait(tmp_path):
    k1, k2 = _two_keys_in_different_stripes()
    a, b = Stripes(tmp_path), Stripes(tmp_path)
    with a.held(k1), b.try_held(Stripes.of(k2), 0.0) as got:
        assert got


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_same_key_excluded_across_processes(tmp_path, method):
    ctx = mp.get_context(method)
    key = "/Volumes/c/s/v/x.bin"
    held, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold, args=(tmp_path, key, held, release))
    p.start()
    try:
        assert held.wait(30)
        s = Stripes(tmp_path)
        with s.try_held(Stripes.of(key), 0.05) as got:
            assert not got
        k1, k2 = _two_keys_in_different_stripes()
        if Stripes.of(k1) == Stripes.of(key):
            k1 = k2
        with s.try_held(Stripes.of(k1), 0.0) as got:
            assert got  # the child holds one byte, not the file
    finally:
        release.set()
        p.join(30)
    with Stripes(tmp_path).try_held(Stripes.of(key), 1.0) as got:
        assert got  # released when the child let go


def test_all_held_skips_busy_stripes_and_releases_the_rest(tmp_path):
    k1, k2 = _two_keys_in_different_stripes()
    a, b = Stripes(tmp_path), Stripes(tmp_path)
    with a.held(k1):
        with b.all_held([Stripes.of(k2), Stripes.of(k1), Stripes.of(k2)], 0.02) as got:
            assert got == {Stripes.of(k2)}
    with a.try_held(Stripes.of(k2), 0.0) as got:
        assert got  # all_held let go of what it took


def test_flock_fallback_excludes_by_file(tmp_path):
    # the fallback where open-file-description locks are missing: a flock file per stripe
    a, b = stripes_mod._FileLocks(tmp_path), stripes_mod._FileLocks(tmp_path)
    assert a.acquire(7, None)
    assert not b.acquire(7, 0.02)
    assert b.acquire(8, 0.0)
    a.release(7)
    assert b.acquire(7, 0.5)
