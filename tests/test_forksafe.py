"""Locks a forked child gets fresh: a lock another thread of the parent holds at ``fork()`` is free in the child."""

import os
import threading

import pytest

from air_magics.io.forksafe import ForkSafeLock

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _held_elsewhere(lock: ForkSafeLock) -> threading.Event:
    """*lock* held by another thread until the returned event is set."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            done.wait(30)

    threading.Thread(target=hold, daemon=True).start()
    assert taken.wait(10)
    return done


def test_a_lock_held_by_another_thread_at_fork_is_free_in_the_child():
    lock = ForkSafeLock()
    done = _held_elsewhere(lock)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the holder thread does not exist here
            code = 1
            try:
                got = lock._lock.acquire(timeout=5)  # noqa: SLF001 - the one way to ask without hanging
                if got:
                    lock._lock.release()  # noqa: SLF001
                    with lock:  # and the with-form works
                        code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert lock._lock.locked()  # noqa: SLF001 - the parent's is still held by its thread
    finally:
        done.set()
