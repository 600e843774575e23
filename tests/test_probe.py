"""``probe`` and ``%air_volume probe``: a folder's storage measured on a real slow FUSE volume
(benchmarks/harness/fusevol.py) and on local folders; it reads a sample and writes nothing.

The two rate bounds below are the issue's stated acceptance criteria (a 10 ms volume reads as 7-20 ms;
a 40 MB/s cap shows in the read rates); everything else is about what the probe says, not how fast."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from air_magics.errors import AirError, ProbeError, VolumeNotFoundError
from air_magics.volumes import ProbeReport, VolumePath, VolumeStore, probe
from air_magics.volumes.probe import probe_advice

FOLDER = "/Volumes/main/raw/img/d"


def _tree(top: Path, big: int = 8, big_size: int = 256 << 10, small: int = 48) -> None:
    top.mkdir(parents=True, exist_ok=True)
    for i in range(big):
        (top / f"big{i}.bin").write_bytes(os.urandom(big_size))
    sub = top / "sub"
    sub.mkdir(exist_ok=True)
    for i in range(small):
        (sub / f"s{i:03d}.bin").write_bytes(os.urandom(8 << 10))


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.stat(os.path.join(d, name), follow_symlinks=False)
            out[os.path.relpath(os.path.join(d, name), root)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def volume(slowfs, tmp_path, monkeypatch):
    """``volume(**fusevol options)``: /Volumes/main/raw/img/d (8 x 256 KiB + 48 x 8 KiB) on a FUSE mount."""
    backing = tmp_path / "backing"
    _tree(backing / "main" / "raw" / "img" / "d")
    (backing / "main" / "raw" / "img" / "empty").mkdir()

    def mount(**options):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        return slowfs.mounted(backing, tmp_path / "mnt", **options)

    mount.backing = backing
    return mount


def test_a_10ms_volume_reads_as_at_least_7_ms_and_the_probe_writes_nothing(volume):
    before = _snapshot(volume.backing)
    with volume(op_latency_ms=10):
        listed = _snapshot(Path(os.environ["AIR_VOLUMES_MOUNT"]))
        report = probe(FOLDER)
        assert _snapshot(Path(os.environ["AIR_VOLUMES_MOUNT"])) == listed
    assert _snapshot(volume.backing) == before  # no file made, none changed
    assert isinstance(report, ProbeReport)
    assert report.op_latency_s >= 0.007, report  # the volume's 10 ms (a busy machine only adds)
    assert report.files == 56 and report.median_file_bytes == 8 << 10
    assert report.bytes_read > 0 and report.read_mb_s > 0 and report.parallel_read_mb_s > 0
    assert report.files_per_s > 0 and report.streams == 8  # one stream per large file
    # small files behind a 10 ms round trip: the advice is the pack command for this folder
    assert f"`%air_volume pack {FOLDER} {FOLDER}_packed`" in report.advice


def test_a_40_mb_s_cap_shows_in_the_read_rates(volume):
    with volume(op_latency_ms=1, read_latency_ms=0, mbps=40):
        report = probe(FOLDER)
    assert report.read_mb_s < 48 and report.parallel_read_mb_s < 48, report


def test_a_second_probe_still_sees_the_latency(volume):
    # the kernel caches attributes: the second probe's stats are answered locally, so it times opens
    with volume(op_latency_ms=10, attr_timeout=60, entry_timeout=60):
        probe(FOLDER)
        again = probe(FOLDER)
    assert again.op_latency_s >= 0.007, again


def test_an_empty_folder_and_a_missing_path_on_a_volume(volume):
    with volume(op_latency_ms=0):
        with pytest.raises(ProbeError, match="holds no files to probe") as empty:
            probe("/Volumes/main/raw/img/empty")
        assert "/Volumes/main/raw/img/empty" in str(empty.value)
        with pytest.raises(VolumeNotFoundError) as missing:
            probe("/Volumes/main/raw/img/nope")
        msg = str(missing.value)
        assert "'/Volumes/main/raw/img/nope' does not exist" in msg and "`%air_volume ls /Volumes/main/raw/img`" in msg
        with pytest.raises(VolumeNotFoundError, match="main.raw.nope"):
            probe("/Volumes/main/raw/nope/x")  # no such volume: the store's own message


def test_a_local_folder_and_a_single_file(tmp_path):
    _tree(tmp_path / "data", big=2, small=5)
    before = _snapshot(tmp_path)
    report = probe(tmp_path / "data", budget_s=5)
    assert _snapshot(tmp_path) == before
    assert report.path == str(tmp_path / "data") and report.files == 7
    assert report.op_latency_s < 0.002 and "local-disk speed" in report.advice
    one = probe(str(tmp_path / "data" / "big0.bin"), budget_s=5)
    assert one.files == 1 and one.streams == 1 and one.bytes_read >= 256 << 10


def test_large_files_are_read_in_part(tmp_path):
    # 4 sparse files of 512 MiB: one stream stops at 64 MiB, the parallel streams at 256 MiB in all,
    # files/s reads the first MiB of each: a sample, never the folder
    for i in range(4):
        with open(tmp_path / f"huge{i}.bin", "wb") as f:
            f.truncate(512 << 20)
    report = probe(tmp_path, budget_s=10)
    assert report.files == 4 and report.streams == 4
    assert report.bytes_read <= (64 + 256 + 4) << 20, report.bytes_read


def test_local_errors_name_the_path(tmp_path):
    with pytest.raises(VolumeNotFoundError, match=f"'{tmp_path / 'nope'}' does not exist"):
        probe(tmp_path / "nope")
    (tmp_path / "empty" / "deeper").mkdir(parents=True)
    with pytest.raises(ProbeError, match="holds no files") as info:
        probe(tmp_path / "empty")
    assert isinstance(info.value, AirError) and isinstance(info.value, ValueError)


def test_the_embedded_volume_through_a_given_store(tmp_path):
    st = VolumeStore(tmp_path / "root")
    st.create("main.me.raw")
    with st.open("/Volumes/main/me/raw/a/x.bin", "wb") as f:
        f.write(b"x" * 5000)
    report = probe("main.me.raw/a", store=st, budget_s=5)
    assert report.path == "/Volumes/main/me/raw/a" and report.files == 1 and report.bytes_read >= 5000


def test_a_volume_registered_to_an_fsspec_url(tmp_path):
    import uuid

    st = VolumeStore()
    st.register("ext.mem.v", f"memory://probe-{uuid.uuid4().hex}")
    for i in range(5):
        with st.open(f"/Volumes/ext/mem/v/d/sub/f{i}.bin", "wb") as f:
            f.write(bytes([i]) * (1000 * (i + 1)))
    report = probe("/Volumes/ext/mem/v/d", store=st, budget_s=5)
    assert report.files == 5 and report.median_file_bytes == 3000 and report.bytes_read >= 15000
    with pytest.raises(VolumeNotFoundError, match="'/Volumes/ext/mem/v/nope' does not exist"):
        probe("/Volumes/ext/mem/v/nope", store=st)


def test_the_budget_bounds_a_probe_of_a_slow_volume(volume):
    # at 100 ms per request the serial stats alone would take 2.4 s and the reads several more
    with volume(op_latency_ms=100, read_latency_ms=20):
        report = probe(FOLDER, budget_s=1)
    # the budget stops it: 56 files' stats alone, one after another, are 5.6 s at 100 ms each
    assert report.seconds < 5.6, report
    assert report.op_latency_s >= 0.07, report


def test_the_report_shows_as_a_short_table():
    r = ProbeReport(FOLDER, 0.0102, 25.4, 39.8, 812.0, "the advice", 56, 3 << 20, 8192, 8, 1.2)
    text = str(r)
    assert text.splitlines()[0] == f"probe {FOLDER}: 56 files (median 8.0 KiB), 3.0 MiB read in 1.2 s"
    assert "10.2 ms" in text and "25.4 MB/s" in text and "39.8 MB/s" in text and "812 files/s" in text
    assert "read, 8 streams" in text and text.endswith("advice: the advice")
    assert repr(r) == text
    html = r._repr_html_()
    assert html.count("<tr>") == 4 and "10.2 ms" in html and "advice: the advice" in html


def test_the_advice_in_each_case():
    local = probe_advice(0.00001, 900, 2000, 16, 30000, 8192, FOLDER)
    assert local.startswith("local-disk speed")
    small = probe_advice(0.010, 10, 80, 16, 700, 8192, FOLDER)
    assert "10.0 ms" in small and "8.0 KiB" in small and "700 files/s" in small
    assert f"`%air_volume pack {FOLDER} {FOLDER}_packed`" in small
    assert "`%air_volume pack SRC DEST`" in probe_advice(0.010, 10, 80, 16, 700, 8192, None)
    capped = probe_advice(0.010, 38, 40, 16, 700, 4 << 20, FOLDER)
    assert "38.0 MB/s" in capped and "will not help" in capped and "cache" in capped
    wide = probe_advice(0.010, 40, 300, 16, 700, 4 << 20, FOLDER)
    assert "16 streams read 300.0 MB/s" in wide and "prefetch" in wide
    for text in (local, small, capped, wide):
        assert "\n" not in text and ". " not in text  # one sentence


# the magic


def test_magic_returns_the_report(volume, ip):
    with volume(op_latency_ms=2):
        report = ip.run_line_magic("air_volume", f"probe {FOLDER}")
        assert isinstance(report, ProbeReport) and report.path == FOLDER and report.files == 56
        ip.run_line_magic("air_volume", "use main.raw.img")
        rel = ip.run_line_magic("air_volume", "probe d -o probed")  # relative to the default volume
        assert rel.path == FOLDER and ip.user_ns["probed"] is rel


def test_magic_probes_a_local_folder(ip, tmp_path):
    _tree(tmp_path / "data", big=1, small=3)
    assert ip.run_line_magic("air_volume", f"probe {tmp_path / 'data'}").files == 4


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("probe", "%air_volume probe takes PATH"),
        ("probe a b", "%air_volume probe takes PATH"),
        ("probe /Volumes/main/raw/img -r", "-r only applies to `ls`"),
        ("probe /Volumes/main/nope/x", "main.nope.x"),
    ],
)
def test_magic_usage_errors(ip, line, error):
    with pytest.raises(UsageError, match=error):
        ip.run_line_magic("air_volume", line)


def test_magic_errors_on_missing_and_empty_folders(ip, tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        ip.run_line_magic("air_volume", f"probe {tmp_path / 'nope'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="holds no files to probe"):
        ip.run_line_magic("air_volume", f"probe {tmp_path / 'empty'}")


def test_probe_completes_as_a_command_and_its_path_relative_to_the_default_volume():
    from air_magics.magics.completion import complete_line

    assert complete_line("%air_volume pro", "pro") == ("command", ["probe"], True)
    st = VolumeStore()
    st.create("main.me.raw")
    with st.open("/Volumes/main/me/raw/imgs/x.bin", "wb") as f:
        f.write(b"x")
    assert complete_line("%air_volume probe /Volumes/main/me/raw/im", "/Volumes/main/me/raw/im")[1] == [
        "/Volumes/main/me/raw/imgs/"
    ]


def test_a_volume_probe_leaves_its_rates_for_the_views_a_local_one_does_not(tmp_path):
    from air_magics.status import list_status, read_status

    store = VolumeStore()
    store.create("main.raw.rates")
    _tree(Path(store.locate(VolumePath.parse("/Volumes/main/raw/rates")).path) / "d", big=2, small=4)
    r = probe("/Volumes/main/raw/rates/d", store=store, budget_s=2)
    doc = read_status("probe-main.raw.rates")
    assert doc["path"] == "/Volumes/main/raw/rates/d" and doc["parallel_read_mb_s"] == r.parallel_read_mb_s
    assert doc["streams"] == r.streams and doc["read_mb_s"] == r.read_mb_s
    _tree(tmp_path / "local", big=1, small=2)
    probe(tmp_path / "local", budget_s=1)
    assert [d["path"] for d in list_status("probe-")] == ["/Volumes/main/raw/rates/d"]
