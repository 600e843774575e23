"""cache/reports.py: a cache's progress snapshots are made on the flusher thread (never on a fetch
thread), a progress snapshot asked for before a final report never lands after it, and a final
report right after another is deferred once."""

import os
import signal
import threading
import time

import pytest
from _seed import seeded_volume

from air_magics.cache import FileCache
from air_magics.cache.reports import REPORT_EVERY, StatusReports
from air_magics.events import CacheEvent, channel, throttled
from air_magics.io.flusher import call_later


class _Seen(list):
    """The events of the cache at *root* a listener saw: ``(state, thread name)`` (the channel is the
    process's: another test's cache may still report)."""

    def __init__(self, root):
        super().__init__()
        self.root = str(root)

    def __call__(self, event):
        if isinstance(event, CacheEvent) and event.stats.root == self.root:
            self.append((event.state, threading.current_thread().name))


def _wait(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


def test_progress_snapshots_are_made_on_the_flusher_thread(tmp_path):
    seeded_volume("main.raw.rep", {"/Volumes/main/raw/rep/a.bin": b"a" * 10})
    cache = FileCache(tmp_path / "c")
    seen = _Seen(cache.root)
    with channel.attach(seen):
        with open(cache.get("/Volumes/main/raw/rep/a.bin"), "rb") as f:  # a miss: progress asked for
            assert f.read() == b"a" * 10
        assert _wait(lambda: ("running", "air-flusher") in seen)
    assert all(thread == "air-flusher" for state, thread in seen if state == "running")


def test_a_progress_snapshot_asked_for_before_a_final_report_never_lands_after_it(tmp_path):
    cache = FileCache(tmp_path / "c")
    reports = StatusReports(lambda flush: cache.info(flush=flush), cache.flush_hits)
    seen, hold = _Seen(cache.root), threading.Event()
    with channel.attach(seen):
        call_later(0.0, hold.wait)  # the flusher is busy: the progress below runs after the final
        reports.progress(force=True)
        reports.final()
        assert seen == [("done", threading.current_thread().name)]
        hold.set()
        drained = threading.Event()
        call_later(0.0, drained.set)  # runs once every call due before it ran
        assert drained.wait(5)
        time.sleep(0.05)  # (the last queued call returns)
    assert [state for state, _ in seen] == ["done"]


def test_a_final_report_right_after_another_is_deferred_once(tmp_path):
    cache = FileCache(tmp_path / "c")
    reports = StatusReports(lambda flush: cache.info(flush=flush), cache.flush_hits)
    seen = _Seen(cache.root)
    with channel.attach(seen):
        reports.final()
        for _ in range(3):  # three streams end within the second: one deferred report for all
            reports.final(soon=True)
        assert [s for s, _ in seen] == ["done"]
        assert _wait(lambda: len(seen) == 2, timeout=REPORT_EVERY + 5)
        time.sleep(REPORT_EVERY / 2)
    assert seen[1] == ("done", "air-flusher") and len(seen) == 2


def _in_forked_child(fn, timeout: float = 20.0) -> int:
    """Run *fn* in a forked child; its exit code (0: returned; 1: raised; 2: still running after *timeout*)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.alarm(int(timeout))  # a hang ends the child (SIGALRM) instead of the suite
            fn()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return 2 if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM else os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_worker_forked_while_the_flusher_reports_can_still_report(tmp_path):
    """The hang CI found (bench_hotpath, 1 run in 20): a DataLoader worker forked while the parent's
    flusher thread was inside a final report, holding the reports' lock and a throttled listener's,
    waited forever for them at its own first final report."""
    cache = FileCache(tmp_path / "c")
    reports = StatusReports(lambda flush: cache.info(flush=flush), cache.flush_hits)
    inside, leave = threading.Event(), threading.Event()

    def slow(event):  # the parent's listener: holds the emit (and the locks around it) until told
        if isinstance(event, CacheEvent) and os.getpid() == parent:
            inside.set()
            leave.wait(30)

    parent = os.getpid()
    docs = throttled(lambda event: None, 0.5)  # a throttled listener after it, as the status documents are
    with channel.attach(slow), channel.attach(docs):
        call_later(0.0, reports.final)  # on the flusher thread, as a deferred final report runs
        assert inside.wait(10)
        try:
            assert _in_forked_child(reports.final) == 0
            assert _in_forked_child(lambda: reports.final(soon=True)) == 0  # and a deferred one queues
        finally:
            leave.set()
