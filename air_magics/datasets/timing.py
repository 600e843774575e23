"""``LoaderTiming``: where a training loop's time goes, per input stage, and the verdict on it.

The loop's side is measured by the loader (seconds waiting in ``next()`` vs. everything between
batches). The pipeline's side comes from each process's stage clock (:mod:`air_magics.io.stageclock`):
a worker sends its clock's totals with every batch it hands over; without workers the loop's own
process is read. :meth:`LoaderTiming.stages` turns them into wall-clock seconds per stage (how
they are apportioned is documented there) and :meth:`LoaderTiming.verdict` into the answer to
"why is my GPU waiting?" (:mod:`air_magics.datasets.verdict`).
"""

from __future__ import annotations

from ..io.stageclock import FIELDS, STAGES
from ..io.units import fmt_share
from ..snapshots import LoaderTimes
from .verdict import MIN_STEPS, StageTimes, Verdict, verdict

__all__ = ["LoaderTiming"]

_I = {name: i for i, name in enumerate(FIELDS)}


class LoaderTiming:
    """Where the training loop's time goes: waiting for the next batch (``data_wait``) vs.
    everything else (``compute``), and the input pipeline's stages (``stages()``, ``verdict()``).
    Each epoch's first wait (workers starting, the first files listed) is kept apart in
    ``startup``: it is paid once, and would otherwise call a compute-bound loop input-bound."""

    def __init__(self, *, workers: int = 0, source: str | None = None, wrapped: bool = False) -> None:
        self.steps = 0
        self.data_wait = 0.0
        self.compute = 0.0
        self.last_wait = 0.0
        self.startup = 0.0  # each epoch's first wait (workers starting), kept out of data_wait
        self.items = 0
        self.workers, self.source, self.wrapped = workers, source, wrapped
        self._streams: dict[int, tuple[float, ...]] = {}  # a worker stream's latest clock totals
        self._base = STAGES.snapshot()  # the loop's own process (num_workers=0): counted from here
        self._stable: Verdict | None = None

    @property
    def wait_share(self) -> float:
        total = self.data_wait + self.compute
        return self.data_wait / total if total > 0 else 0.0

    def worker_clock(self, stream: int, totals: tuple[float, ...]) -> None:
        """A worker's stage-clock totals, as sent with its latest batch."""
        self._streams[stream] = totals

    def _totals(self) -> list[float]:
        if self.workers <= 0:
            now = STAGES.snapshot()
            return [a - b for a, b in zip(now, self._base, strict=True)]
        out = [0.0] * len(FIELDS)
        for totals in self._streams.values():
            for i, v in enumerate(totals):
                out[i] += v
        return out

    def stages(self) -> StageTimes:
        """Seconds per stage, as wall-clock shares of the streams' time (summed over workers).

        A stream's *blocked* time (waiting for its next item) is split between storage and the
        user's ``transform`` in the ratio of the thread-seconds each took; the time *outside* a
        stream is its consumer's: a wrapper dataset's decode (``transform``), or in a worker the
        collate plus the hand-over to the loop (``handover`` is what the collate does not explain).
        In the loop's own process (no workers) the time outside is the loop's, already ``compute``."""
        t = self._totals()
        storage, transform, blocked, outside = t[_I["storage_read"]], t[_I["transform"]], t[_I["blocked"]], 0.0
        busy = storage + transform
        share = storage / busy if busy > 0 else 1.0
        storage_wall = blocked * share
        transform_wall = blocked * (1 - share)
        collate = t[_I["collate"]]
        handover = 0.0
        if self.workers > 0:
            outside = t[_I["outside"]]
            if self.wrapped:
                transform_wall += max(0.0, outside - collate)
            else:
                handover = max(0.0, outside - collate)
        return StageTimes(
            listing=t[_I["listing"]],
            storage_read=storage_wall,
            cache_write=t[_I["cache_write"]],
            handover=handover,
            transform=transform_wall,
            collate=collate,
            wait=self.data_wait,
            compute=self.compute,
            requests=int(t[_I["requests"]]),
            read_bytes=int(t[_I["read_bytes"]]),
            request_seconds=t[_I["request_seconds"]],
            items=self.items,
        )

    def verdict(self) -> Verdict:
        """Compute-bound or input-bound, which stage, and the one fix (from the 10th step on)."""
        v = verdict(self.stages(), steps=self.steps, source=self.source, workers=self.workers)
        return v

    def snapshot(self) -> LoaderTimes:
        st = self.stages()
        v = verdict(st, steps=self.steps, source=self.source, workers=self.workers)
        line = str(v) if self.steps >= MIN_STEPS else ""
        return LoaderTimes(
            self.steps,
            self.data_wait,
            self.compute,
            self.last_wait,
            line,
            st.stages(),
            verdict_kind=v.kind,
            items=st.items,
            read_bytes=st.read_bytes,
        )

    def to_dict(self) -> dict[str, float]:
        return self.snapshot().to_dict()

    def __repr__(self) -> str:
        return (
            f"LoaderTiming(steps={self.steps}, data_wait={self.data_wait:.2f}s, compute={self.compute:.2f}s, "
            f"wait_share={fmt_share(self.wait_share)})"
        )
