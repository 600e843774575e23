"""Prefetcher: results in order, `depth` fetches in flight behind a slow head, errors in order, early close."""

import threading
import time

import pytest

from air_magics.datasets.prefetch import Prefetcher


def test_results_come_in_order_and_warm_items_skip_the_pool():
    threads = set()

    def fetch(i):
        threads.add(threading.current_thread().name)
        return i * 10

    with Prefetcher(range(50), fetch, 4, ready=lambda i: -i if i % 2 else None) as p:
        got = list(p)
    assert got == [-i if i % 2 else i * 10 for i in range(50)]
    assert threads and all(t.startswith("air-prefetch") for t in threads)


def test_a_slow_head_does_not_stop_the_next_fetches():
    """Item 0 finishes only once item depth+2 has started: impossible for a window that starts the
    next fetch only when the oldest result is handed out (it would wait 10 s and report False)."""
    depth, later = 4, threading.Event()

    def fetch(i):
        if i == 0:
            return later.wait(10)
        if i == depth + 2:
            later.set()
        return True

    with Prefetcher(range(20), fetch, depth) as p:
        assert list(p) == [True] * 20


def test_an_error_is_raised_in_its_place_and_close_stops_the_rest():
    started = []

    def fetch(i):
        started.append(i)
        if i == 3:
            raise OSError("boom at 3")
        return i

    got = []
    with pytest.raises(OSError, match="boom at 3"), Prefetcher(range(1000), fetch, 2) as p:
        for v in p:
            got.append(v)
    assert got == [0, 1, 2]
    assert len(started) < 20  # closing cancelled what had not started


def test_depth_bounds_fetches_in_flight():
    lock, flying, peak = threading.Lock(), [0], [0]
    gate = threading.Event()

    def fetch(i):
        with lock:
            flying[0] += 1
            peak[0] = max(peak[0], flying[0])
        gate.wait(0.01)
        with lock:
            flying[0] -= 1
        return i

    with Prefetcher(range(200), fetch, 3) as p:
        assert list(p) == list(range(200))
    assert peak[0] <= 3


class _OwnedLock:
    """A lock that knows which thread holds it (a plain Lock cannot say whether *this* thread does)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self.owner = threading.get_ident()
        return got

    def release(self) -> None:
        self.owner = None
        self._lock.release()

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_the_ready_callback_never_runs_under_the_window_lock_and_order_holds():
    """``ready`` (a cache lookup, sometimes an index write) runs with the window's lock free, from
    the consumer or from a fetch thread's top-up, and results still come in stream order with
    hits and misses interleaved. (The check asks whether the calling thread holds the lock: another
    thread holding it at that instant, which happens all the time, is no fault.)"""
    held = []
    lock = _OwnedLock()

    def ready(i):
        if lock.owner == threading.get_ident():
            held.append(i)
        return f"hit {i}" if i % 3 else None

    def fetch(i):
        time.sleep(0.001 * (i % 5))  # out-of-order landings
        return f"fetched {i}"

    with Prefetcher(range(300), fetch, 8, ready=ready) as p:
        p._lock = lock  # before the first item: every use of the window's lock goes through it
        got = list(p)
    assert got == [f"hit {i}" if i % 3 else f"fetched {i}" for i in range(300)]
    assert held == []
