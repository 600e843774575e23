"""Feeding one stream's items to its consumer: what iterating a :class:`~air_magics.data.UCVolumeDataset` yields.

Why a module of its own: the dataset decides *what* a stream is (its files in epoch order, the
cache validation running ahead of it, how one file is fetched); this decides *how* its items
leave, which is the hot path. While items are at hand they leave on the consumer's thread in runs
of ``_RUN`` looked up in one call into the cache (no thread, no lock, no Future per item); from the
first item that is not, a :class:`~air_magics.data.prefetch.Prefetcher` keeps ``prefetch`` fetches
in flight. In a DataLoader worker items leave as lists of ready items (whole batches). Every item
counts in the dataset's :class:`Tally` before it is yielded (a ``state_dict`` taken mid-epoch
resumes at the next item), the consumer's position reaches the cache validation, and the
stream's seconds blocked on fetches and spent outside it reach the stage clock
(:mod:`air_magics.io.stageclock`).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..io.stageclock import STAGES
from .prefetch import Prefetcher

if TYPE_CHECKING:
    from ..cache import FileCache, Residency
    from ..volumes.resolved import VolumeFile

__all__ = ["Feed", "SkippedFile", "Tally", "feed", "read_local"]

_ADVANCE_EVERY = 64  # items between two reports of the consumer's position to the validation
_RUN = 64  # items a warm run looks up at once (one call into the cache)


@dataclass(frozen=True)
class SkippedFile:
    """A file left out after a permanent error (``on_error="skip"``)."""

    path: str
    reason: str


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
    output: str  # "path", "bytes" or "file"
    transform: Callable[[Any], Any] | None
    fetch: Callable[[VolumeFile, Residency | None, int], Any]  # (file, keep, index) -> item or SkippedFile
    keep: Residency  # what this stream's misses must not evict
    validation: Any  # the cache's validation of *items* (FileCache.validate); closed when the stream ends
    tally: Tally  # the dataset's: counts every item before it leaves
    prefetch: int = 32  # fetches in flight past the first item that is not at hand
    chunk: int = 0  # > 0 in a DataLoader worker: lists of up to *chunk* items ...
    batch: int = 1  # ... a multiple of *batch* long unless the stream ends
    timed: bool = False  # in a worker: time outside the stream is its consumer's (a wrapper's decode)
    packed: bool = False  # members of packed folders among *files*
    slices: bool = False  # packed members leave as MemberSlices (the loader reads their bytes)


def read_local(path: str, output: str) -> Any:
    """A cached file's content (``"bytes"``) or a file object over it (``"file"``)."""
    if output == "file":
        return open(path, "rb")  # noqa: SIM115 - the consumer owns the file object
    with open(path, "rb") as f:
        return f.read()


def _named(f: io.BytesIO, name: str) -> io.BytesIO:
    f.name = name  # type: ignore[attr-defined]  # decoders (PIL) guess the format from it
    return f


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
    at ``iter()``, as the body of a generator ``__iter__`` would be."""
    fd = plan()
    files, cache, output, transform, tally = fd.files, fd.cache, fd.output, fd.transform, fd.tally
    validation, keep, chunk, slices, fetch_file, timed = fd.validation, fd.keep, fd.chunk, fd.slices, fd.fetch, fd.timed
    hit = cache.hit

    def ready(i: int) -> Any | None:  # a warm file needs no thread; a transform runs on the threads
        f = files[i]
        if transform is not None:
            return None
        member = f.member
        if member is not None:
            if output == "path":
                return member.ready()
            if slices:
                return member.ready_slice(i)
            data = member.ready_bytes()
            return data if data is None or output == "bytes" else _named(io.BytesIO(data), member.name)
        path = hit(f)
        if path is None and validation.started and cache.validated_here(files, i) and validation.wait(i):
            # known here but its pin has aged (an epoch longer than pin_seconds / 4): the validation
            # re-pins it a batch per transaction; waiting for that beats a thread and a transaction
            # of its own per item (a warm epoch at 1M files: ~45 us a file that way)
            path = hit(f)
        return path if path is None or output == "path" else read_local(path, output)

    def fetch(i: int) -> Any:
        validation.wait(i)  # its version is being found: no second request for it
        return fetch_file(files[i], keep, i)

    try:
        rest: Iterator[int] | None = iter(fd.items)
        carry: list[Any] = []
        if transform is None and output == "path":  # a warm stream needs no prefetcher
            if not chunk:
                rest = yield from _warm_run(fd, rest)
            else:
                rest, carry = yield from _warm_chunks(fd, rest)
            if rest is None:
                if carry:
                    yield carry
                return
        # an item not at hand (or a stream that does not run warm): its version may need checking
        # against the volume, so the validation starts now, not at the first fetch thread's wait
        validation.start()
        with Prefetcher(rest, fetch, fd.prefetch, ready=ready) as fetched:
            clock = _StreamClock(fetched)
            try:
                if not chunk:
                    for value in fetched:
                        n = tally.yielded = tally.yielded + 1
                        if n % _ADVANCE_EVERY == 0:
                            validation.advance(n)
                            clock.flush()
                        if value.__class__ is SkippedFile:
                            tally.skipped.append(value)
                        elif timed:  # in a worker, the time outside the stream is its consumer's
                            t0 = perf_counter()
                            yield value
                            STAGES.add("outside", perf_counter() - t0)  # before the wrapper's batch leaves
                        else:  # the loop's own process: the time outside is the loop's compute
                            yield value
                    return
                yield from _chunks(fd, fetched, clock, carry)
            finally:
                clock.flush()
    finally:
        validation.close()
        try:
            cache.publish_status(soon=True)
        except Exception:  # e.g. a generator closed during interpreter shutdown
            pass


def _warm_chunks(fd: Feed, items: Iterator[int]) -> Generator[list[str], None, tuple[Iterator[int] | None, list[str]]]:
    """:func:`_warm_run` for a DataLoader worker: lists of ``fd.chunk`` paths (a multiple of the
    batch size); returns the rest of the stream (or None) and the paths gathered since the last
    list, which the prefetcher's lists carry on."""
    tally, validation, chunk, ready = fd.tally, fd.validation, fd.chunk, []
    while block := list(itertools.islice(items, _RUN)):
        paths = _ready_paths(fd, block)
        n = tally.yielded = tally.yielded + len(paths)
        validation.advance(n)
        ready += paths
        while len(ready) >= chunk:
            t0 = perf_counter()
            yield ready[:chunk]
            # the worker's collate and hand-over, on the clock before the next batch carries its totals
            STAGES.add("outside", perf_counter() - t0)
            ready = ready[chunk:]
        if len(paths) < len(block):
            return itertools.chain(block[len(paths) :], items), ready
    return None, ready


