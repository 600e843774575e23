"""Feeding one stream's items to its consumer: what iterating a :class:`~air_magics.data.UCVolumeDataset` yields.

Why a module of its own: the dataset decides *what* a stream is (its files in epoch order, the
cache validation running ahead of it, how one file is fetched); this decides *how* its items
leave, which is the hot path. Two stages, each entered once per item: *fetch*, a
:class:`~air_magics.datasets.prefetch.Prefetcher` that hands over runs of results in stream order
(while items are at hand, runs of up to 64 looked up in one call into the cache on the consumer's
thread: no thread, no lock, no Future per item; from the first item that is not, ``prefetch``
fetches in flight), and *hand out*, one loop for the main process and DataLoader workers, warm
and cold, that counts every item in the dataset's :class:`Tally` before it leaves (a
``state_dict`` taken mid-epoch resumes at the next item). A worker's chunking into whole batches
is a step after it. The consumer's position reaches the cache validation, and the stream's
seconds blocked on fetches and spent outside it reach the stage clock
(:mod:`air_magics.io.stageclock`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..io.stageclock import STAGES
from .chunking import chunked
from .item_way import ItemWay, SkippedFile, fetch_item
from .prefetch import Prefetcher

if TYPE_CHECKING:
    from ..cache import FileCache, Residency
    from ..volumes.resolved import VolumeFile

__all__ = ["Feed", "Tally", "feed"]


class Tally:
    """What a dataset's streams handed out: ``yielded``, the items of the current stream (skipped
    ones included), exact at every yield, and the files ``skipped``. The dataset owns it and reads
    its progress from it; a stream's hand-out adds to it, one attribute store per item."""

    __slots__ = ("yielded", "skipped")

    def __init__(self) -> None:
        self.yielded = 0
        self.skipped: list[SkippedFile] = []


@dataclass(frozen=True, kw_only=True)
class Feed:
    """One stream of a dataset's epoch and what feeding it to its consumer needs, made by the dataset
    when the stream's first item is asked for (see :func:`feed`)."""

    files: Sequence[VolumeFile]  # the dataset's files; *items* index them
    items: Sequence[int]  # this stream's items, in the order they leave
    cache: FileCache
    way: ItemWay  # how a file becomes its item (the output asked for, chosen once)
    transform: Callable[[Any], Any] | None
    skip_errors: bool  # on_error="skip": a file that fails is a SkippedFile, not an error
    keep: Residency  # what this stream's misses must not evict
    validation: Any  # the cache's validation of *items* (FileCache.validate); closed when the stream ends
    tally: Tally  # the dataset's: counts every item before it leaves
    prefetch: int = 32  # fetches in flight past the first item that is not at hand
    chunk: int = 0  # > 0 in a DataLoader worker: lists of up to *chunk* items ...
    batch: int = 1  # ... a multiple of *batch* long unless the stream ends
    timed: bool = False  # in a worker: time outside the stream is its consumer's (a wrapper's decode)
    packed: bool = False  # members of packed folders among *files*


class _StreamClock:
    """A stream's wall seconds blocked on its fetches, added to the process's stage clock every
    few items (see :mod:`air_magics.io.stageclock`); the seconds spent outside the stream (by its
    consumer) are added as each item comes back, since a worker's next batch carries the totals."""

    __slots__ = ("fetched", "_blocked")

    def __init__(self, fetched: Prefetcher) -> None:
        self.fetched, self._blocked = fetched, 0.0

    def flush(self) -> None:
        blocked = self.fetched.blocked
        if blocked > self._blocked:
            STAGES.add("blocked", blocked - self._blocked)
            self._blocked = blocked


def feed(plan: Callable[[], Feed]) -> Iterator[Any]:
    """The items of the stream *plan* makes, planned when the first one is asked for.

    Why *plan* is a callback: the dataset's ``__iter__`` returns this generator itself, so its
    items pass through no generator of the dataset's own (a warm item costs this loop and the
    cache's lookup, nothing more), and the stream is still planned at the first ``next()``, not
    at ``iter()``, as the body of a generator ``__iter__`` would be.

    The stream is two stages: *fetch* (:class:`Prefetcher`: hits looked up a run at a time on
    the consumer's thread, misses on threads, runs of results in stream order) and *hand out*
    (:func:`_hand_out`, the one loop that counts each item before it leaves); a DataLoader
    worker's chunking (:func:`_chunked`) is a step between them, the same loop for warm and
    cold items, fresh and persistent workers."""
    fd = plan()
    validation = fd.validation
    try:
        with Prefetcher(
            fd.items, _fetcher(fd), fd.prefetch, ready=_ready(fd), ready_run=_ready_run(fd), on_window=validation.start
        ) as fetched:
            clock = _StreamClock(fetched)
            try:
                runs = fetched.runs()
                yield from (
                    _chunked(fd, runs, fetched, clock) if fd.chunk else _hand_out(fd, runs, clock, timed=fd.timed)
                )
            finally:
                clock.flush()
    finally:
        validation.close()
        try:
            fd.cache.publish_status(soon=True)
        except Exception:  # e.g. a generator closed during interpreter shutdown
            pass


