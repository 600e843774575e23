"""gc_paused: the collector is off inside (nested and from several threads), on again after the last
block, and an application's own choice to keep it off is left alone."""

import gc
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
