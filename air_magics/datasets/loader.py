"""``DataLoader``: ``torch.utils.data.DataLoader`` with tuned defaults, delivered-progress state and timing.

* Defaults suit :class:`UCVolumeDataset`: 2 worker processes (each prefetches with threads; 1 over
  a packed folder read by offset without a transform, see ``EpochStream.default_workers``),
  kept across epochs (``persistent_workers``: no re-fork, and each worker's cache knowledge stays
  warm; the epoch and resume point reach them through a small plan file under the cache root,
  written before every iteration: :mod:`air_magics.datasets.planfile`), ``prefetch_factor`` sized to the
  dataset's prefetch depth, any start method (fork, spawn, forkserver).
* A user's wrapper dataset that holds a ``UCVolumeDataset`` as an attribute (say, an
  ``IterableDataset`` that decodes each yielded path with PIL) gets persistent workers too, and the
  inner dataset's ``set_epoch`` reaches them the same way; its ``state_dict`` is the wrapper's business.
* Items travel from the workers in chunks (up to ``CHUNK`` items per message, whole batches, one
  IPC round trip each: a worker sends what is ready as soon as its next file is not, so the first
  item never waits for a full chunk); the batches are collated in the worker and handed out one
  by one here, and the delivered count is kept per batch, so ``state_dict()`` stays exact.
* ``state_dict()`` reflects batches *delivered* to the training loop, not those prefetched: each
  batch carries, from the worker that made it, how many items its stream had produced, and the
  loader records that count only when it hands the batch over. ``load_state_dict()`` works on the
  same or a different number of ranks or workers (see :mod:`air_magics.datasets.epoch_order`).
* Timing: seconds waiting for data vs. computing between batches, per step, reported as a
  :class:`~air_magics.events.LoaderEvent` per batch (``done`` at the end of an epoch) to
  ``listeners`` and :data:`air_magics.events.channel`; the default listeners write it to the status
  documents the cache view and the sidebar show. Nothing goes to mlflow unless you attach
  :class:`~air_magics.listeners.MlflowListener` yourself.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch.utils.data as tud
from torch.utils.data import default_collate, default_convert

from ..errors import DatasetError
from ..events import LAUNCH_ID_ENV, Listener, LoaderEvent, channel
from ..io import ranks
from ..io.stageclock import STAGES
from ..shards.slices import MemberSlice, SliceMaps
from .epoch_order import Grid
from .epoch_stream import EpochStream
from .planfile import PlanFile
from .timing import LoaderTiming

__all__ = ["DataLoader", "LoaderTiming"]

DEFAULT_WORKERS = 2
CHUNK = 128  # items per worker message (rounded up to whole batches): fewer, larger hand-overs
_EMIT_EVERY = 0.2  # seconds between two "running" loader events


class _Chunk(list):
    """Batches (or items) of one worker message that the loader hands out one at a time;
    ``sizes[i]``: how many stream items batch *i* holds; ``slices``: some items are
    member slices, to be read here."""

    sizes: list[int]
    slices: bool = False


def _as_is(x: Any) -> Any:
    """The collate of a loader that reads :class:`MemberSlice` items itself: a batch stays the list
    of its items (what ``default_collate`` makes of bytes), an item stays itself."""
    return x


def _bytes_of(batch: Any, read: Callable[[MemberSlice], bytes]) -> Any:
    """*batch* with every :class:`MemberSlice` read into its bytes."""
    if batch.__class__ is MemberSlice:
        return read(batch)
    if batch.__class__ is list:
        return [read(x) if x.__class__ is MemberSlice else x for x in batch]
    return batch


class _ChunkCollate:
    """A chunk of ready items collated in the worker: ``batch`` items per batch with the user's
    collate (``batch=0``: each item on its own, ``batch_size=None`` semantics); the last, short
    batch of a stream is dropped with ``drop_last``."""

    def __init__(self, fn: Callable[[Any], Any], batch: int = 0, drop_last: bool = False) -> None:
        self.fn, self.batch, self.drop_last = fn, batch, drop_last

    def __call__(self, items: Any) -> _Chunk:
        fn, k = self.fn, self.batch
        if not k:
            out = _Chunk(fn(x) for x in items)
            out.sizes = [1] * len(out)
            if fn is _as_is:
                out.slices = any(x.__class__ is MemberSlice for x in items)
            return out
        out, sizes = _Chunk(), []
        for j in range(0, len(items), k):
            part = items[j : j + k]
            if len(part) < k and self.drop_last:  # only the stream's last message is short
                sizes.append(len(part))
                break
            out.append(fn(part))
            sizes.append(len(part))
        out.sizes = sizes
        if fn is _as_is:
            out.slices = any(x.__class__ is MemberSlice for x in items)
        return out


class _CtrlCInMainOnly:
    """A worker's init: Ctrl-C is ignored there, then the user's ``worker_init_fn`` runs.

    Jupyter's interrupt and a terminal's Ctrl-C signal the whole process group: torch's workers
    took it as their end, so after an interrupted loop the persistent workers were gone and the
    next epoch failed with "DataLoader worker (pid(s) ...) exited unexpectedly". The interrupt is
    the training loop's (it arrives in the user's ``for``); the workers stay, the next ``iter``
    resets them, and ``state_dict()`` still counts what was delivered."""

    def __init__(self, user: Callable[[int], None] | None) -> None:
        self.user = user

    def __call__(self, worker_id: int) -> None:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if self.user is not None:
            self.user(worker_id)


def _wrapped(dataset: Any) -> EpochStream | None:
    """The ``UCVolumeDataset``/``UCDataset`` a user's wrapper dataset holds as an attribute, if exactly one."""
    found = [v for v in getattr(dataset, "__dict__", {}).values() if isinstance(v, EpochStream)]
    return found[0] if len(found) == 1 else None


