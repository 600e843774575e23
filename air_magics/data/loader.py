"""``DataLoader``: ``torch.utils.data.DataLoader`` with tuned defaults, delivered-progress state and timing.

* Defaults suit :class:`UCVolumeDataset`: 2 worker processes (each prefetches with threads),
  ``prefetch_factor`` sized to the dataset's prefetch depth, any start method (fork, spawn,
  forkserver).
* ``state_dict()`` reflects batches *delivered* to the training loop, not those prefetched: each
  batch carries, from the worker that made it, how many items its stream had produced, and the
  loader records that count only when it hands the batch over. ``load_state_dict()`` works on the
  same or a different number of ranks or workers (see :mod:`air_magics.data.order`).
* Timing: seconds waiting for data vs. computing between batches, per step, reported as a
  :class:`~air_magics.events.LoaderEvent` per batch (``done`` at the end of an epoch) to
  ``listeners`` and :data:`air_magics.events.channel`; the default listeners write it to the status
  documents the cache view and the sidebar show. Nothing goes to mlflow unless you attach
  :class:`~air_magics.listeners.MlflowListener` yourself.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator, Sequence

import torch.utils.data as tud
from torch.utils.data._utils.collate import default_collate, default_convert

from ..errors import DatasetError
from ..events import Listener, LoaderEvent, channel
from ..snapshots import LoaderTimes
from . import _dist
from .dataset import UCVolumeDataset
from .order import Grid

__all__ = ["DataLoader", "LoaderTiming"]

DEFAULT_WORKERS = 2


class _TaggingCollate:
    """Runs the user's collate in the worker and attaches (stream, items produced so far)."""

    def __init__(self, fn: Callable[[Any], Any], dataset: Any) -> None:
        self.fn, self.dataset = fn, dataset

    def __call__(self, items: Any) -> Any:
        _, _, wds = _dist.worker()
        ds = wds if wds is not None else self.dataset
        return self.fn(items), (ds._stream, ds._yielded)


class LoaderTiming:
    """Where the training loop's time goes: waiting for the next batch vs. everything else."""

    def __init__(self) -> None:
        self.steps = 0
        self.data_wait = 0.0
        self.compute = 0.0
        self.last_wait = 0.0

    @property
    def wait_share(self) -> float:
        total = self.data_wait + self.compute
        return self.data_wait / total if total > 0 else 0.0

    def snapshot(self) -> LoaderTimes:
        return LoaderTimes(self.steps, self.data_wait, self.compute, self.last_wait)

    def to_dict(self) -> dict[str, float]:
        return self.snapshot().to_dict()

    def __repr__(self) -> str:
        return (f"LoaderTiming(steps={self.steps}, data_wait={self.data_wait:.2f}s, compute={self.compute:.2f}s, "
                f"wait_share={self.wait_share:.1%})")


