"""``EpochStream``: the contract between :class:`~air_magics.data.DataLoader` and the datasets it streams.

Why one base: the loader keeps persistent workers, tags every batch with ``(stream, items the
stream has produced)``, counts what it *delivers*, and moves items between processes in chunks.
``UCVolumeDataset`` (files) and ``UCDataset`` (table rows) both take part; the loader uses only the
public methods below (in the spirit of torchdata's ``Stateful`` nodes), never a dataset's fields:

* ``set_epoch``, ``state_dict(delivered, grid, epoch_done)``, ``load_state_dict``: epochs and exact
  resume on any grid (:mod:`air_magics.datasets.epoch_order`); ``continue_from(grid, delivered)``: the
  loader re-iterated mid-epoch.
* ``attach(plan, chunk)``: set by the loader before its workers start. ``plan`` is the
  :class:`~air_magics.datasets.planfile.PlanFile` a persistent worker reads at every iteration (it never
  sees ``set_epoch`` in the main process); ``chunk``: a worker yields lists of up to that many
  ready items, so one message carries many.
* ``epoch_plan()``: what the loader writes to the plan; ``position()``: ``(stream, items
  produced)``, the tag of the batch being collated in a worker.
* ``batches_in_chunks``: the dataset's worker chunks are whole batches of ``attach``'s
  ``batch`` (the loader then collates them in the worker, many batches per message).
* ``prefetch``: items each worker keeps in flight (sizes the loader's ``prefetch_factor``);
  ``plan_root()``: where the plan file lives (under the cache root).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch.utils.data import IterableDataset

from ..errors import DatasetError
from ..io import ranks
from .epoch_order import EpochState, Grid, OrderStateError, stream_index, with_progress
from .planfile import PlanFile

if TYPE_CHECKING:
    from ..shards.slices import SliceMaps

__all__ = ["EpochStream", "Attachment", "StreamStart"]


@dataclass(frozen=True)
class Attachment:
    """What a DataLoader sets on its dataset before its workers start (see :meth:`EpochStream.attach`)."""

    plan: PlanFile | None = None  # the plan a persistent worker reads at every iteration
    chunk: int = 0  # items per worker message (0: one item each)
    batch: int = 1  # a message's length is a multiple of this (the loader's batch size) but at the end
    slices: bool = False  # the loader turns MemberSlices back into bytes in its own process
    queued: int = 0  # items a worker's messages may hold on the way to the loop


@dataclass(frozen=True)
class StreamStart:
    """Where this process's stream of the epoch starts (see :meth:`EpochStream.start_stream`)."""

    grid: Grid
    stream: int
    state: EpochState  # the epoch, with the resume point if any
    in_worker: bool  # in a DataLoader worker


