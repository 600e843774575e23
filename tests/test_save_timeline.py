"""The checkpoint time line (air_magics.charts.saves): real saves of a ``CheckpointManager`` drawn from
the checkpoints status document, read back from the SVG (each phase's data, title and width on the
time axis) and compared with the save records; queued and overlapping saves marked; the loop's step
rate over the same seconds."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

import pytest

from air_magics.charts import LoaderHistory
from air_magics.charts.saves import save_timeline, timeline_html, timeline_svg
from air_magics.charts.svg import LEFT, RIGHT, W
from air_magics.volumes import VolumeStore

SVG = "{http://www.w3.org/2000/svg}"
PW = W - LEFT - RIGHT


def _svg(html: str, panel: str) -> ET.Element:
    for m in re.finditer(r"<svg .*?</svg>", html, re.S):
        el = ET.fromstring(m.group(0))
        if el.get("data-panel") == panel:
            return el
    raise AssertionError(f"no {panel} panel in {html[:200]}")


def _segs(svg: ET.Element) -> dict[tuple[int, str], ET.Element]:
    return {(int(r.get("data-step")), r.get("data-kind")): r for r in svg.iter(f"{SVG}rect")}


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.ck.runs")
    return s


def test_a_background_save_is_a_bar_whose_blocked_part_is_its_blocked_s(vol):
    import torch

    from air_magics.checkpoints import CheckpointManager
    from air_magics.checkpoints.commit import checkpoint_status
    from air_magics.widgets import checkpoint_timeline, checkpoints_html, checkpoints_text

    mgr = CheckpointManager("/Volumes/main/ck/runs/tl", show=False)
    mgr.save(1, {"w": torch.randn(2_000_000)}, blocking=False, background_staging=True)
    mgr.wait()
    doc = checkpoint_status("/Volumes/main/ck/runs/tl")
    rec = doc["saves"][-1]
    assert rec["state"] == "committed" and rec["uploading_at"] <= rec["uploaded_at"] <= rec["finished"]
    svg = _svg(checkpoints_html(doc), "saves")
    segs = _segs(svg)
    span = save_timeline(doc)["x"]["to"]
    blocked = segs[(1, "blocked")]
    width_s = float(blocked.get("data-to")) - float(blocked.get("data-from"))
    assert width_s == pytest.approx(rec["blocked_s"], abs=1e-5)  # the record's blocked_s
    assert float(blocked.get("width")) == pytest.approx(max(rec["blocked_s"] / span * PW, 0.5), abs=0.2)
    assert float(blocked.get("x")) == pytest.approx(LEFT, abs=0.1)  # the save's start is the axis' 0
    # upload and commit split at the moment the writer reported its data written
    up, commit = segs[(1, "upload")], segs[(1, "commit")]
    assert float(up.get("data-to")) == float(commit.get("data-from"))
    assert float(commit.get("data-to")) - float(commit.get("data-from")) == pytest.approx(
        rec["finished"] - rec["uploaded_at"], abs=1e-5
    )
    assert float(commit.get("data-to")) == pytest.approx(span, abs=1e-5)  # the committed end is the axis' end
    staging = segs[(1, "staging")]
    assert float(staging.get("data-to")) == pytest.approx(rec["staging_s"], abs=1e-5)
    assert blocked.find(f"{SVG}title").text.startswith("step 1 blocked: ")
    row = next(svg.iter(f"{SVG}g"))
    assert row.get("data-state") == "committed" and row.get("data-overlaps") == "false"
    assert "MB/s" in row.find(f"{SVG}title").text
    # the same time line as a cell's output (notebook 03): saved with the notebook, the save rows as its text
    bundle, meta = checkpoint_timeline("/Volumes/main/ck/runs/tl")._repr_mimebundle_()
    assert _segs(_svg(bundle["text/html"], "saves")).keys() == segs.keys()
    assert bundle["text/plain"] == checkpoints_text(doc) and meta == {"air_magics": {"live_view": "checkpoints"}}


def test_a_folder_without_saves_has_an_empty_time_line(vol):
    from air_magics.checkpoints import CheckpointManager
    from air_magics.widgets import checkpoint_timeline

    CheckpointManager("/Volumes/main/ck/runs/none", show=False)
    bundle, _ = checkpoint_timeline("/Volumes/main/ck/runs/none")._repr_mimebundle_()
    assert bundle["text/html"] == "<div>no saves recorded yet</div>" and "committed steps none" in bundle["text/plain"]


def _save(step, started, finished, **kw):
    return {"step": step, "state": "committed", "started": started, "finished": finished, **kw}


def test_queued_and_overlapping_saves_are_marked():
    t = 1_000_000.0
    doc = {
        "saves": [
            _save(100, t, t + 4, blocked_s=0.1, staging_s=0.5, uploading_at=t + 0.5, uploaded_at=t + 3.5),
            # issued at t+2 while 100 ran: waited until 100 was done, then ran
            _save(200, t + 4.1, t + 6, blocked_s=0.05, waited_s=2.1, uploading_at=t + 4.2, uploaded_at=t + 5.5),
            _save(300, t + 10, t + 11, blocked_s=1.0),  # a blocking save: the loop held for its whole write
        ]
    }
    spec = save_timeline(doc)
    assert spec["x"]["to"] == 11.0
    rows = {int(g.get("data-step")): g for g in ET.fromstring(timeline_svg(spec)).iter(f"{SVG}g")}
    assert rows[200].get("data-queued") == "true" and rows[100].get("data-queued") == "false"
    assert rows[100].get("data-overlaps") == rows[200].get("data-overlaps") == "true"
    assert rows[300].get("data-overlaps") == "false"
    assert "queued" in rows[200].find(f"{SVG}title").text
    segs = _segs(ET.fromstring(timeline_svg(spec)))
    q = segs[(200, "queued")]
    assert (float(q.get("data-from")), float(q.get("data-to"))) == (2.0, 4.1)
    assert float(q.get("x")) == pytest.approx(LEFT + 2.0 / 11 * PW, abs=0.1)
    assert (200, "staging") not in segs and (300, "upload") not in segs  # only the phases a record has


def test_a_running_and_a_failed_save():
    t = 2_000_000.0
    doc = {
        "saves": [
            {"step": 1, "state": "failed", "started": t, "finished": t + 1, "blocked_s": 0.01, "error": "disk full"},
            {"step": 2, "state": "uploading", "started": t + 2, "blocked_s": 0.01, "uploading_at": t + 2.1},
        ]
    }
    spec = save_timeline(doc, now=t + 5)
    running = spec["saves"][1]["segments"]
    assert running[-1] == {"kind": "upload", "lane": "save", "from": 2.1, "to": 5.0}  # up to now
    failed = spec["saves"][0]["segments"]  # no writer times: it wrote from the call's end until it failed
    assert [(s["kind"], s["from"], s["to"]) for s in failed] == [("blocked", 0.0, 0.01), ("upload", 0.01, 1.0)]


@pytest.mark.parametrize("doc", [{}, {"saves": []}, {"saves": [{"step": 1}]}, {"saves": ["x", {"started": "?"}]}])
def test_no_drawable_save_draws_nothing(doc):
    assert save_timeline(doc) is None and timeline_html(None) == ""


def test_the_step_rate_over_the_same_seconds():
    t = float(int(time.time()))  # (a history row keeps its time to the ms)
    h = LoaderHistory()
    for i in range(6):  # 10 steps every 0.5 s: 20 steps/s
        h.add({"steps": 10 * i, "items": 80 * i}, t + 0.5 * i)
    loader = {"history": h.document()}
    doc = {"saves": [_save(10, t + 0.5, t + 2.5, blocked_s=0.2)]}
    spec = save_timeline(doc, [loader])
    pts = spec["rate"]["series"][0]["points"]
    assert [p[1] for p in pts] == [20.0] * 5 and pts[0][0] == 0.0  # seconds from the first save's start
    html = timeline_html(spec)
    rate = _svg(html, "step-rate")
    circles = list(rate.iter(f"{SVG}circle"))
    assert len(circles) == 5 and circles[0].find(f"{SVG}title").text == "steps/s, at 0.0 s: 20 steps/s"
    assert float(circles[-1].get("cx")) == pytest.approx(LEFT + 2.0 / 2.0 * PW, abs=0.1)  # one time axis
    assert save_timeline(doc, [{"history": {"fields": [], "rows": []}}])["rate"] is None


def test_each_saves_mb_s_against_the_volumes_measured_rate(vol):
    import torch

    from air_magics.charts.saves import volume_rate
    from air_magics.checkpoints import CheckpointManager
    from air_magics.checkpoints.commit import checkpoint_status
    from air_magics.volumes import probe
    from air_magics.widgets import checkpoints_html

    mgr = CheckpointManager("/Volumes/main/ck/runs/rate", show=False)
    mgr.save(1, {"w": torch.randn(500_000)})
    mgr.save(2, {"w": torch.randn(500_000)})
    assert volume_rate("/Volumes/main/ck/runs/rate") is None  # never probed: the bars alone
    unprobed = _svg(checkpoints_html(checkpoint_status("/Volumes/main/ck/runs/rate")), "save-rates")
    assert not list(unprobed.iter(f"{SVG}line[@class='air-ref']"))
    report = probe("/Volumes/main/ck/runs/rate", budget_s=2)
    doc = checkpoint_status("/Volumes/main/ck/runs/rate")
    svg = _svg(checkpoints_html(doc), "save-rates")
    bars = {r.get("data-label"): float(r.get("data-y")) for r in svg.iter(f"{SVG}rect")}
    assert bars == {str(s["step"]): pytest.approx(s["mb_per_s"], rel=1e-3) for s in doc["saves"]}
    (ref,) = [x for x in svg.iter(f"{SVG}line") if x.get("class") == "air-ref"]
    assert float(ref.get("data-y")) == pytest.approx(report.parallel_read_mb_s, rel=1e-3)
    assert ref.find(f"{SVG}title").text.startswith(f"volume read rate (probe, {report.streams} streams): ")
    assert volume_rate("/tmp/not-a-volume") is None


def test_a_malformed_record_is_drawn_escaped():
    """A status document is written by any process: what it holds reaches the page as text only."""
    doc = {"saves": [_save('"><script>x</script>', 1.0, 2.0, blocked_s=0.1, state="<b>")]}
    svg = ET.fromstring(timeline_svg(save_timeline(doc)))  # well-formed: nothing broke out of its attribute
    (row,) = svg.iter(f"{SVG}g")
    assert row.get("data-step") == '"><script>x</script>' and row.get("data-state") == "<b>"
    assert not list(svg.iter("script")) and not list(svg.iter(f"{SVG}script"))
