"""The loader's verdict (air_magics.datasets.verdict): pure numbers in, kind + bottleneck + one-sentence fix out.

Each scenario's numbers are what the loader would measure in that situation."""

from __future__ import annotations

import subprocess
import sys

import pytest

from air_magics.datasets.verdict import (
    BOTTLENECKS,
    KINDS,
    MIN_STEPS,
    ROUND_TRIP_MAX_S,
    SMALL_REQUEST_BYTES,
    StageTimes,
    Verdict,
    verdict,
)

SRC = "/Volumes/main/raw/imgs/train"


def _one_sentence(text: str) -> None:
    assert text and "\n" not in text
    assert text.count(". ") == 0, text  # one sentence: clauses joined by ':' and ';', never a second sentence


def test_before_ten_steps_the_verdict_is_warming_up():
    t = StageTimes(storage_read=50, wait=9, compute=1, requests=100, read_bytes=100 << 10, request_seconds=1)
    v = verdict(t, steps=MIN_STEPS - 1)
    assert v.kind == "warming-up" and v.bottleneck is None
    assert "not enough data yet" in v.advice and f"now {MIN_STEPS - 1}" in v.advice
    assert verdict(t, steps=MIN_STEPS).kind == "input-bound"


@pytest.mark.parametrize(
    ("wait", "compute", "kind"),
    [
        (0.0, 10.0, "compute-bound"),
        (0.49, 9.51, "compute-bound"),  # 4.9%
        (0.5, 9.5, "moderately input-bound"),  # 5% exactly
        (2.0, 8.0, "moderately input-bound"),  # 20% exactly
        (2.1, 7.9, "input-bound"),
        (9.0, 1.0, "input-bound"),
    ],
)
def test_kind_follows_the_wait_share(wait, compute, kind):
    v = verdict(StageTimes(storage_read=5, wait=wait, compute=compute), steps=100, source=SRC)
    assert v.kind == kind and v.kind in KINDS
    assert v.wait_share == pytest.approx(wait / (wait + compute))
    if kind == "compute-bound":
        assert v.bottleneck is None and "not the input pipeline" in v.advice
    else:
        assert v.bottleneck in BOTTLENECKS


def test_small_files_at_10ms_each_are_latency_bound_and_the_advice_is_the_pack_command():
    # 2,000 files of 64 KiB, 3 requests each (lookup, open, read) at ~10 ms
    t = StageTimes(
        listing=0.5,
        storage_read=38.0,
        cache_write=1.0,
        transform=2.0,
        collate=0.2,
        handover=0.3,
        wait=18.0,
        compute=2.0,
        requests=6000,
        read_bytes=2000 * 64 * 1024,
        request_seconds=62.0,
        items=2000,
    )
    v = verdict(t, steps=125, source=SRC)
    assert (v.kind, v.bottleneck) == ("input-bound", "storage-latency")
    assert v.wait_share == pytest.approx(0.9)
    assert "`%air_volume pack /Volumes/main/raw/imgs/train /Volumes/main/raw/imgs/train_packed`" in v.advice
    assert "10.3 ms" in v.advice and "21 KiB" in v.advice  # the measured per-request facts
    _one_sentence(v.advice)


def test_latency_advice_without_a_source_or_with_a_local_folder_names_the_placeholders():
    t = StageTimes(storage_read=10, wait=5, compute=5, requests=1000, read_bytes=1000 * 4096, request_seconds=10)
    for source in (None, "/data/local/folder"):
        v = verdict(t, steps=20, source=source)
        assert v.bottleneck == "storage-latency"
        assert "`%air_volume pack SRC DEST`" in v.advice


def test_a_whole_volume_packs_into_another_volume():
    t = StageTimes(storage_read=10, wait=5, compute=5, requests=1000, read_bytes=1000 * 4096, request_seconds=10)
    v = verdict(t, steps=20, source="/Volumes/main/raw/imgs")
    assert "%air_volume create main.raw.imgs_packed" in v.advice


