"""The progress views: the ipywidgets view (created for real, without a browser) and the text bar."""

from _seed import seeded_volume

from air_magics.events import CopyEvent
from air_magics.transfer import CopyFailure, CopyProgress, CopyReport
from air_magics.widgets import TextCopyProgress, WidgetCopyProgress, copy_progress_view, describe, has_widget_frontend


def snap(done, failed=0):
    return CopyProgress(
        files_total=10, copied=done, skipped=0, failed=failed, bytes_total=10_000, bytes_done=done * 1000, elapsed=2.0
    )


def event(done, failed=0):
    """What the views listen to: the copy's event, carrying its progress."""
    return CopyEvent(job="w", progress=snap(done, failed))


def test_describe_has_files_bytes_rate_eta_failures():
    line = describe(snap(4, failed=1))
    for part in ("5 / 10 files", "3.9 KiB / 9.8 KiB", "2 files/s", "ETA 2 s", "1 failed"):
        assert part in line, (part, line)
    assert "ETA --" in describe(CopyProgress(10, 0, 0, 0, 0, 0, 0.0))


def test_widget_view_updates_and_finishes():
    view = copy_progress_view("copy to /tmp/x", widget=True)
    assert isinstance(view, WidgetCopyProgress)
    view(event(3))
    assert (view.bar.value, view.bar.max, view.bar.bar_style) == (3, 10, "info")
    view(event(6, failed=1))
    assert view.bar.bar_style == "warning" and "1 failed" in view.label.value
    view.close(CopyReport(files_total=10, copied=9, failed=[CopyFailure("a", "b", "EIO", 5)], dest="/tmp/x"))
    assert view.bar.bar_style == "danger" and "1 FAILED" in view.label.value
    ok = copy_progress_view("t", widget=True)
    ok.close(CopyReport(files_total=1, copied=1, dest="/tmp/x"))
    assert ok.bar.bar_style == "success"
    interrupted = copy_progress_view("t", widget=True)
    interrupted.close(None)
    assert "interrupted" in interrupted.label.value


def test_text_view_outside_kernels(capsys):
    assert not has_widget_frontend()
    view = copy_progress_view("copy to /tmp/y")
    assert isinstance(view, TextCopyProgress)
    view(event(10))
    view.close(None)
    assert "10/10" in capsys.readouterr().err


def test_cache_view_renders_and_follows_worker_processes(tmp_path):
    """Live view: documents written by DataLoader worker processes show up while it polls."""
    import time as _t

    from air_magics.data import DataLoader, UCVolumeDataset
    from air_magics.widgets import CacheView, cache_text

    assert "no activity yet" in cache_text()
    seeded_volume("main.raw.w", {f"/Volumes/main/raw/w/{i:02d}.bin": b"w" * 500 for i in range(40)})
    view = CacheView(interval=0.05)
    try:
        dl = DataLoader(UCVolumeDataset("/Volumes/main/raw/w"), batch_size=4, num_workers=2)
        for _ in dl:
            pass
        deadline = _t.time() + 10
        # the loader's document comes when its epoch ends (a short epoch reports once): wait for both
        while not ("40 misses" in view.table.value and "data wait" in view.table.value) and _t.time() < deadline:
            _t.sleep(0.05)
        assert "40 misses" in view.table.value  # fetched in the workers, seen by the view's poll
        assert "data wait" in view.table.value and "2 workers" in view.table.value
        for _ in dl:  # second epoch: all hits
            pass
        deadline = _t.time() + 10
        while view.hit_rate.value < 0.5 and _t.time() < deadline:
            _t.sleep(0.05)
        assert view.hit_rate.value == 0.5 and view.fill.description == "no limit"
        # the training chart below: the loader's history (one row per epoch's end here) drawn as SVG
        while "air-point" not in view.chart.value and _t.time() < deadline:
            _t.sleep(0.05)
        assert view.chart.value.count("<svg") == 5 and 'data-x="20"' in view.chart.value
    finally:
        view.stop()
    assert "hit rate: 50.0%" in cache_text()


def test_cache_view_explains_low_hits_and_data_wait():
    from air_magics.widgets.cache_view import advice, cache_text

    small = {"hits": 10, "misses": 400, "evictions": 350, "limit": 12_500_000, "bytes": 12_000_000}
    wait = {"wait_share": 0.8, "steps": 100, "epoch": 1, "num_workers": 2}
    text = cache_text(small, wait)
    assert "does not fit" in text and "11.9 MiB" in text and "cache_limit" in text
    assert "input-bound, waiting 80.0% of the time" in text and "80.0% of loop time" in text
    assert advice({"hits": 0, "misses": 50, "evictions": 0}, None)[0].startswith("every file so far was a miss")
    hits = {"hits": 900, "misses": 100, "evictions": 0}
    # before the 10th step the verdict's rule says warming up, whatever the share (as Verdict does)
    for share in (0.02, 0.3):
        assert advice(hits, {"wait_share": share, "steps": 9}) == [
            "warming up: the verdict on the input pipeline comes after 10 steps"
        ]


def test_cache_view_shows_the_loaders_verdict_once_it_has_one(tmp_path):
    """From the 10th step on the loader's status document carries its verdict: the view says it."""
    from air_magics.data import DataLoader, UCVolumeDataset
    from air_magics.status import latest_loader
    from air_magics.widgets import cache_text

    seeded_volume("main.raw.vv", {f"/Volumes/main/raw/vv/{i:02d}.bin": b"v" * 300 for i in range(24)})
    loader = DataLoader(UCVolumeDataset("/Volumes/main/raw/vv"), batch_size=2, num_workers=0)
    assert sum(1 for _ in loader) == 12
    doc = latest_loader()
    assert doc["verdict"] == str(loader.timing.verdict()) and doc["verdict"]
    assert doc["verdict"] in cache_text()
