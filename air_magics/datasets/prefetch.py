"""In-order results of a stream of fetches, with a fixed number always in flight.

Why: a window that starts the next fetch only when the oldest one is handed out stalls behind
one slow file (head-of-line blocking): on a cold epoch at 10 ms per request the loader kept far
fewer than ``depth`` requests in flight, while the copy engine, whose threads each take the next
file as soon as they finish one, kept all of them busy. Here a finished fetch starts the next one
at once (from its done-callback), so ``depth`` fetches stay in flight whatever order they finish
in; results are still handed out in stream order (exact resume counts a prefix of the stream),
and at most ``2 x depth`` results wait to be handed out.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..io.pools import job_pool

__all__ = ["Prefetcher"]

_END = object()
RUN = 64  # items looked up at once while nothing is in flight, and the most a run holds


class _Ready:
    """A result that was at hand when its item was queued (no Future, no thread)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    @staticmethod
    def done() -> bool:
        return True

    def result(self) -> Any:
        return self.value


class Prefetcher:
    """``for run in Prefetcher(items, fetch, depth).runs(): ...``; ``fetch(item)`` runs on a thread pool.

    Results leave in *runs*: lists of consecutive results in stream order, so the consumer's loop
    is entered once per run, not once per item. While nothing is in flight the consumer looks up
    ``RUN`` items at once with ``ready_run(items)``, which returns the values of the leading items
    that are at hand (a warm cache: one call into the cache, no thread, no lock, no Future); the
    first item that is not starts the threaded window (``on_window`` is called once, before the
    window's first fetch), which runs until it drains, a run then being the head result (waited
    for) and those behind it that are already in. Inside the window ``ready(item)`` still spares
    a thread for an item at hand. Use as a context manager: leaving cancels what has not started
    and waits for the fetches in flight. Iterating the Prefetcher itself yields the results one by one.
    """

    def __init__(
        self,
        items: Iterable[Any],
        fetch: Callable[[Any], Any],
        depth: int,
        *,
        ready: Callable[[Any], Any | None] | None = None,
        ready_run: Callable[[list[Any]], list[Any]] | None = None,
        on_window: Callable[[], None] | None = None,
        name: str = "air-prefetch",
    ) -> None:
        self._items = iter(items)
        self._fetch, self._ready, self.depth = fetch, ready, depth
        self._ready_run = ready_run if ready_run is not None else self._leading_ready
        self._on_window = on_window
        self._name = name
        self._pool: ThreadPoolExecutor | None = None  # made on the first item that is not ready
        self._lock = threading.Lock()
        self._filling = threading.Lock()  # held by the one thread advancing the items (see _top_up)
        self._exhausted = False
        self._window: deque[Any] = deque()  # Futures and _Ready results, in stream order
        self._flying = 0
        self._closed = False
        self._inline = True  # the consumer owns the item iterator (nothing in flight, nothing queued)
        self.blocked = 0.0  # seconds the consumer waited for a result that was not in yet

    def _leading_ready(self, block: list[Any]) -> list[Any]:
        """The default ``ready_run``: ``ready`` item by item, up to the first that is not at hand."""
        ready, out = self._ready, []
        if ready is not None:
            for item in block:
                value = ready(item)
                if value is None:
                    break
                out.append(value)
        return out

    def __enter__(self) -> Prefetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            window, self._window = list(self._window), deque()
        for fut in window:
            if isinstance(fut, Future):
                fut.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _landed(self, _fut: Future) -> None:
        with self._lock:
            self._flying -= 1
        self._top_up()

    def _start(self, item: Any) -> None:
        """Under the lock: queue *item* for a thread (the window leaves inline mode)."""
        fut: Future = Future()
        self._flying += 1
        self._window.append(fut)
        if self._pool is None:
            self._pool = job_pool("stream", self._name, self.depth)
        self._pool.submit(self._run, item, fut)

    def _top_up(self) -> None:
        """Start fetches until ``depth`` are in flight or ``2 x depth`` results are waiting.

        One thread fills at a time (``_filling``, taken without waiting): it alone advances the
        items, so ``ready`` (a cache lookup) runs outside the window's lock while the window keeps
        stream order. A thread that finds the filler busy leaves; the filler looks for room once
        more after it lets go, so a fetch that landed meanwhile is not missed."""
        while self._filling.acquire(blocking=False):
            try:
                self._fill()
            finally:
                self._filling.release()
            with self._lock:
                if not self._room():
                    return

    def _room(self) -> bool:
        """Under the lock: whether the filler may start another item."""
        return (
            not (self._inline or self._closed or self._exhausted)
            and self._flying < self.depth
            and len(self._window) < 2 * self.depth
        )

    def _fill(self) -> None:
        while True:
            with self._lock:
                if not self._room():
                    return
            item = next(self._items, _END)
            if item is _END:
                self._exhausted = True
                return
            value = self._ready(item) if self._ready is not None else None  # outside the lock
            with self._lock:
                if value is not None:
                    self._window.append(_Ready(value))
                else:
                    self._start(item)

    def _run(self, item: Any, fut: Future) -> None:
        if not fut.set_running_or_notify_cancel():
            self._landed(fut)
            return
        try:
            fut.set_result(self._fetch(item))
        except BaseException as exc:  # handed to the consumer in order, like a result
            fut.set_exception(exc)
        self._landed(fut)

    def next_ready(self) -> bool:
        """True when the next result is already there (the consumer may batch it with this one)."""
        if self._inline:
            return True  # inline, the next items are looked up at once (and are usually hits)
        with self._lock:
            return bool(self._window) and self._window[0].done()

    def __iter__(self) -> Iterator[Any]:
        for run in self.runs():
            yield from run

    def runs(self) -> Iterator[list[Any]]:
        """The results in stream order, as lists of up to ``RUN`` (see the class)."""
        lock, window = self._lock, self._window
        while True:
            if self._inline:
                block = list(itertools.islice(self._items, RUN))
                if not block:
                    self._exhausted = True
                    return
                values = self._ready_run(block)
                if values:
                    yield values
                if len(values) == len(block):
                    continue
                rest = block[len(values) :]
                if self._on_window is not None:  # the window's first fetch may need it
                    self._on_window()
                    self._on_window = None
                with lock:  # not ready: this item and those after it go through the window
                    self._inline = False
                    self._items = itertools.chain(rest[1:], self._items)
                    self._start(rest[0])
                self._top_up()
            with lock:
                head = window.popleft() if window else None
            if head is None:
                # drained: back to looking up inline once the last fetch's callback has run (it lands
                # just after its result is set, and may still top the window up); taking the
                # filler's lock first means no filler is between two items of the stream
                with self._filling, lock:
                    if not window and self._flying == 0:
                        if self._exhausted:
                            return
                        self._inline = True
                if not self._inline:
                    time.sleep(0)
                continue
            if head.done():
                run = [head.result()]
            else:
                t0 = time.perf_counter()
                run = [head.result()]
                self.blocked += time.perf_counter() - t0
            with lock:  # what is already in behind the head joins its run (an error stays for its turn)
                while window and len(run) < RUN:
                    nxt = window[0]
                    if not nxt.done() or (nxt.__class__ is not _Ready and nxt.exception() is not None):
                        break
                    run.append(window.popleft().result())
            self._top_up()
            yield run
