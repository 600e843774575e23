"""One rule for "is the loop waiting for data?" (issue 37.6): the thresholds live in
air_magics.datasets.verdict only; the cache view and the sidebar show the kind the status document
carries; a verdict never blames a stage that shows as 0.0 s, never contradicts the data-wait line
above it, and rounds the share once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air_magics.datasets.timing import LoaderTiming
from air_magics.datasets.verdict import (
    BOTTLENECKS,
    MIN_STAGE_SECONDS,
    MIN_STEPS,
    StageTimes,
    kind_of,
    stage_seconds,
    verdict,
)
from air_magics.events import LoaderEvent
from air_magics.io.units import fmt_share
from air_magics.widgets.cache_view import cache_text

LAB_SRC = Path(__file__).resolve().parents[1] / "labextension" / "src"
CACHE = {"hits": 900, "misses": 100, "evictions": 0, "bytes": 1000, "entries": 10}


@pytest.mark.parametrize(
    ("share", "kind", "shown"),
    [
        (0.0494, "compute-bound", "4.9%"),
        (0.0496, "moderately input-bound", "5.0%"),  # shown as 5.0%: not "under 5%"
        (0.2004, "moderately input-bound", "20.0%"),  # shown as 20.0%: not "above 20%"
        (0.2006, "input-bound", "20.1%"),
    ],
)
def test_the_kind_is_decided_on_the_share_as_shown(share, kind, shown):
    assert kind_of(share, MIN_STEPS) == kind and fmt_share(share) == shown
    v = verdict(StageTimes(storage_read=5, wait=share * 100, compute=(1 - share) * 100), steps=50)
    assert v.kind == kind and str(v).startswith(f"{kind}") and f"waiting {shown} of the time" in str(v)
    assert kind_of(share, MIN_STEPS - 1) == "warming-up"


def test_the_demo_notebooks_tiny_wait_names_no_stage_that_took_nothing():
    """The 02 notebook's warm loop: 19 ms of waiting, 12 ms of local reads; it used to say "on cache:
    copying files into the local cache takes 0.0 s"."""
    t = StageTimes(
        storage_read=0.012,
        handover=0.001,
        wait=0.019,
        compute=0.304,
        requests=480,
        read_bytes=480 * 12_900,
        request_seconds=0.001,
    )
    v = verdict(t, steps=31)
    assert v.kind == "moderately input-bound" and v.bottleneck is None
    assert "0.0 s" not in str(v) and "too little to name a cause" in v.advice
    assert str(v).count("%") == 1  # the share, once


def test_a_local_disks_copy_into_the_cache_counts_its_reads():
    t = StageTimes(storage_read=0.4, wait=0.3, compute=0.7, requests=480, read_bytes=480 * 12_000, request_seconds=0.05)
    v = verdict(t, steps=30)
    assert v.bottleneck == "cache" and stage_seconds(t, "cache") == pytest.approx(0.4)
    assert "takes 0.4 s (13.3 ms per step)" in v.advice


_secs = st.one_of(st.just(0.0), st.floats(0.0, 0.2), st.floats(0.0, 50.0))


@settings(max_examples=300, deadline=None)
@given(
    listing=_secs,
    storage=_secs,
    cache=_secs,
    handover=_secs,
    transform=_secs,
    collate=_secs,
    wait=_secs,
    compute=_secs,
    requests=st.integers(0, 10_000),
    per_request=st.floats(0.0, 0.5),
    size=st.integers(1, 8 << 20),
    steps=st.integers(0, 100_000),
)
def test_any_verdict_blames_only_a_stage_that_took_time_and_shows_the_share_once(
    listing, storage, cache, handover, transform, collate, wait, compute, requests, per_request, size, steps
):
    t = StageTimes(
        listing=listing,
        storage_read=storage,
        cache_write=cache,
        handover=handover,
        transform=transform,
        collate=collate,
        wait=wait,
        compute=compute,
        requests=requests,
        read_bytes=requests * size,
        request_seconds=requests * per_request,
        items=steps * 4,
    )
    v = verdict(t, steps=steps, workers=2, cpus=8)
    line = str(v)
    assert v.kind == kind_of(t.wait_share, steps)
    if v.bottleneck is not None:
        assert v.bottleneck in BOTTLENECKS and stage_seconds(t, v.bottleneck) >= MIN_STAGE_SECONDS
        assert not re.search(r"\b0\.0+ (s|ms)\b", line), line
    # the share appears in one form only: the shown one, once
    assert re.findall(r"[\d.]+%", line) == [fmt_share(t.wait_share)], line


def _loader_doc(wait: float, compute: float, steps: int) -> dict:
    timing = LoaderTiming()
    timing.steps, timing.data_wait, timing.compute = steps, wait, compute
    return LoaderEvent(state="running", timing=timing.snapshot(), epoch=0, files=100, num_workers=0).to_dict()


@pytest.mark.parametrize(("wait", "steps"), [(0.0496, 40), (0.0494, 40), (0.3, 40), (0.3, 3)])
def test_the_cache_view_shows_the_documents_kind_beside_the_same_figure(wait, steps):
    doc = _loader_doc(wait, 1 - wait, steps)
    assert doc["verdict_kind"] == kind_of(wait, steps) and doc["wait_percent"] == round(wait * 100, 1)
    text = cache_text(CACHE, doc)
    shown = re.search(r"data wait: ([\d.]+%) of loop time", text).group(1)
    assert shown == fmt_share(wait)
    if steps >= MIN_STEPS:
        assert doc["verdict"].startswith(f"{doc['verdict_kind']}") and f"waiting {shown} " in doc["verdict"]
        assert doc["verdict"] in text
    else:
        assert doc["verdict"] == "" and "warming up" in text and "bound" not in text


def test_the_cache_view_follows_the_documents_kind_not_a_rule_of_its_own():
    doc = dict(_loader_doc(0.3, 0.7, 3), verdict_kind="compute-bound")  # whatever Python said
    assert "compute-bound, waiting 30.0% of the time" in cache_text(CACHE, doc)


def test_the_sidebar_shows_pythons_kind_and_figure_and_has_no_thresholds():
    source = (LAB_SRC / "sections.ts").read_text()
    assert "l.verdict_kind" in source and "l.wait_percent" in source
    for name in LAB_SRC.glob("*.ts"):
        text = name.read_text()
        assert not re.search(r"wait_(share|percent)\s*[<>]=?", text), f"{name.name} re-derives the verdict's kind"
        assert not re.search(r"\b(0\.05|0\.2|0\.20)\b", text), f"{name.name} holds a threshold of its own"


def test_a_vanishing_compute_step_does_not_overflow_the_worker_count():
    """Found by the property above: 0.125 s of collate against a subnormal compute step."""
    v = verdict(StageTimes(collate=0.125, wait=0.125, compute=2.2e-311), steps=10, workers=2, cpus=8)
    assert v.bottleneck == "transform" and "make the transform cheaper" in v.advice