def _ready_paths(fd: Feed, block: list[int]) -> list[str]:
    """The paths of the leading files of *block* (indices into ``fd.files``) that are at hand
    (cached and validated here, or a packed member already extracted): a plain folder's run is
    one call into the cache."""
    if not fd.packed:
        cache, files, validation = fd.cache, fd.files, fd.validation
        paths = cache.hit_paths(files, block)
        # files validated here whose pins aged (an epoch longer than pin_seconds / 4, as at a million
        # files): the validation re-pins the block's in one transaction, then the run goes on here;
        # the prefetcher would cost a thread hand-off and a second lookup per item (~10 us a file)
        while len(paths) < len(block) and cache.validated_here(files, block[len(paths)]):
            if not validation.wait(block[-1]):
                break
            more = cache.hit_paths(files, block[len(paths) :])
            if not more:
                break
            paths += more
        return paths
    hit, paths, files = fd.cache.hit, [], fd.files
    for f in (files[i] for i in block):
        member = f.member
        path = hit(f) if member is None else member.ready()
        if path is None:
            break
        paths.append(path)
    return paths


def _warm_run(fd: Feed, items: Iterator[int]) -> Generator[str, None, Any]:
    """The stream's paths while they are at hand, on the consumer's thread (a warm epoch: runs
    of ``_RUN`` items looked up at once, no thread, no lock per item); returns the rest of the
    stream from the first item that is not (for the prefetcher), or None when the stream ended."""
    tally, validation, timed = fd.tally, fd.validation, fd.timed
    n = tally.yielded
    while block := list(itertools.islice(items, _RUN)):
        paths = _ready_paths(fd, block)
        validation.advance(n + len(paths))
        for path in paths:
            n = tally.yielded = n + 1
            if timed:  # in a worker, the time outside the stream is its consumer's (a wrapper's decode)
                t0 = perf_counter()
                yield path
                # on the clock at once: the batch the wrapper is building carries the totals, and a
                # total kept here until the run ends left the verdict blind for the whole warm epoch
                STAGES.add("outside", perf_counter() - t0)
            else:
                yield path
        if len(paths) < len(block):
            return itertools.chain(block[len(paths) :], items)
    return None


def _chunks(fd: Feed, fetched: Prefetcher, clock: _StreamClock, carry: list[Any]) -> Iterator[list[Any]]:
    """Lists of ready items for a DataLoader worker: up to ``fd.chunk`` items, a multiple of
    ``fd.batch`` unless the stream ends, sent as soon as the next item is not ready yet (*carry*:
    items the warm run had gathered when it met one that was not)."""
    tally, validation, chunk, batch = fd.tally, fd.validation, fd.chunk, fd.batch
    ready_items: list[Any] = carry
    for value in fetched:
        n = tally.yielded = tally.yielded + 1
        if n % _ADVANCE_EVERY == 0:
            validation.advance(n)
        if value.__class__ is SkippedFile:
            tally.skipped.append(value)
        else:
            ready_items.append(value)
        k = len(ready_items)
        if k and (k >= chunk or (k % batch == 0 and not fetched.next_ready())):
            clock.flush()
            t0 = perf_counter()
            yield ready_items
            STAGES.add("outside", perf_counter() - t0)  # the worker's collate and hand-over
            ready_items = []
    if ready_items:
        yield ready_items