def test_two_mib_files_under_a_40_mb_s_cap_are_bandwidth_bound_and_packing_is_not_advised():
    # 400 files of 2 MiB through a 40 MB/s link, 8 in flight: each request takes 8 x 2 MiB / 40 MB/s ~ 0.42 s
    n, size = 400, 2 << 20
    wall = n * size / 40e6  # ~21 s
    t = StageTimes(
        storage_read=2 * wall * 0.95,  # two workers, blocked on reads most of the time
        transform=1.0,
        wait=wall - 2.0,
        compute=2.0,
        requests=n,
        read_bytes=n * size,
        request_seconds=n * 8 * size / 40e6,
        items=n,
    )
    v = verdict(t, steps=100, source=SRC)
    assert (v.kind, v.bottleneck) == ("input-bound", "storage-bandwidth")
    assert "40.0 MB/s" in v.advice and "2.0 MiB requests" in v.advice
    assert "packing will not help" in v.advice and "parallel streams" in v.advice and "cache" in v.advice
    assert "%air_volume pack" not in v.advice
    _one_sentence(v.advice)


def test_one_stream_of_2_mib_files_is_bandwidth_bound_too():
    # one request at a time: 2 MiB / 40 MB/s + 10 ms = 62 ms, fast enough for a round trip but large
    t = StageTimes(storage_read=10, wait=9, compute=1, requests=100, read_bytes=100 * (2 << 20), request_seconds=6.2)
    assert verdict(t, steps=50).bottleneck == "storage-bandwidth"


def test_small_requests_queued_behind_a_saturated_link_are_bandwidth_bound():
    # 512 KiB each, 16 in flight on a 40 MB/s link: 0.21 s per request, beyond any round trip
    per = 16 * (512 << 10) / 40e6
    assert per > ROUND_TRIP_MAX_S
    t = StageTimes(
        storage_read=10, wait=9, compute=1, requests=100, read_bytes=100 * (512 << 10), request_seconds=100 * per
    )
    assert verdict(t, steps=50).bottleneck == "storage-bandwidth"


def test_the_rule_sits_at_the_documented_thresholds():
    def kind(size: int, per_request: float) -> str | None:
        t = StageTimes(
            storage_read=10, wait=9, compute=1, requests=10, read_bytes=10 * size, request_seconds=10 * per_request
        )
        return verdict(t, steps=50).bottleneck

    assert kind(SMALL_REQUEST_BYTES - 1, ROUND_TRIP_MAX_S) == "storage-latency"
    assert kind(SMALL_REQUEST_BYTES, 0.001) == "storage-bandwidth"
    assert kind(100 << 10, ROUND_TRIP_MAX_S * 1.01) == "storage-bandwidth"
    assert kind(100 << 10, 0.08) == "storage-latency"  # a cross-region round trip: still latency


def test_storage_without_request_facts_is_taken_as_latency_bound():
    v = verdict(StageTimes(storage_read=10, wait=9, compute=1), steps=50, source=SRC)
    assert v.bottleneck == "storage-latency" and "storage round trips" in v.advice
    assert "%air_volume pack" in v.advice


def test_listing_counts_as_storage():
    v = verdict(StageTimes(listing=8, transform=5, wait=9, compute=1), steps=50)
    assert v.bottleneck == "storage-latency"


def test_transform_bound_advice_says_how_many_workers():
    # 1,000 items of 20 ms transform each over 2 workers; the loop computes 1 s in 100 steps (10 ms per step)
    t = StageTimes(
        storage_read=0.5,
        cache_write=0.2,
        transform=20.0,
        collate=0.3,
        handover=0.5,
        wait=10.0,
        compute=1.0,
        requests=1000,
        read_bytes=1000 * 4096,
        request_seconds=0.5,
        items=1000,
    )
    v = verdict(t, steps=100, workers=2, cpus=64)
    assert (v.kind, v.bottleneck) == ("input-bound", "transform")
    # a worker is busy 21.5 s / 100 steps = 0.215 s per step against 0.01 s of compute: 21.5 -> x1.25 -> 27
    assert "num_workers=27 (now 2)" in v.advice
    assert "20.3 ms per item" in v.advice and "10.0 ms of compute per step" in v.advice
    _one_sentence(v.advice)


