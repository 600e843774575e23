"""``EpochStream``: what :class:`~air_magics.data.DataLoader` needs from a dataset it streams.

Why one base: the loader keeps persistent workers, tags every batch with ``(stream, items the
stream has produced)``, counts what it *delivers*, and moves ``batch_size=None`` items in chunks.
``UCVolumeDataset`` (files) and ``UCDataset`` (table rows) both take part, so the contract lives
here once instead of being matched by attribute names:

* ``_plan_file``: set by the loader before its workers start; a persistent worker reads the
  epoch, the loader's start time and the resume point from it at every iteration
  (:meth:`_follow_plan`), since it never sees ``set_epoch`` in the main process.
* ``_chunk``: set by the loader with ``batch_size=None``: a worker's copy yields lists of up to
  that many items per message.
* ``_stream``, ``_yielded``, ``_grid``: set by ``__iter__``; ``_yielded`` counts what the stream
  produced (the loader's tag), skipped items included.
* ``state_dict(delivered, grid, epoch_done)``, ``load_state_dict``, ``_continue_from``,
  ``_epoch_state``: exact resume on any grid (:mod:`air_magics.data.order`).
* ``prefetch``: items each worker keeps in flight (sizes the loader's ``prefetch_factor``).
"""

from __future__ import annotations

import json
from typing import Any

from torch.utils.data import IterableDataset

from ..errors import DatasetError
from .order import EpochState, Grid, OrderStateError, with_progress

__all__ = ["EpochStream"]


class EpochStream(IterableDataset):
    """Base of the datasets the loader streams, checkpoints and keeps persistent workers for."""

    seed: int
    shuffle: bool
    fingerprint: str
    prefetch: int = 1

    def _init_stream(self) -> None:
        self.epoch = 0
        self._resume: EpochState | None = None
        self._stream = 0
        self._grid = Grid()
        self._yielded = 0
        self._plan_file: str | None = None  # set by a DataLoader with persistent workers
        self._chunk = 0  # set by a DataLoader with batch_size=None: its workers yield lists of items
        self._started: float | None = None  # when the loader began this epoch (persistent workers)
        self._versions: dict[int, tuple[int, float]] | None = None  # per-item source versions, if any

    def set_epoch(self, epoch: int) -> None:
        """Start *epoch* (changes the shuffle) from its beginning."""
        self.epoch = int(epoch)
        self._resume = None

    def _epoch_state(self) -> EpochState:  # the current epoch, with the resume point if any
        raise NotImplementedError

    def _progress(self, grid: Grid, delivered: dict[int, int]) -> EpochState:
        """The epoch state after a run on *grid* whose streams delivered *delivered* items."""
        try:
            return with_progress(self._epoch_state(), grid, delivered)
        except OrderStateError as exc:
            raise DatasetError(str(exc)) from None

    def _continue_from(self, grid: Grid, delivered: dict[int, int]) -> None:
        """Local (no collective) bookkeeping when a loader is re-iterated mid-epoch."""
        self._resume = self._progress(grid, delivered)

    def _state_now(self, delivered: dict[int, int] | None, grid: Grid | None, epoch_done: bool) -> EpochState:
        """What ``state_dict`` saves: the next epoch's start, or this epoch's progress (what this
        process yielded, or the loader's *delivered*), gathered over ranks when distributed."""
        from . import _dist

        if epoch_done:
            return EpochState(self.seed, self.epoch + 1, len(self), self.shuffle, self.fingerprint)
        grid = grid or self._grid
        st = self._progress(grid, delivered if delivered is not None else {self._stream: self._yielded})
        counts = _dist.gather_counts(grid.streams, {s: c for s, c in enumerate(st.segments[-1][1]) if c >= 0})
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

    def _follow_plan(self) -> None:
        """In a persistent worker: the epoch, start time and resume point the loader wrote for
        this iteration."""
        with open(self._plan_file) as f:  # type: ignore[arg-type]
            plan = json.load(f)
        self.epoch = int(plan["epoch"])
        self._started = plan.get("started")
        self._resume = EpochState.from_dict(plan["resume"]) if plan.get("resume") else None
        self._plan_loaded(plan)

    def _plan_loaded(self, plan: dict[str, Any]) -> None:
        """Hook: what else a dataset takes from the plan (UCVolumeDataset: the source versions)."""
