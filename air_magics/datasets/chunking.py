"""A DataLoader worker's messages: items cut into lists, the one chunker of the input pipeline.

Why: a worker that sends one item per message pays torch's queue and pickling per item; lists
of items amortize it. A list is cut at ``size`` items, or earlier where ``early(k)`` says so
(the file feed: a whole number of batches is in hand and the next item is not ready, so the
first item never waits for a full list). The loader splits a list back into batches in the
worker (``loader._ChunkCollate``), which is collation, not chunking.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from time import perf_counter
from typing import TypeVar

from ..io.stageclock import STAGES

__all__ = ["chunked"]

T = TypeVar("T")


def chunked(
    values: Iterable[T],
    size: int,
    *,
    early: Callable[[int], bool] | None = None,
    before_send: Callable[[], None] | None = None,
    timed: bool = False,
) -> Iterator[list[T]]:
    """Lists of up to *size* of *values*, in order; the last may be short.

    *early(k)*: cut at ``k`` items before *size* is reached. *before_send*: called before each list
    leaves (the stream's clock flushes its totals into it). *timed*: the time a list spends with
    the consumer (the worker's collate and hand-over) goes to the stage clock as ``outside``."""
    items: list[T] = []
    for value in values:
        items.append(value)
        k = len(items)
        if k >= size or (early is not None and early(k)):
            if before_send is not None:
                before_send()
            if timed:
                t0 = perf_counter()
                yield items
                STAGES.add("outside", perf_counter() - t0)
            else:
                yield items
            items = []
    if items:
        yield items
