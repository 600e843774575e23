"""The storage charts (air_magics.charts.storage): ``%air_volume probe`` as bars and ``%air_volume ls -r``'s
size histogram, shown through the notebook's own HTML formatter (what ``%load_ext`` registers) and read
back from the SVG: each bar's value, hover title and height on the axis, against the record it came from."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import pytest

from air_magics.charts.storage import short_size, size_panel
from air_magics.charts.svg import BOTTOM, TOP, H, bars_svg
from air_magics.volumes import ProbeReport, VolumeStore
from air_magics.volumes.summary import HISTOGRAM_BOUNDS

SVG = "{http://www.w3.org/2000/svg}"


def _svgs(html: str) -> dict[str, ET.Element]:
    """Each ``<svg data-panel=...>`` of *html*, parsed, by panel id."""
    out = {}
    for m in re.finditer(r"<svg .*?</svg>", html, re.S):
        el = ET.fromstring(m.group(0))
        out[el.get("data-panel")] = el
    return out


def _bars(svg: ET.Element) -> list[tuple[str, float, str]]:
    return [(r.get("data-label"), float(r.get("data-y")), r.find(f"{SVG}title").text) for r in svg.iter(f"{SVG}rect")]


def _axis_top(svg: ET.Element) -> float:
    """The y axis' top value, read from its labels (0, half, top)."""
    return max(
        float(t.text.replace(",", ""))
        for t in svg.iter(f"{SVG}text")
        if t.get("text-anchor") == "end" and t.text[0].isdigit()
    )


@pytest.fixture
def ip(ip, monkeypatch):
    """The test shell with HTML on, as in a notebook's kernel (a terminal shell leaves it off)."""
    monkeypatch.setattr(ip.display_formatter.formatters["text/html"], "enabled", True)
    return ip


def _html(ip, value) -> str:
    data, _ = ip.display_formatter.format(value)
    return data["text/html"]


def test_a_probe_shows_its_numbers_as_bars_with_units(ip, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(6):
        (data / f"f{i}.bin").write_bytes(os.urandom(64 << 10))
    report = ip.run_line_magic("air_volume", f"probe {data}")
    html = _html(ip, report)
    assert "<table>" in html and "advice:" in html  # the table stays, the chart is under it
    svgs = _svgs(html)
    assert set(svgs) == {"probe-latency", "probe-read", "probe-files"}
    lat = _bars(svgs["probe-latency"])
    assert lat[0][1] == pytest.approx(report.op_latency_s * 1000, rel=1e-3)
    assert lat[0][2].endswith(" ms") and "(ms)" in ET.tostring(svgs["probe-latency"], encoding="unicode")
    read = _bars(svgs["probe-read"])
    assert [b[0] for b in read] == ["1 stream", f"{report.streams} streams"]
    assert read[0][1] == pytest.approx(report.read_mb_s, rel=1e-3)
    assert read[1][1] == pytest.approx(report.parallel_read_mb_s, rel=1e-3)
    assert all(b[2].endswith(" MB/s") for b in read)
    files = _bars(svgs["probe-files"])
    assert files[0][1] == pytest.approx(report.files_per_s, rel=1e-3) and files[0][2].endswith(" files/s")
    assert repr(report) == str(report) and "<svg" not in repr(report)  # the text form is the fallback


def test_bar_heights_are_their_values_on_the_axis():
    report = ProbeReport("/x", 0.0102, 25.4, 39.8, 812.0, "advice", 56, 3 << 20, 8192, 8, 1.2)
    from air_magics.charts.storage import probe_panels

    panel = next(p for p in probe_panels(report) if p["id"] == "probe-read")
    svg = ET.fromstring(bars_svg(panel))
    top = _axis_top(svg)
    assert top == 50  # 39.8 MB/s: the axis ends at the next 1, 2 or 5 times a power of ten
    ph = H - TOP - BOTTOM
    for rect in svg.iter(f"{SVG}rect"):
        assert float(rect.get("height")) == pytest.approx(float(rect.get("data-y")) / top * ph, abs=0.2)
        assert float(rect.get("y")) + float(rect.get("height")) == pytest.approx(TOP + ph, abs=0.2)
    assert [b[2] for b in _bars(svg)] == ["read, 1 stream: 25.4 MB/s", "read, 8 streams: 39.8 MB/s"]


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    sizes = [100] * 5 + [3000] * 4 + [50_000] * 3 + [(1 << 20) + 1]  # bins < 1K, 1-4K, 16-64K, 1-4M
    for i, n in enumerate(sizes):
        with s.open(f"/Volumes/main/raw/img/d{i % 2}/f{i:02d}.bin", "wb") as f:
            f.write(b"x" * n)
    return s


def test_ls_r_shows_the_size_histogram_of_every_file(ip, vol):
    listing = ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/img --limit 2")
    html = _html(ip, listing)
    svg = _svgs(html)["sizes"]
    bars = _bars(svg)
    # from the first bin with a file to the last: empty bins between are drawn (as zero), none outside
    assert [(label, count) for label, count, _ in bars] == [
        ("0", 5),
        ("1K", 4),
        ("4K", 0),
        ("16K", 3),
        ("64K", 0),
        ("256K", 0),
        ("1M", 1),
    ]
    assert bars[0][2] == "< 1.0 KiB: 5 files" and bars[3][2] == "16.0 KiB - 64.0 KiB: 3 files"
    assert sum(c for _, c, _ in bars) == listing.n_files == 13  # every file, not the 2 rows shown
    assert "file sizes (files)" in ET.tostring(svg, encoding="unicode")
    assert "<table>" in html and "sizes: < 64 KiB: 12, 1 - 16 MiB: 1" in repr(listing)  # text kept


def test_a_plain_listing_and_an_empty_one_have_no_histogram(ip, vol):
    assert "<svg" not in _html(ip, ip.run_line_magic("air_volume", "ls /Volumes/main/raw/img/d0"))
    vol.create("main.raw.empty")
    empty = ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/empty")
    assert empty.size_histogram() == [] and "<svg" not in _html(ip, empty)


def test_the_histogram_bins_and_labels():
    assert HISTOGRAM_BOUNDS[0] == 1024 and HISTOGRAM_BOUNDS[-1] == 4 << 30
    assert [short_size(n) for n in (0, 1024, 256 << 10, 1 << 30, 4 << 30)] == ["0", "1K", "256K", "1G", "4G"]
    panel = size_panel([(4 << 30, None, 2)])
    assert panel["bars"] == [{"label": "4G", "value": 2, "title": ">= 4.0 GiB"}]
    many = ET.fromstring(bars_svg(size_panel([(0, 1024, 1)] + [(b, b * 4, 1) for b in HISTOGRAM_BOUNDS[:-1]])))
    assert len(list(many.iter(f"{SVG}rect"))) == 12  # every bin a bar with its title, labels thinned to fit
    assert 0 < len([t for t in many.iter(f"{SVG}text") if t.get("text-anchor") == "middle"]) < 12