class DataLoader(tud.DataLoader):
    """Drop-in for ``torch.utils.data.DataLoader`` (and the reference ``databricks.air.data.DataLoader``).

    With a :class:`UCVolumeDataset` it is checkpointable (``state_dict``/``load_state_dict``) and
    moves through epochs by itself (or call ``set_epoch``), and reports its timing as
    :class:`~air_magics.events.LoaderEvent`s to ``listeners`` and the process-wide channel.
    Other datasets pass straight through.
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, *, num_workers: int | None = None,
                 collate_fn: Callable[[Any], Any] | None = None, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, listeners: Sequence[Listener] = (), **kwargs: Any) -> None:
        self._air = isinstance(dataset, UCVolumeDataset)
        workers = DEFAULT_WORKERS if num_workers is None else num_workers
        if self._air:
            if persistent_workers:
                raise DatasetError("persistent_workers=True is not supported with UCVolumeDataset: its workers are "
                                   "cheap (threads do the I/O) and must see each new epoch; drop the argument")
            if kwargs.get("sampler") is not None or kwargs.get("batch_sampler") is not None or kwargs.get("shuffle"):
                raise DatasetError("UCVolumeDataset orders and splits files itself: use UCVolumeDataset(shuffle=True, seed=...) "
                                   "instead of sampler/batch_sampler/shuffle")
            base = collate_fn or (default_collate if batch_size is not None else default_convert)
            collate_fn = _TaggingCollate(base, dataset)
        if workers == 0:
            prefetch_factor = None
        elif prefetch_factor is None and self._air:
            # torch's default (2 batches per worker) starves the loop on warm epochs; queue about as
            # many items as each worker's prefetch threads keep in flight
            prefetch_factor = max(2, dataset.prefetch // (batch_size or 1))
        super().__init__(dataset, batch_size=batch_size, num_workers=workers, collate_fn=collate_fn,
                         prefetch_factor=prefetch_factor, persistent_workers=persistent_workers, **kwargs)
        self.timing = LoaderTiming()
        self._delivered: dict[int, int] = {}
        self._grid: Grid | None = None
        self._epoch_done = False
        self._started = False
        self.listeners = tuple(listeners)

    def check_worker_number_rationality(self) -> None:
        """torch warns when workers exceed CPU cores; UCVolumeDataset workers mostly wait on I/O."""
        if not self._air:
            super().check_worker_number_rationality()

    # -- epochs and state ---------------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        if self._air:
            self.dataset.set_epoch(epoch)
        self._delivered, self._epoch_done, self._started = {}, False, False

    def state_dict(self) -> dict[str, Any]:
        """Progress by batches delivered. With ``torch.distributed`` initialised, call it on every rank."""
        if not self._air:
            raise DatasetError("state_dict() needs a UCVolumeDataset (or a dataset implementing Checkpointable)")
        ds: UCVolumeDataset = self.dataset
        grid = self._grid or self._current_grid()
        return {"dataset": ds.state_dict(delivered=self._own_delivered(grid), grid=grid, epoch_done=self._epoch_done),
                "steps": self.timing.steps}

    def _own_delivered(self, grid: Grid) -> dict[int, int]:
        """Delivered count of every stream this rank owns (0 for workers not heard from yet)."""
        rank, _ = _dist.rank_and_world()
        first = rank * grid.num_workers
        return {s: self._delivered.get(s, 0) for s in range(first, first + grid.num_workers)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not self._air:
            raise DatasetError("load_state_dict() needs a UCVolumeDataset")
        if not isinstance(state, dict) or "dataset" not in state:
            raise DatasetError(f"not a DataLoader state (keys {sorted(state) if isinstance(state, dict) else type(state).__name__}); "
                               f"pass what DataLoader.state_dict() returned")
        self.dataset.load_state_dict(state["dataset"])
        self._delivered, self._epoch_done, self._started = {}, False, False
        self.timing.steps = int(state.get("steps", 0))

    def _current_grid(self) -> Grid:
        _, world = _dist.rank_and_world()
        return Grid(world, max(1, self.num_workers))

    # -- iteration ----------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        if not self._air:
            yield from super().__iter__()
            return
        ds: UCVolumeDataset = self.dataset
        if self._epoch_done:  # the previous epoch ran to the end: move on
            ds.set_epoch(ds.epoch + 1)
            self._delivered, self._epoch_done = {}, False
        elif self._started and self._grid is not None:  # re-iterated mid-epoch: continue where delivery stopped
            ds._continue_from(self._grid, self._own_delivered(self._grid))
            self._delivered = {}
        self._grid = self._current_grid()
        self._started = True
        inner = super().__iter__()
        t_last: float | None = None
        while True:
            t0 = time.perf_counter()
            if t_last is not None:
                self.timing.compute += t0 - t_last
            try:
                batch, (stream, produced) = next(inner)
            except StopIteration:
                self._epoch_done = True
                self._emit("done")
                return
            t1 = time.perf_counter()
            self.timing.data_wait += t1 - t0
            self.timing.last_wait = t1 - t0
            self.timing.steps += 1
            self._delivered[stream] = produced
            self._emit("running")
            t_last = time.perf_counter()
            yield batch

    def _emit(self, state: str) -> None:
        if channel.listening(self.listeners):
            channel.emit(LoaderEvent(state=state, timing=self.timing.snapshot(), epoch=self.dataset.epoch,
                                     files=len(self.dataset), num_workers=self.num_workers), self.listeners)
