"""Why is the GPU waiting? Turn a loader's stage timing into a verdict with one concrete fix.

Pure: numbers in, a :class:`Verdict` out; no I/O, no torch. The loader measures the stages
(:class:`StageTimes`) and calls :func:`verdict`; a widget shows ``str(verdict)``.

How the verdict is reached:

1. *Kind* (:func:`kind_of`), from the share of the loop's time spent waiting for data,
   ``wait / (wait + compute)``, rounded once to the 0.1% every view shows (:func:`fmt_share`):
   under 5% ``compute-bound``, 5-20% ``moderately input-bound``, above 20% ``input-bound``; before
   :data:`MIN_STEPS` steps ``warming-up`` (the first batches wait on cold starts, not on the pipeline).
   Deciding on the shown value means a view never says "5.0%" beside "compute-bound (under 5%)". This
   is the one place the thresholds live: the cache view and the sidebar show the kind the status
   document carries (``verdict_kind``), never a rule of their own.
2. *Bottleneck* (input-bound kinds only): the stage group the loader's workers spent most seconds in:
   storage (``listing`` + ``storage_read``), ``transform`` (the user's transform + ``collate``),
   ``handover`` (batches moving from worker processes to the loop) or ``cache`` (``cache_write``).
   A group is named only when it took at least :data:`MIN_STAGE_SECONDS` (it shows as 0.1 s or more):
   a verdict never blames a stage that shows as 0.0 s. A storage group whose requests answered in
   under a millisecond is a local disk: its reads are the copy into the cache, so it is named
   ``cache`` (:func:`stage_seconds` gives the seconds a named bottleneck stands for).
3. *Storage: latency or bandwidth?* From the storage facts, an average request carries
   ``size = read_bytes / requests`` in ``t = request_seconds / requests``. It is **latency-bound**
   when the request is small (under :data:`SMALL_REQUEST_BYTES`, 1 MiB: at a 10 ms round trip and
   100 MB/s per stream such a request waits at least as long as it transfers) *and* takes no longer
   than a round trip can (:data:`ROUND_TRIP_MAX_S`, 0.1 s: a small request slower than that is
   queued behind a saturated link). Otherwise it is **bandwidth-bound**: bytes, not round trips,
   take the time, so packing files into shards does not help. So 64 KiB files at 10 ms each are
   latency-bound; 2 MiB files under a 40 MB/s cap (and 512 KiB ones queued 0.2 s behind it) are
   bandwidth-bound. Without request facts the storage is taken as latency-bound, the common case
   for volumes (high per-operation latency, good sequential bandwidth).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field

from ..io.units import fmt_share, share_percent

__all__ = [
    "StageTimes",
    "Verdict",
    "verdict",
    "MIN_STEPS",
    "SMALL_REQUEST_BYTES",
    "ROUND_TRIP_MAX_S",
    "KINDS",
    "BOTTLENECKS",
    "COMPUTE_BOUND_BELOW",
    "INPUT_BOUND_ABOVE",
    "MIN_STAGE_SECONDS",
    "kind_of",
    "share_percent",
    "fmt_share",
    "stage_seconds",
]

MIN_STEPS = 10  # before this many steps: "warming-up"
COMPUTE_BOUND_BELOW = 0.05  # wait share under which the loop is compute-bound
INPUT_BOUND_ABOVE = 0.20  # wait share above which it is input-bound (between: moderately)
SMALL_REQUEST_BYTES = 1 << 20  # below this a storage request's round trip outweighs its transfer
ROUND_TRIP_MAX_S = 0.1  # a small request slower than any round trip is queued behind the link
ROUND_TRIP_MIN_S = 0.001  # a request faster than this never left the machine (a local disk)
MIN_STAGE_SECONDS = 0.05  # a stage group under this shows as 0.0 s: never named as the bottleneck
KINDS = ("warming-up", "compute-bound", "moderately input-bound", "input-bound")
BOTTLENECKS = ("storage-latency", "storage-bandwidth", "transform", "handover", "cache")
_DEFAULT_WORKERS = 2  # the DataLoader's default num_workers (datasets/loader.py imports torch; not imported here)
_HEADROOM = 1.25  # workers recommended above the bare need, so a slow batch does not stall the loop


@dataclass(frozen=True)
class StageTimes:
    """Seconds per stage of the input pipeline, plus facts about the storage requests.

    ``wait`` and ``compute`` are wall seconds of the training loop (waiting for the next batch, and
    everything between batches). The other stages are seconds the loader's workers spent in (or blocked
    on) them, summed over workers: ``listing`` (finding the files), ``storage_read`` (reading sources
    into the cache), ``cache_write`` (writing them there), ``handover`` (moving batches from worker
    processes to the loop), ``transform`` (the user's per-item function), ``collate`` (making batches).
    ``requests``, ``read_bytes`` and ``request_seconds`` (the sum of each storage request's latency,
    overlapping requests counted each) describe the reads themselves; ``items``: items delivered
    (0 when unknown), for per-item figures in the advice.
    """

    listing: float = 0.0
    storage_read: float = 0.0
    cache_write: float = 0.0
    handover: float = 0.0
    transform: float = 0.0
    collate: float = 0.0
    wait: float = 0.0
    compute: float = 0.0
    requests: int = 0
    read_bytes: int = 0
    request_seconds: float = 0.0
    items: int = 0

    def stages(self) -> dict[str, float]:
        """Seconds per stage (the storage facts left out)."""
        d = asdict(self)
        return {k: float(d[k]) for k in _STAGES}

    @property
    def wait_share(self) -> float:
        """Share of the loop's time spent waiting for data (0 when nothing was timed)."""
        total = self.wait + self.compute
        return self.wait / total if total > 0 else 0.0


_STAGES = ("listing", "storage_read", "cache_write", "handover", "transform", "collate", "wait", "compute")


def kind_of(share: float, steps: int) -> str:
    """The verdict's kind for a loop that waited *share* of its time over *steps* steps.

    Decided on the shown (rounded) percentage, so the kind never contradicts the figure beside it."""
    if steps < MIN_STEPS:
        return "warming-up"
    pct = share_percent(share)
    if pct < share_percent(COMPUTE_BOUND_BELOW):
        return "compute-bound"
    return "input-bound" if pct > share_percent(INPUT_BOUND_ABOVE) else "moderately input-bound"


def stage_seconds(times: StageTimes, bottleneck: str) -> float:
    """The seconds a named *bottleneck* stands for (what makes it the bottleneck)."""
    if bottleneck == "cache":
        if _local_disk(times):  # the storage reads of a local disk are the copy into the cache
            return times.listing + times.storage_read + times.cache_write
        return times.cache_write
    if bottleneck.startswith("storage"):
        return times.listing + times.storage_read
    if bottleneck == "transform":
        return times.transform + times.collate
    if bottleneck == "handover":
        return times.handover
    raise ValueError(f"unknown bottleneck {bottleneck!r}: one of {', '.join(BOTTLENECKS)}")


@dataclass(frozen=True)
class Verdict:
    """What limits training: ``kind`` (one of :data:`KINDS`), the ``bottleneck`` stage (one of
    :data:`BOTTLENECKS`, None when compute-bound or not yet known), the loop's ``wait_share``,
    seconds per stage, and ``advice``: one sentence with the fix."""

    kind: str
    bottleneck: str | None
    wait_share: float
    stages: dict[str, float] = field(default_factory=dict)
    advice: str = ""

    def __str__(self) -> str:
        where = f" on {self.bottleneck}" if self.bottleneck else ""
        return f"{self.kind}{where}, waiting {fmt_share(self.wait_share)} of the time: {self.advice}"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready (status documents)."""
        return asdict(self)


def verdict(
    times: StageTimes,
    *,
    steps: int,
    source: str | None = None,
    workers: int = _DEFAULT_WORKERS,
    cpus: int | None = None,
) -> Verdict:
    """The verdict on *steps* steps timed as *times* (see the module docstring for the rules).

    *source*: the dataset's folder, for the exact ``%air_volume pack`` command; *workers*: the loader's
    ``num_workers`` now; *cpus*: cores available for workers (default ``os.cpu_count()``)."""
    stages, share = times.stages(), times.wait_share
    kind = kind_of(share, steps)
    if kind == "warming-up":
        return Verdict(
            kind, None, share, stages, f"not enough data yet: a verdict after {MIN_STEPS} steps (now {steps})"
        )
    if kind == "compute-bound":
        return Verdict(
            kind, None, share, stages, "the model step is the limit, not the input pipeline (nothing to fix there)"
        )
    bottleneck = _bottleneck(times)
    if bottleneck is None:
        timed = any(v > 0 for k, v in stages.items() if k not in ("wait", "compute"))
        advice = (
            f"no input stage took {MIN_STAGE_SECONDS} s or more ({times.wait:.2f} s of waiting in all): "
            f"too little to name a cause; look again after more steps"
            if timed
            else "no input stage was timed; time the stages (the DataLoader does) to see which one to fix"
        )
        return Verdict(kind, None, share, stages, advice)
    advice = _ADVICE[bottleneck](times, steps, source, max(workers, 0), cpus or os.cpu_count() or 1)
    return Verdict(kind, bottleneck, share, stages, advice)


def _bottleneck(t: StageTimes) -> str | None:
    groups = {  # order breaks ties: storage first, the usual culprit
        "storage": t.listing + t.storage_read,
        "transform": t.transform + t.collate,
        "handover": t.handover,
        "cache": t.cache_write,
    }
    name, secs = max(groups.items(), key=lambda kv: kv[1])
    if secs < MIN_STAGE_SECONDS:  # it would show as 0.0 s: nothing to blame
        return None
    if name != "storage":
        return name
    if _local_disk(t):  # sub-millisecond requests: copying into the cache is what took the time
        return "cache"
    return "storage-latency" if _latency_bound(t) else "storage-bandwidth"


def _local_disk(t: StageTimes) -> bool:
    return t.requests > 0 and t.request_seconds / t.requests < ROUND_TRIP_MIN_S


def _latency_bound(t: StageTimes) -> bool:
    if t.requests <= 0 or t.request_seconds <= 0:
        return True  # no request facts: the common case for volumes
    size, per_request = t.read_bytes / t.requests, t.request_seconds / t.requests
    return size < SMALL_REQUEST_BYTES and per_request <= ROUND_TRIP_MAX_S


def _per_request(t: StageTimes) -> str:
    if t.requests <= 0:
        return ""
    size_kib = t.read_bytes / t.requests / 1024
    return f"each storage request waits {t.request_seconds / t.requests * 1000:.1f} ms for {size_kib:,.0f} KiB"


def _ms(seconds: float) -> str:
    """Milliseconds, never shown as 0.0 for time that was spent: ``12.5 ms``, ``0.04 ms``."""
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms >= 0.1 or ms == 0 else f"{ms:.1g} ms"


def _latency_advice(t: StageTimes, steps: int, source: str | None, workers: int, cpus: int) -> str:
    facts = _per_request(t) or "storage round trips take the time"
    return f"{facts} (small files): pack the folder into shards with {_pack_command(source)}"


def _pack_command(source: str | None) -> str:
    if source:
        from ..errors import VolumePathError
        from ..volumes.summary import pack_suggestion

        try:
            return pack_suggestion(source)
        except VolumePathError:  # a local folder: pack reads volumes
            pass
    return "`%air_volume pack SRC DEST` (SRC: the dataset's folder on its volume, DEST: a folder outside it)"


def _bandwidth_advice(t: StageTimes, steps: int, source: str | None, workers: int, cpus: int) -> str:
    wall = t.wait + t.compute or t.storage_read
    mb_s = t.read_bytes / wall / 1e6 if wall > 0 else 0.0
    per = f" in {t.read_bytes / t.requests / (1 << 20):.1f} MiB requests" if t.requests > 0 else ""
    return (
        f"storage delivers {mb_s:.1f} MB/s{per}: bandwidth-bound, so packing will not help; "
        f"read with more parallel streams (more workers or prefetch), use a faster volume, "
        f"or keep the data in the local cache (an AIR_CACHE_LIMIT that holds it)"
    )


def _transform_advice(t: StageTimes, steps: int, source: str | None, workers: int, cpus: int) -> str:
    busy = t.storage_read + t.cache_write + t.handover + t.transform + t.collate  # a worker does all of these
    per_step = t.compute / steps
    if t.items > 0:
        cost = f"the transform takes {_ms((t.transform + t.collate) / t.items)} per item"
    else:
        cost = f"the transform takes {_ms((t.transform + t.collate) / steps)} per batch"
    if per_step <= 0:
        return f"{cost} and the loop computes nothing between batches: use num_workers={cpus} (one per core)"
    ratio = busy / steps / per_step * _HEADROOM  # inf for a compute step of a few picoseconds
    need = max(workers + 1, math.ceil(min(ratio, 1e6)))
    against = f"{cost} against {_ms(per_step)} of compute per step"
    if need > cpus:
        return (
            f"{against}: it needs num_workers={need} but there are {cpus} cores; make the transform cheaper "
            f"(precompute it, or run it on the GPU in the loop)"
        )
    return f"{against}: use num_workers={need} (now {workers})"


def _handover_advice(t: StageTimes, steps: int, source: str | None, workers: int, cpus: int) -> str:
    return (
        f"moving batches from worker processes to the loop takes {_ms(t.handover / steps)} per step: "
        f"send fewer, bigger messages (a larger batch_size, items as tensors or bytes rather than Python objects)"
    )


def _cache_advice(t: StageTimes, steps: int, source: str | None, workers: int, cpus: int) -> str:
    spent = stage_seconds(t, "cache")
    local = _local_disk(t)
    source = " while the source answers in under a millisecond" if local else ""
    return (
        f"copying files into the local cache takes {spent:.1f} s ({_ms(spent / steps)} per step){source}: "
        f"this is the first epoch's cost (later epochs hit the cache); if it stays, put the cache on a faster "
        f"local disk (AIR_CACHE_DIR on NVMe, not a network or overlay disk)"
    )


_ADVICE = {
    "storage-latency": _latency_advice,
    "storage-bandwidth": _bandwidth_advice,
    "transform": _transform_advice,
    "handover": _handover_advice,
    "cache": _cache_advice,
}