def test_transform_bound_with_too_few_cores_says_make_it_cheaper():
    t = StageTimes(transform=20.0, wait=10.0, compute=1.0, items=1000)
    v = verdict(t, steps=100, workers=2, cpus=8)
    assert v.bottleneck == "transform"
    assert "needs num_workers=25" in v.advice and "8 cores" in v.advice and "cheaper" in v.advice


def test_transform_bound_a_little_recommends_at_least_one_more_worker():
    t = StageTimes(transform=1.2, wait=0.2, compute=1.0)
    v = verdict(t, steps=100, workers=3, cpus=16)
    assert v.kind == "moderately input-bound" and v.bottleneck == "transform"
    assert "num_workers=4 (now 3)" in v.advice and "per batch" in v.advice  # no item count: per batch


def test_transform_bound_with_no_compute_uses_every_core():
    v = verdict(StageTimes(transform=5.0, wait=5.0), steps=20, workers=2, cpus=6)
    assert v.wait_share == 1.0 and "num_workers=6" in v.advice


def test_handover_bound_advice_is_fewer_bigger_messages():
    t = StageTimes(storage_read=1, transform=1, handover=6.0, wait=3, compute=7)
    v = verdict(t, steps=200)
    assert (v.kind, v.bottleneck) == ("input-bound", "handover")
    assert "30.0 ms per step" in v.advice and "batch_size" in v.advice and "fewer, bigger messages" in v.advice


def test_cache_bound_advice_is_a_faster_disk():
    t = StageTimes(storage_read=1, cache_write=4.0, transform=1, wait=1, compute=9)
    v = verdict(t, steps=100)
    assert (v.kind, v.bottleneck) == ("moderately input-bound", "cache")
    assert "AIR_CACHE_DIR" in v.advice and "disk" in v.advice


def test_waiting_with_no_stage_timed_says_so():
    v = verdict(StageTimes(wait=5, compute=5), steps=20)
    assert v.kind == "input-bound" and v.bottleneck is None and "no input stage was timed" in v.advice


def test_stages_str_and_dict():
    t = StageTimes(
        storage_read=4, transform=1, wait=3, compute=7, requests=10, read_bytes=10 << 10, request_seconds=0.1
    )
    v = verdict(t, steps=100, source=SRC)
    assert v.stages == {
        "listing": 0.0,
        "storage_read": 4.0,
        "cache_write": 0.0,
        "handover": 0.0,
        "transform": 1.0,
        "collate": 0.0,
        "wait": 3.0,
        "compute": 7.0,
    }
    line = str(v)
    assert "\n" not in line and line.startswith("input-bound on storage-latency, waiting 30.0% of the time: ")
    assert v.to_dict()["bottleneck"] == "storage-latency"
    assert str(verdict(t, steps=2)).startswith("warming-up, waiting 30.0%")
    with pytest.raises(AttributeError):
        v.kind = "x"  # frozen
    assert isinstance(v, Verdict)


def test_the_module_imports_neither_torch_nor_ipython():
    code = "import sys, air_magics.datasets.verdict; print('torch' in sys.modules, 'IPython' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_sub_millisecond_requests_are_a_local_disk_not_latency():
    """A folder on local disk answers in microseconds: its waits are the cache copies, and the
    advice never says to pack it."""
    from air_magics.datasets.verdict import StageTimes, verdict

    t = StageTimes(storage_read=0.4, wait=0.3, compute=0.7, requests=480, read_bytes=480 * 12_000, request_seconds=0.05)
    v = verdict(t, steps=30, source="/Volumes/main/demo/images/train")
    assert v.bottleneck == "cache" and "pack" not in v.advice and "first epoch" in v.advice