class _TaggingCollate:
    """Runs the user's collate in the worker and attaches (stream, items produced so far)."""

    def __init__(self, fn: Callable[[Any], Any], dataset: Any) -> None:
        self.fn, self.dataset = fn, dataset

    def __call__(self, items: Any) -> Any:
        _, _, wds = ranks.worker()
        ds = wds if wds is not None else self.dataset
        t0 = time.perf_counter()
        batch = self.fn(items)
        STAGES.add("collate", time.perf_counter() - t0)
        return batch, (*ds.position(), STAGES.snapshot())


class _ClockCollate:
    """A wrapper dataset's collate, run in the worker: its batch plus (worker, -1, stage clock)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, items: Any) -> Any:
        worker, _, _ = ranks.worker()
        t0 = time.perf_counter()
        batch = self.fn(items)
        STAGES.add("collate", time.perf_counter() - t0)
        return batch, (worker, -1, STAGES.snapshot())


class DataLoader(tud.DataLoader):
    """Drop-in for ``torch.utils.data.DataLoader`` (and the reference ``databricks.air.data.DataLoader``).

    With a :class:`UCVolumeDataset` it is checkpointable (``state_dict``/``load_state_dict``) and
    moves through epochs by itself (or call ``set_epoch``), and reports its timing as
    :class:`~air_magics.events.LoaderEvent`s to ``listeners`` and the process-wide channel.
    Other datasets pass straight through.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        *,
        num_workers: int | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
        prefetch_factor: int | None = None,
        persistent_workers: bool | None = None,
        listeners: Sequence[Listener] = (),
        **kwargs: Any,
    ) -> None:
        self._air = isinstance(dataset, EpochStream)  # UCVolumeDataset, UCDataset (see datasets/epoch_stream.py)
        # a user's wrapper (e.g. an IterableDataset that decodes each path) around a UCVolumeDataset:
        # its workers persist too, and the inner dataset follows set_epoch through the plan file
        self._inner: EpochStream | None = dataset if self._air else _wrapped(dataset)
        if num_workers is None:
            suggested = dataset.default_workers() if self._air else None
            num_workers = DEFAULT_WORKERS if suggested is None else suggested
        workers = num_workers
        self._chunked = False
        self._slice_maps: SliceMaps | None = None  # reads the workers' MemberSlices (see _as_is)
        self._chunk_items = 0  # items per worker message (whole batches)
        self._batch = batch_size or 1
        self._plan: PlanFile | None = None
        if persistent_workers is None:  # the default where it helps: workers stay, and stay warm
            persistent_workers = self._inner is not None and workers > 0
        if self._air:
            if kwargs.get("sampler") is not None or kwargs.get("batch_sampler") is not None or kwargs.get("shuffle"):
                raise DatasetError(
                    "UCVolumeDataset orders and splits files itself: use UCVolumeDataset(shuffle=True, seed=...) "
                    "instead of sampler/batch_sampler/shuffle"
                )
            base = collate_fn or (default_collate if batch_size is not None else default_convert)
            # packed members with output="bytes": with the default collate the workers send where
            # the bytes lie in the cached shard and this process copies them out (no pipe for them)
            slice_maps = dataset.slice_maps() if collate_fn is None and workers > 0 else None
            if workers > 0 and (batch_size is None or dataset.batches_in_chunks):
                # one message per chunk of ready items, collated into whole batches in the worker;
                # torch itself then batches nothing (batch_size=None)
                drop_last = bool(kwargs.pop("drop_last", False))
                self._chunked = True
                k = batch_size or 1
                self._chunk_items = -(-CHUNK // k) * k
                if slice_maps is not None:
                    self._slice_maps, base = slice_maps, _as_is
                base = _ChunkCollate(base, batch_size or 0, drop_last)
                batch_size = None
            collate_fn = _TaggingCollate(base, dataset)
        elif self._inner is not None:  # a wrapper: its batches carry the worker's stage clock only
            collate_fn = _ClockCollate(collate_fn or (default_collate if batch_size is not None else default_convert))
        if self._inner is not None and persistent_workers and workers > 0:
            self._plan = PlanFile(self._inner.plan_root())
            weakref.finalize(self, self._plan.close)
        if self._inner is not None and workers > 0:
            kwargs["worker_init_fn"] = _CtrlCInMainOnly(kwargs.get("worker_init_fn"))
        self._per_message = self._chunk_items if self._chunked else (batch_size or 1)  # items a worker sends at once
        if workers == 0:
            prefetch_factor, persistent_workers = None, False
        elif prefetch_factor is None and self._air:
            # torch's default (2 batches per worker) starves the loop on warm epochs; queue about as
            # many items as each worker's prefetch threads keep in flight. Chunked messages carry up
            # to CHUNK items each: counted as such, so what is handed out ahead of the loop stays
            # within the cache's overflow window (a path there lives for 1,024 more hand-outs)
            prefetch_factor = max(2, dataset.prefetch // self._per_message)
        super().__init__(
            dataset,
            batch_size=batch_size,
            num_workers=workers,
            collate_fn=collate_fn,
            prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers,
            **kwargs,
        )
        source = self._inner.paths[0] if self._inner is not None and getattr(self._inner, "paths", None) else None
        self.timing = LoaderTiming(workers=workers, source=source, wrapped=self._inner is not None and not self._air)
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
            raise DatasetError(
                "state_dict() needs a UCVolumeDataset or UCDataset (or a dataset implementing Checkpointable)"
            )
        ds: EpochStream = self.dataset
        grid = self._grid or self._current_grid()
        return {
            "dataset": ds.state_dict(delivered=self._own_delivered(grid), grid=grid, epoch_done=self._epoch_done),
            "steps": self.timing.steps,
        }

    def _own_delivered(self, grid: Grid) -> dict[int, int]:
        """Delivered count of every stream this rank owns (0 for workers not heard from yet)."""
        rank, _ = ranks.rank_and_world()
        first = rank * grid.num_workers
        return {s: self._delivered.get(s, 0) for s in range(first, first + grid.num_workers)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not self._air:
            raise DatasetError("load_state_dict() needs a UCVolumeDataset or UCDataset")
        if not isinstance(state, dict) or "dataset" not in state:
            raise DatasetError(
                f"not a DataLoader state (keys {sorted(state) if isinstance(state, dict) else type(state).__name__}); "
                f"pass what DataLoader.state_dict() returned"
            )
        self.dataset.load_state_dict(state["dataset"])
        self._delivered, self._epoch_done, self._started = {}, False, False
        self.timing.steps = int(state.get("steps", 0))

    def _current_grid(self) -> Grid:
        _, world = ranks.rank_and_world()
        return Grid(world, max(1, self.num_workers))

    # -- iteration ----------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        if self._inner is not None:  # what this loader's workers take with them (set before they start)
            self._inner.attach(
                self._plan,
                self._chunk_items if self._chunked else 0,
                self._batch,
                slices=self._slice_maps is not None,
                queued=((self.prefetch_factor or 0) + 1) * self._per_message if self.num_workers else 0,
            )
        if not self._air:
            if self._inner is None:  # a plain dataset: torch's loader, untouched
                yield from super().__iter__()
                return
            self._write_plan(self._inner)  # the epoch the user set on the wrapped dataset
            yield from self._stopping_on_error(super().__iter__(), track=False)
            return
        ds: EpochStream = self.dataset
        if self._epoch_done:  # the previous epoch ran to the end: move on
            ds.set_epoch(ds.epoch + 1)
            self._delivered, self._epoch_done = {}, False
        elif self._started and self._grid is not None:  # re-iterated mid-epoch: continue where delivery stopped
            ds.continue_from(self._grid, self._own_delivered(self._grid))
            self._delivered = {}
        self._grid = self._current_grid()
        self._started = True
        self._write_plan(ds)
        yield from self._stopping_on_error(super().__iter__(), track=True)

    def _stopping_on_error(self, inner: Iterator[Any], *, track: bool) -> Iterator[Any]:
        """:meth:`_timed`, with the workers stopped at once when an error ends the loop.

        Why: the error's traceback keeps torch's iterator alive, and when the garbage collector
        takes it at last (at some later moment, in a notebook whenever a collection runs), its
        queues may be finalized before it, so each worker misses its stop message and is waited
        for 5 s, then killed: a stall of 5 s per worker in an unrelated cell. Stopped here, they
        end in milliseconds; the next ``iter()`` starts new ones where delivery stopped (the
        delivered counts are this process's). Ctrl-C and a ``break`` keep them (see
        ``test_interrupt``)."""
        try:
            yield from self._timed(inner, track=track)
        except Exception:
            if self._iterator is inner:  # (persistent workers: torch keeps the iterator for the next epoch)
                self._iterator = None
            stop = getattr(inner, "__del__", None)  # torch's iterator stops its workers there (once)
            if stop is not None:
                stop()
            raise

    def _timed(self, inner: Iterator[Any], *, track: bool) -> Iterator[Any]:
        """The loop's side: batches handed out one at a time (a chunk's one by one), the wait for
        each message and the time between them timed, the delivered count per stream kept exact at
        every batch (``track``). A chunk's batches after its first are in hand: they cost a count,
        not a wait (their time is the loop's, ``compute``, accounted at the next message)."""
        timing, delivered, chunked, maps, one = (
            self.timing,
            self._delivered,
            self._chunked,
            self._slice_maps,
            self._batch,
        )
        slices = False  # the message in hand holds MemberSlices
        clock = time.perf_counter
        t_last: float | None = None
        stream = produced = 0
        next_emit = clock() + _EMIT_EVERY  # an epoch shorter than that reports once, when it is done
        first = True
        while True:
            t0 = clock()
            if t_last is not None:
                timing.compute += t0 - t_last
            try:
                message, (stream, produced, clock_totals) = next(inner)
            except StopIteration:
                self._epoch_done = track
                if maps is not None:
                    maps.close()
                self._emit("done")
                return
            timing.worker_clock(stream, clock_totals)
            if not chunked:
                pending, sizes = [message], [0]
            else:
                pending, sizes, slices = message, message.sizes, message.slices
                produced -= sum(sizes)
                if not pending:
                    timing.data_wait += clock() - t0
                    t_last = clock()
                    continue
            for k, batch in enumerate(pending):  # the first waited for; the rest of a chunk is in hand
                if slices:
                    batch = _bytes_of(batch, maps.read)  # type: ignore[union-attr]  # noqa: PLW2901
                produced += sizes[k]  # delivered count per batch, not per chunk
                timing.items += sizes[k] or one
                timing.steps += 1
                if track:
                    delivered[stream] = produced
                now = clock()
                if k:
                    timing.last_wait = 0.0
                else:
                    wait = now - t0
                    if first:  # the first batch waits for the workers (and the listing) to start
                        timing.startup += wait
                        first = False
                    else:
                        timing.data_wait += wait
                    timing.last_wait = wait
                    t_last = now  # the chunk's in-hand batches are the loop's time (compute)
                if now >= next_emit:  # the widgets and status documents refresh a few times a second
                    next_emit = now + _EMIT_EVERY
                    self._emit("running")
                yield batch

    def _write_plan(self, ds: EpochStream) -> None:
        """Where persistent workers start this iteration: the epoch and, mid-epoch, the resume
        point (written before torch tells the workers to start, so they read this one)."""
        if self._plan is not None:
            self._plan.write(ds.epoch_plan(time.time()))  # "started": see UCVolumeDataset.__iter__

    def _emit(self, state: str) -> None:
        if channel.listening(self.listeners):
            ds = self._inner if self._inner is not None else self.dataset
            rank, world = ranks.rank_and_world()
            channel.emit(
                LoaderEvent(
                    state=state,
                    timing=self.timing.snapshot(),
                    epoch=ds.epoch,
                    files=len(ds),
                    num_workers=self.num_workers,
                    rank=rank,
                    world=world,
                    launch=os.environ.get(LAUNCH_ID_ENV) or None,
                ),
                self.listeners,
            )
