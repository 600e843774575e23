"""A copy's and a pack's throughput over time (air_magics.charts.throughput, widgets.job_chart): real jobs'
events in, the chart under the progress bar read back from its SVG and compared with the events' totals."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

import air_magics
from air_magics.charts.throughput import Throughput
from air_magics.widgets import copy_progress_view
from air_magics.widgets.pack_progress import pack_progress_view

SVG = "{http://www.w3.org/2000/svg}"
SRC = "/Volumes/main/raw/jc/d"


def _points(html: str) -> dict[str, list[tuple[float, float]]]:
    out = {}
    for m in re.finditer(r"<svg .*?</svg>", html, re.S):
        el = ET.fromstring(m.group(0))
        out[el.get("data-panel")] = [(float(c.get("data-x")), float(c.get("data-y"))) for c in el.iter(f"{SVG}circle")]
    return out


@pytest.fixture
def slow_src(slowfs, tmp_path):
    """A folder of 160 x 20 KB files on a FUSE mount answering each request in 4 ms: a copy of it lasts
    long enough for several progress moments."""
    backing = tmp_path / "backing" / "d"
    backing.mkdir(parents=True)
    for i in range(160):
        (backing / f"{i:03d}.bin").write_bytes(bytes([i % 251]) * (20_000 + i))
    with slowfs.mounted(tmp_path / "backing", tmp_path / "mnt", op_latency_ms=4, read_latency_ms=4):
        yield tmp_path / "mnt" / "d"


def test_the_rates_drawn_are_the_differences_of_a_real_copys_totals(slow_src, tmp_path):
    events = []
    air_magics.copy([str(slow_src)], str(tmp_path / "out"), listeners=[events.append], workers=2)
    moments = [(e.progress.elapsed, e.progress.bytes_done, e.progress.files_done) for e in events]
    tp = Throughput(min_gap_s=0.0)
    kept = [m for m in moments if tp.add(*m)]
    assert len(kept) >= 2 and kept[-1][1] == sum(20_000 + i for i in range(160))
    drawn = _points(tp.html())
    assert set(drawn) == {"job-mbps", "job-files"}
    for (t0, b0, f0), (t1, b1, f1), (x, mbps), (_, fps) in zip(
        kept[:-1], kept[1:], drawn["job-mbps"], drawn["job-files"], strict=True
    ):
        assert x == pytest.approx(t1, rel=1e-3)
        assert mbps == pytest.approx((b1 - b0) / (t1 - t0) / 1e6, rel=1e-3)
        assert fps == pytest.approx((f1 - f0) / (t1 - t0), rel=1e-3)
    # the area under the MB/s line is the bytes copied between the first and the last moment
    area = sum(m * (t1 - t0) for (t0, *_), (t1, *_), (_, m) in zip(kept[:-1], kept[1:], drawn["job-mbps"], strict=True))
    assert area * 1e6 == pytest.approx(kept[-1][1] - kept[0][1], rel=1e-2)


def test_the_copy_view_draws_the_whole_copy_when_it_ends(slow_src, tmp_path):
    view = copy_progress_view("copy", widget=True)
    report = air_magics.copy([str(slow_src)], str(tmp_path / "out"), listeners=[view], workers=2)
    view.close(report)
    chart = view.throughput
    assert chart.redraws >= 1 and chart.series.moments[-1][1] == report.bytes_copied
    drawn = _points(chart.widget.value)
    assert len(drawn["job-mbps"]) == len(chart.series.moments) - 1 >= 1
    assert drawn["job-mbps"][-1][0] == pytest.approx(chart.series.moments[-1][0], rel=1e-3)  # up to the end
    assert "throughput (MB/s)" in chart.widget.value and "files (files/s)" in chart.widget.value


def test_the_pack_view_draws_its_throughput(slowfs, tmp_path, monkeypatch):
    """A pack on a FUSE volume answering each request in 4 ms: long enough for several progress moments."""
    from air_magics.shards import pack

    top = tmp_path / "backing" / "main" / "raw" / "jc" / "d"
    top.mkdir(parents=True)
    for i in range(160):
        (top / f"{i:03d}.bin").write_bytes(bytes([i % 251]) * (20_000 + i))
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
    view = pack_progress_view("pack", widget=True)
    with slowfs.mounted(tmp_path / "backing", tmp_path / "mnt", op_latency_ms=4, read_latency_ms=4):
        r = pack(SRC, "/Volumes/main/raw/jc/packed", shard_size="256KiB", listeners=[view])
    view.close(r)
    moments = view.throughput.series.moments
    assert len(moments) >= 2 and moments[-1][2] == r.files == 160
    drawn = _points(view.throughput.widget.value)
    assert set(drawn) == {"job-mbps", "job-files"} and len(drawn["job-files"]) == len(moments) - 1


def test_the_series_stays_bounded_and_keeps_the_last_moment():
    tp = Throughput(capacity=8, min_gap_s=0.5)
    assert tp.add(0.1, 0, 0) and not tp.add(0.3, 10, 1)  # too soon after the one kept
    assert tp.add(0.3, 10, 1, last=True) and not tp.add(0.3, 10, 1, last=True)  # the end, once
    for i in range(1, 100):
        tp.add(0.3 + i, 1000 * i, i)
    assert len(tp.moments) <= 8 and tp.moments[0][0] == 0.1 and tp.moments[-1][0] == 99.3
    assert Throughput().html() == ""  # nothing to draw before two moments
    with pytest.raises(ValueError, match="capacity=2 must be at least 4"):
        Throughput(capacity=2)
