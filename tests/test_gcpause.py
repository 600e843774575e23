"""gc_paused: the collector is off inside (nested and from several threads), on again after the last
block, and an application's own choice to keep it off is left alone."""

import gc
import os
import signal
import threading

import pytest

from air_magics.io.gcpause import gc_paused


def test_paused_inside_resumed_after_the_last_block():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still runs
    assert gc.isenabled()


def test_blocks_in_two_threads_resume_once_both_end():
    inside, release = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other thread's block is still open
    release.set()
    t.join()
    assert gc.isenabled()


def test_an_error_inside_still_resumes_and_a_disabled_collector_stays_off():
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the application's choice
    finally:
        gc.enable()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_another_threads_block_has_the_collector_on_and_can_pause_it():
    """The child has no such thread, so nothing would ever end that block there: the collector would
    stay off for the child's life (and its lock could be held by the dead thread)."""
    inside, release = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            inside.set()
            release.wait(30)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert inside.wait(10)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(10)
                if gc.isenabled():
                    with gc_paused():
                        off = not gc.isenabled()
                    code = 0 if off and gc.isenabled() else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert not gc.isenabled()  # the parent's block is still open
    finally:
        release.set()
        t.join()
    assert gc.isenabled()
