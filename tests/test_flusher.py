"""io/flusher.py: deferred bookkeeping runs on one thread per process, in due order, survives a
failing call, and a forked child gets a flusher of its own (none of its parent's queued calls)."""

import os
import threading
import time

from air_magics.io.flusher import call_later


def _wait(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


def test_calls_run_in_due_order_on_one_thread():
    ran: list[tuple[str, str]] = []
    before = threading.active_count()
    for name, delay in (("c", 0.15), ("a", 0.0), ("b", 0.05)):
        call_later(delay, lambda name=name: ran.append((name, threading.current_thread().name)))
    assert _wait(lambda: len(ran) == 3)
    assert [n for n, _ in ran] == ["a", "b", "c"]
    assert {t for _, t in ran} == {"air-flusher"}
    assert threading.active_count() <= before + 1  # at most the flusher itself, never a thread per call
    assert _drained()  # nothing left queued ahead of a call made now


def test_a_failing_call_does_not_stop_the_next():
    ran = []

    def boom():
        raise OSError("the cache folder is gone")

    call_later(0.0, boom)
    call_later(0.01, lambda: ran.append(1))
    assert _wait(lambda: ran == [1])


def test_a_forked_child_runs_its_own_calls_and_none_of_its_parents():
    r, w = os.pipe()
    parent_ran = []
    call_later(0.3, lambda: parent_ran.append(os.getpid()))  # queued before the fork
    pid = os.fork()
    if pid == 0:  # the child: its own flusher runs its call; the parent's queued call never runs here
        try:
            done = threading.Event()
            call_later(0.0, done.set)
            ok = done.wait(5) and _drained()
            time.sleep(0.5)  # past the parent's call's due time
            os.write(w, b"ok" if ok and parent_ran == [] else b"no")
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    assert os.read(r, 2) == b"ok"
    os.close(r)
    assert _wait(lambda: parent_ran == [os.getpid()])


def _drained() -> bool:
    """Whether a call queued now runs (calls run in due order: every call due before it ran first)."""
    ran = threading.Event()
    call_later(0.0, ran.set)
    return ran.wait(5)
