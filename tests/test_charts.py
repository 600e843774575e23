"""The training chart's model (air_magics.charts): loader events in, points drawn out, read back
from the SVG (data attributes, hover titles and the circles' positions on the axes)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest

from air_magics.charts import (
    CAPACITY,
    FIELDS,
    LoaderHistory,
    chart_html,
    history_rows,
    panel_svg,
    sparkline,
    training_line,
    training_spec,
)
from air_magics.charts.svg import BOTTOM, TOP, H
from air_magics.datasets.verdict import COMPUTE_BOUND_BELOW, INPUT_BOUND_ABOVE
from air_magics.events import CacheEvent, LoaderEvent
from air_magics.listeners import StatusDocuments
from air_magics.snapshots import CacheInfo, LoaderTimes
from air_magics.status import read_status

SVG = "{http://www.w3.org/2000/svg}"


def _event(step: int, t: float, *, rank: int = 0, pid: int | None = None, files: int = 0, **kw) -> LoaderEvent:
    """A loader event at *step*: 8 items per step, 1 MB read per step, 10 ms wait and 30 ms compute per step."""
    stages = {
        "listing": 0.001 * step,
        "storage_read": 0.004 * step,
        "cache_write": 0.002 * step,
        "handover": 0.0,
        "transform": 0.003 * step,
        "collate": 0.001 * step,
    }
    timing = LoaderTimes(
        step, 0.01 * step, 0.03 * step, stages=stages, items=8 * step, read_bytes=1_000_000 * step, **kw
    )
    return LoaderEvent(
        timing=timing,
        time=t,
        rank=rank,
        world=2 if pid else 1,
        pid=pid or os.getpid(),
        launch="L" if pid else None,
        files=files,
    )


def _history(steps, dt=0.5, hits=None):
    h = LoaderHistory()
    for i, s in enumerate(steps):
        cache = {"hits": hits[i][0], "misses": hits[i][1]} if hits else None
        h.add(_event(s, 1000.0 + i * dt).to_dict(), 1000.0 + i * dt, cache)
    return h


def _doc(h: LoaderHistory, **kw):
    return {"steps": int(h.rows[-1][1]) if h.rows else 0, "history": h.document(), **kw}


def _points(svg: str) -> list[tuple[str, float, float, float, str]]:
    root = ET.fromstring(svg)
    return [
        (
            c.get("data-series"),
            float(c.get("data-x")),
            float(c.get("data-y")),
            float(c.get("cy")),
            c.find(f"{SVG}title").text,
        )
        for c in root.iter(f"{SVG}circle")
    ]


def _panel(spec, pid):
    return next(p for p in spec["panels"] if p["id"] == pid)


# -- history ----------------------------------------------------------------------------------------
def test_history_keeps_running_totals_and_a_new_loader_starts_again():
    h = _history([10, 20, 30], hits=[(0, 10), (5, 15), (20, 20)])
    rows = history_rows(_doc(h))
    assert [r["step"] for r in rows] == [10, 20, 30]
    assert rows[1]["items"] == 160 and rows[1]["bytes"] == 20_000_000 and rows[1]["hits"] == 5
    assert rows[2]["storage"] == pytest.approx(0.15)  # listing + storage read: the verdict's storage group
    assert set(rows[0]) == set(FIELDS)
    h.add(_event(3, 2000.0).to_dict(), 2000.0)  # steps went back: another loader in this process
    assert [r[1] for r in h.rows] == [3]


def test_history_stays_bounded_keeping_the_whole_run():
    h = _history(range(1, 5 * CAPACITY + 1))
    assert len(h.rows) <= CAPACITY
    steps = [r[1] for r in h.rows]
    assert steps[0] == 1 and steps[-1] == 5 * CAPACITY and steps == sorted(steps)
    with pytest.raises(ValueError, match="capacity=2"):
        LoaderHistory(2)


@pytest.mark.parametrize(
    "bad",
    [None, "x", {"fields": "t", "rows": []}, {"fields": ["t"], "rows": [[1, 2]]}, {"fields": ["t"], "rows": [["a"]]}],
)
def test_a_malformed_history_is_no_history(bad):
    assert history_rows({"history": bad}) == []
    assert training_spec([{"history": bad}]) is None


# -- spec -------------------------------------------------------------------------------------------
def test_rates_per_interval_from_the_totals():
    h = _history([10, 20, 40, 40, 50], dt=0.5, hits=[(0, 0), (0, 10), (10, 20), (10, 20), (40, 20)])
    spec = training_spec([_doc(h, verdict="compute-bound ...", verdict_kind="compute-bound")])
    items = _panel(spec, "items")["series"][0]["points"]
    # 10 steps x 8 items in 0.5 s; 20 steps; no step (an epoch's end: no rate, no point); 10 steps
    assert items == [[20, 160.0], [40, 320.0], [50, 160.0]]
    assert _panel(spec, "mbps")["series"][0]["points"] == [[20, 20.0], [40, 40.0], [50, 20.0]]
    assert [p[1] for p in _panel(spec, "wait")["series"][0]["points"]] == [25.0, 25.0, 25.0]  # no time: no point
    # hits: 0 of 10, 10 of 20, no lookups (no point), 30 of 30
    assert _panel(spec, "hits")["series"][0]["points"] == [[20, 0.0], [40, 50.0], [50, 100.0]]
    stages = {s["name"]: s["points"] for s in _panel(spec, "stages")["series"]}
    assert stages["storage"] == [[20, 0.005], [40, 0.005], [50, 0.005]]  # seconds per step; 0 steps: no point
    assert stages["cache write"][0] == [20, 0.002] and stages["hand-over"][0] == [20, 0.0]
    assert spec["verdict_kind"] == "compute-bound" and spec["steps"] == 50


def test_the_wait_panel_draws_the_verdicts_own_thresholds():
    spec = training_spec([_doc(_history([10, 20]))])
    bands = _panel(spec, "wait")["bands"]
    assert [(b["from"], b["to"]) for b in bands] == [
        (0.0, COMPUTE_BOUND_BELOW * 100),
        (COMPUTE_BOUND_BELOW * 100, INPUT_BOUND_ABOVE * 100),
        (INPUT_BOUND_ABOVE * 100, 100.0),
    ]
    assert [b["label"] for b in bands] == ["compute-bound", "moderately input-bound", "input-bound"]
    svg = ET.fromstring(panel_svg(_panel(spec, "wait")))
    assert [r.get("data-band") for r in svg.iter(f"{SVG}rect")] == [b["label"] for b in bands]


def test_one_series_per_rank():
    h0, h1 = _history([10, 20, 30]), _history([10, 30, 50])
    spec = training_spec([_doc(h0, rank=0, verdict_kind="input-bound"), _doc(h1, rank=1)])
    assert spec["ranks"] == 2
    for pid in ("items", "mbps", "wait"):
        assert [s["name"] for s in _panel(spec, pid)["series"]] == ["rank 0", "rank 1"]
    assert _panel(spec, "items")["series"][1]["points"] == [[30, 320.0], [50, 320.0]]
    assert _panel(spec, "stages")["title"].endswith("(rank 0)")
    assert training_spec([]) is None and training_spec([{"steps": 3}]) is None


# -- drawings ---------------------------------------------------------------------------------------
def test_points_drawn_are_the_specs_values_on_the_axis():
    h = _history([10, 20, 40, 70, 80])
    spec = training_spec([_doc(h)])
    for panel in spec["panels"]:
        drawn = _points(panel_svg(panel))
        expected = [(s["name"], x, y) for s in panel["series"] for x, y in s["points"]]
        assert [(n, x, y) for n, x, y, _, _ in drawn] == expected, panel["id"]
        for name, x, y, _, title in drawn:  # hover: which series, its step and its value with the unit
            assert title == f"{name}, step {int(x):,}: {y:,.4g} {panel['unit']}"
    items = _points(panel_svg(_panel(spec, "items")))
    top = 500.0  # 320 items/s at most -> an axis to 500
    for _, _, y, cy, _ in items:
        assert cy == pytest.approx(TOP + (H - TOP - BOTTOM) * (1 - y / top), abs=0.1)
    root = ET.fromstring(panel_svg(_panel(spec, "items")))
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "items/s (items/s)" in labels and "500" in labels and "80 steps" in labels


def test_a_stacked_panel_stacks_the_drawing_not_the_values():
    spec = training_spec([_doc(_history([10, 20]))])
    drawn = _points(panel_svg(_panel(spec, "stages")))
    storage, cache = drawn[0], drawn[1]
    assert (storage[0], storage[2]) == ("storage", 0.005) and (cache[0], cache[2]) == ("cache write", 0.002)
    assert cache[3] < storage[3]  # drawn above storage: at 0.007 on the axis


def test_html_and_text_forms():
    assert "no loader history yet" in chart_html(None) and training_line(None) == "training: no loader history yet"
    spec = training_spec([_doc(_history([10, 20, 40]), verdict="input-bound on storage-latency, waiting 25.0%")])
    html = chart_html(spec)
    assert html.count("<svg") == 5 and "input-bound on storage-latency" in html
    assert html.count(">40 steps<") == 5 and spec["x"]["from"] == 20  # one step axis for every panel
    assert chart_html(spec, panels=["wait"]).count("<svg") == 1
    line = training_line(spec)
    assert line.startswith("training: step 40 · items/s ") and "320 items/s" in line and "25 %" in line
    assert "\n" not in line
    assert sparkline([0, 50, 100], top=100) == "▁▅█" and sparkline([]) == ""


# -- the status document carries the history --------------------------------------------------------
def test_status_documents_keep_the_history_with_the_caches_counters():
    docs = StatusDocuments(loader_interval=0.0)
    info = CacheInfo("/c", 1, 1, None, 0, 0, hits=3, misses=7, bytes_hit=0, bytes_fetched=0, evictions=0)
    docs(CacheEvent(stats=info, time=999.0))
    for i, step in enumerate([10, 20, 30]):
        docs(_event(step, 1000.0 + i))
    doc = read_status(f"loader-{os.getpid()}")
    rows = history_rows(doc)
    assert [r["step"] for r in rows] == [10, 20, 30] and [r["t"] for r in rows] == [1000.0, 1001.0, 1002.0]
    assert rows[-1]["hits"] == 3 and rows[-1]["misses"] == 7 and doc["items"] == 240
    spec = training_spec([doc])
    assert _panel(spec, "items")["series"][0]["points"] == [[20, 80.0], [30, 80.0]]


def test_a_train_and_a_validation_loader_in_one_process_keep_their_own_histories():
    docs = StatusDocuments(loader_interval=0.0)
    t = 1000.0
    for train_step, val_step in ((10, 2), (20, 4), (30, 6)):  # they alternate, as in an epoch loop
        t += 1
        docs(_event(train_step, t, files=800))
        t += 1
        docs(_event(val_step, t, files=40))
    val = history_rows(read_status(f"loader-{os.getpid()}"))  # the latest writer: the validation loader
    assert [r["step"] for r in val] == [2, 4, 6]
    t += 1
    docs(_event(40, t, files=800))
    train = history_rows(read_status(f"loader-{os.getpid()}"))
    assert [r["step"] for r in train] == [10, 20, 30, 40]  # not reset by the other loader's lower steps
