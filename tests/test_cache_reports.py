"""cache/reports.py: a cache's progress snapshots are made on the flusher thread (never on a fetch
thread), a progress snapshot asked for before a final report never lands after it, and a final
report right after another is deferred once."""

import threading
import time

from _seed import seeded_volume

from air_magics.cache import FileCache
from air_magics.cache.reports import REPORT_EVERY, StatusReports
from air_magics.events import CacheEvent, channel
from air_magics.io.flusher import call_later, pending


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
        assert _wait(lambda: pending() == 0)
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