def _fetcher(fd: Feed) -> Callable[[int], Any]:
    """One item fetched on a thread: its file's version found first (no second request for it)."""
    files, keep, way, wait = fd.files, fd.keep, fd.way, fd.validation.wait
    transform, skip = fd.transform, fd.skip_errors

    def fetch(i: int) -> Any:
        wait(i)
        return fetch_item(way, files[i], keep, i, transform=transform, skip_errors=skip)

    return fetch


def _ready(fd: Feed) -> Callable[[int], Any | None]:
    """One item's value if it is at hand (a warm file needs no thread), else None; an item with a
    transform always goes to the threads, where the transform runs."""
    files, validation = fd.files, fd.validation
    ready_member, from_path = fd.way.ready_member, fd.way.from_path
    hit, validated_here, transform = fd.cache.reads.hit, fd.cache.reads.validated_here, fd.transform

    def ready(i: int) -> Any | None:
        if transform is not None:
            return None
        f = files[i]
        member = f.member
        if member is not None:
            return ready_member(member, i)
        path = hit(f)
        if path is None and validation.started and validated_here(files, i) and validation.wait(i):
            # known here but its pin has aged (an epoch longer than pin_seconds / 4): the validation
            # re-pins it a batch per transaction; waiting for that beats a thread and a transaction
            # of its own per item (a warm epoch at 1M files: ~45 us a file that way)
            path = hit(f)
        return None if path is None else from_path(path)

    return ready


def _ready_run(fd: Feed) -> Callable[[list[int]], list[Any]] | None:
    """The values of a run's leading items that are at hand; for a plain folder's paths one call
    into the cache per run (None: the prefetcher asks :func:`_ready` item by item)."""
    if fd.transform is not None or not fd.way.paths or fd.packed:
        return None
    cache, files, validation = fd.cache, fd.files, fd.validation
    hit_paths, validated_here = cache.reads.hit_paths, cache.reads.validated_here

    def ready_run(block: list[int]) -> list[Any]:
        paths = hit_paths(files, block)
        # files validated here whose pins aged (an epoch longer than pin_seconds / 4, as at a million
        # files): the validation re-pins the block's in one transaction, then the run goes on here;
        # a fetch thread would cost a hand-off and a second lookup per item (~10 us a file)
        while len(paths) < len(block) and validated_here(files, block[len(paths)]):
            if not validation.wait(block[-1]):
                break
            more = hit_paths(files, block[len(paths) :])
            if not more:
                break
            paths += more
        return paths

    return ready_run


def _hand_out(fd: Feed, runs: Iterable[list[Any]], clock: _StreamClock, *, timed: bool) -> Iterator[Any]:
    """The hand-out loop: each item counted in the dataset's tally before it leaves (a
    ``state_dict`` taken between two items resumes at the next one), a skipped file recorded
    instead of yielded, the consumer's position passed to the validation once per run; *timed*
    (a worker's items handed one by one): the time outside the stream is its consumer's."""
    tally, advance = fd.tally, fd.validation.advance
    skipped = tally.skipped
    for run in runs:
        advance(tally.yielded + len(run))
        clock.flush()
        for value in run:
            tally.yielded += 1
            if value.__class__ is SkippedFile:
                skipped.append(value)
            elif timed:
                t0 = perf_counter()
                yield value
                # on the clock at once: the batch a wrapper is building carries the totals
                STAGES.add("outside", perf_counter() - t0)
            else:  # the loop's own process: the time outside is the loop's compute
                yield value


def _chunked(fd: Feed, runs: Iterator[list[Any]], fetched: Prefetcher, clock: _StreamClock) -> Iterator[list[Any]]:
    """A DataLoader worker's messages, cut from the hand-out loop: lists of up to ``fd.chunk``
    items, a multiple of ``fd.batch`` unless the stream ends, sent as soon as the next item is
    not ready yet (the first item never waits for a full chunk). An item is counted as it joins
    a list, so the position a list carries counts exactly the items sent with it and before it."""
    chunk, batch, tally = fd.chunk, fd.batch, fd.tally
    run_end = 0  # the count at which the run being handed out ends

    def tracked() -> Iterator[list[Any]]:
        nonlocal run_end
        for run in runs:
            run_end = tally.yielded + len(run)
            yield run

    def early(k: int) -> bool:  # whole batches in hand, the run handed out, and the next item not ready
        return k % batch == 0 and tally.yielded >= run_end and not fetched.next_ready()

    return chunked(
        _hand_out(fd, tracked(), clock, timed=False), chunk, early=early, before_send=clock.flush, timed=True
    )