class EpochStream(IterableDataset):
    """Base of the datasets the loader streams, checkpoints and keeps persistent workers for."""

    seed: int
    shuffle: bool
    fingerprint: str
    prefetch: int = 1
    batches_in_chunks: bool = False  # whether a worker's chunks keep whole batches (attach's ``batch``)

    def _init_stream(self) -> None:
        self.epoch = 0
        self._resume: EpochState | None = None
        self._stream = 0
        self._grid = Grid()
        self._yielded = 0
        self.attached = Attachment()  # set by a DataLoader with workers (see attach)
        self._started: float | None = None  # when the loader began this epoch (persistent workers)

    # -- the loader's contract -------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Start *epoch* (changes the shuffle) from its beginning."""
        self.epoch = int(epoch)
        self._resume = None

    def attach(
        self, plan: PlanFile | None, chunk: int, batch: int = 1, *, slices: bool = False, queued: int = 0
    ) -> None:
        """What a loader's workers take with them: the plan to follow, the items per message
        (``chunk``, 0: one item per message) and the batch size a message's length is a multiple of.
        ``slices``: the loader's collate leaves items as they are and it turns any
        :class:`~air_magics.shards.MemberSlice` back into bytes (see :meth:`slice_maps`), so a
        worker may send packed members by their place instead of their bytes. ``queued``: items a
        worker's messages may hold between it and the loop (the loader's ``prefetch_factor``
        messages and the one being made): a path a worker hands out must stay valid that long."""
        self.attached = Attachment(plan, chunk, max(1, batch), slices, queued)

    def default_workers(self) -> int | None:
        """The worker processes a ``DataLoader`` should start for this dataset when not told, or
        None for its usual default."""
        return None

    def slice_maps(self) -> SliceMaps | None:
        """What turns this dataset's :class:`~air_magics.shards.MemberSlice` items back into bytes
        in the loader's process, or None when it never makes any."""
        return None

    def position(self) -> tuple[int, int]:
        """``(stream, items this stream produced so far)``, skipped items included."""
        return self._stream, self._yielded

    def epoch_plan(self, started: float) -> dict[str, Any]:
        """What persistent workers need to run this iteration: the epoch, the resume point, and
        when the loader started it (*started*, wall clock)."""
        resume = self._resume.to_dict() if self._resume is not None and self._resume.epoch == self.epoch else None
        return {"epoch": self.epoch, "resume": resume, "started": started}

    def continue_from(self, grid: Grid, delivered: dict[int, int]) -> None:
        """Local (no collective) bookkeeping when a loader is re-iterated mid-epoch."""
        self._resume = self._progress(grid, delivered)

    def plan_root(self) -> Path:
        """The folder a loader keeps its plan file under (the cache root)."""
        from .. import settings

        return settings.cache_dir()

    # -- for subclasses -----------------------------------------------------------------------------
    def start_stream(self) -> StreamStart:
        """This process's place in the epoch's grid (rank x worker), the plan a persistent worker
        follows read first; the stream's position starts at 0 (see :meth:`position`)."""
        rank, world = ranks.rank_and_world()
        worker, workers, in_worker = ranks.worker()
        if self.attached.plan is not None and in_worker is not None:
            self._follow_plan()
        grid = Grid(world, workers)
        stream = stream_index(grid, rank, worker)
        self._grid, self._stream, self._yielded = grid, stream, 0
        return StreamStart(grid, stream, self._epoch_state(), in_worker is not None)

    def _epoch_state(self) -> EpochState:  # the current epoch, with the resume point if any
        raise NotImplementedError

    def _progress(self, grid: Grid, delivered: dict[int, int]) -> EpochState:
        """The epoch state after a run on *grid* whose streams delivered *delivered* items."""
        try:
            return with_progress(self._epoch_state(), grid, delivered)
        except OrderStateError as exc:
            raise DatasetError(str(exc)) from None

    def _state_now(self, delivered: dict[int, int] | None, grid: Grid | None, epoch_done: bool) -> EpochState:
        """What ``state_dict`` saves: the next epoch's start, or this epoch's progress (what this
        process yielded, or the loader's *delivered*), gathered over ranks when distributed."""
        if epoch_done:
            return EpochState(self.seed, self.epoch + 1, len(self), self.shuffle, self.fingerprint)
        grid = grid or self._grid
        st = self._progress(grid, delivered if delivered is not None else {self._stream: self._yielded})
        counts = ranks.gather_counts(grid.streams, {s: c for s, c in enumerate(st.segments[-1][1]) if c >= 0})
        st.segments[-1] = (grid, counts)
        return st

    @staticmethod
    def _parse_state(state: dict[str, Any]) -> EpochState:
        try:
            return EpochState.from_dict(state)
        except OrderStateError as exc:
            raise DatasetError(str(exc)) from None

    def _check_order(self, st: EpochState) -> None:
        """Refuse a state saved with another shuffle or seed (its order is another one)."""
        if st.shuffle != self.shuffle or st.seed != self.seed:
            raise DatasetError(
                f"state has shuffle={st.shuffle}, seed={st.seed}; this dataset has shuffle={self.shuffle}, seed={self.seed}"
            )

    def _follow_plan(self) -> dict[str, Any]:
        """In a persistent worker: the epoch, start time and resume point the loader wrote for
        this iteration; the plan itself is returned for what a subclass added (``epoch_plan``)."""
        assert self.attached.plan is not None
        plan = self.attached.plan.read()
        self.epoch = int(plan["epoch"])
        self._started = plan.get("started")
        self._resume = EpochState.from_dict(plan["resume"]) if plan.get("resume") else None
        return plan
