"""A pack's progress: PackEvents on the event channel (running, then done/failed with the report),
the widget view (real ipywidgets, no browser) and the text fallback of `%air_volume pack`."""

import json

import pytest
from _seed import seeded_volume

from air_magics.errors import PackError
from air_magics.events import channel
from air_magics.shards import PackEvent, pack
from air_magics.widgets.pack_progress import TextPackProgress, WidgetPackProgress, pack_progress_view

SRC, DEST = "/Volumes/main/raw/img/train", "/Volumes/main/raw/img/packed"
N = 40


@pytest.fixture
def vol():
    return seeded_volume("main.raw.img", {f"{SRC}/d{i % 2}/{i:03d}.bin": bytes([i]) * (3000 + i) for i in range(N)})


def test_pack_emits_running_then_done_with_the_report(vol):
    seen = []
    with channel.attach(lambda e: seen.append(e) if isinstance(e, PackEvent) else None):
        r = pack(SRC, DEST, shard_size="32KiB")
    assert seen and all(e.job == DEST and e.src == SRC for e in seen)
    assert [e.state for e in seen[:-1]] == ["running"] * (len(seen) - 1) and seen[-1].state == "done"
    done = [e.progress.files_done for e in seen[:-1]]
    assert done == sorted(done) and done[-1] == N
    last = seen[-1]
    assert last.report is r and last.terminal
    doc = json.loads(json.dumps(last.to_dict()))
    assert doc["kind"] == "pack" and doc["report"]["files"] == N and doc["report"]["shards_written"] == r.shards > 1
    assert doc["files_done"] == doc["files_total"] == N and doc["finished"] is not None
    seen.clear()
    with channel.attach(seen.append):
        again = pack(SRC, DEST, shard_size="32KiB")
    packs = [e for e in seen if isinstance(e, PackEvent)]
    assert again.unchanged and [e.state for e in packs] == ["done"] and packs[0].report.shards_kept == r.shards


def test_a_failed_pack_emits_failed_naming_the_problem(vol):
    seen = []
    with pytest.raises(PackError):
        pack(SRC, f"{SRC}/inside", listeners=[seen.append])
    assert [e.state for e in seen] == ["failed"] and "inside the source" in seen[0].error
    assert seen[0].to_dict()["report"] is None


def test_widget_view_follows_a_pack_and_shows_the_report(vol):
    view = pack_progress_view("pack", widget=True)
    assert isinstance(view, WidgetPackProgress)
    states = []

    def watch(e):
        view(e)
        states.append((e.state, view.bar.value))

    r = pack(SRC, DEST, shard_size="32KiB", listeners=[watch])
    view.close(r)
    assert states[-1] == ("done", 1.0) and any(0 < v < 1 for s, v in states if s == "running")
    assert view.bar.bar_style == "success" and f"{N:,} files" in view.label.value and "wrote" in view.label.value
    failed = pack_progress_view("pack", widget=True)
    with pytest.raises(PackError):
        pack(SRC, SRC, listeners=[failed])
    failed.close(None)
    assert failed.bar.bar_style == "danger" and "failed" in failed.label.value


def test_magic_text_fallback_when_widgets_are_off(vol, ip, capsys):
    assert isinstance(pack_progress_view("t"), TextPackProgress)  # no kernel: text
    ip.run_line_magic("config", "AirMagics.widgets = False")
    try:
        r = ip.run_line_magic("air_volume", f"pack {SRC} {DEST} --shard-size 32KiB -o rep")
    finally:
        ip.run_line_magic("config", "AirMagics.widgets = True")
    out = capsys.readouterr().out
    assert r.files == N and f"{N} / {N} files" in out and str(r) in out
    assert out.rstrip().endswith(str(r))  # the report last, on its own line


def test_a_pack_report_shows_as_its_summary():
    """Notebook 05 showed ``PackReport(... seconds=0.6091408190000038)``: the value reads as one line now."""
    from air_magics.shards import PackReport

    r = PackReport(source="/Volumes/c/s/v/a", dest="/Volumes/c/s/v/b", files=3, seconds=0.6091408190000038)
    assert repr(r) == f"<PackReport: {r}>" and "0.61 s" in repr(r) and "0.609140819" not in repr(r)
