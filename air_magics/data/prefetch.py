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

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["Prefetcher"]

_END = object()


class Prefetcher:
    """``for value in Prefetcher(items, fetch, depth): ...``; ``fetch(item)`` runs on a thread pool.

    ``ready(item)`` (optional) returns a value without a thread when one is at hand (a warm cache
    hit), or ``None``. Use as a context manager: leaving cancels what has not started and waits
    for the fetches in flight.
    """

    def __init__(
        self,
        items: Iterable[Any],
        fetch: Callable[[Any], Any],
        depth: int,
        *,
        ready: Callable[[Any], Any | None] | None = None,
        name: str = "air-prefetch",
    ) -> None:
        self._items = iter(items)
        self._fetch, self._ready, self.depth = fetch, ready, depth
        self._pool = ThreadPoolExecutor(max_workers=depth, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._window: deque[Future] = deque()
        self._flying = 0
        self._closed = False

    def __enter__(self) -> Prefetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            window, self._window = list(self._window), deque()
        for fut in window:
            fut.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _landed(self, _fut: Future) -> None:
        with self._lock:
            self._flying -= 1
        self._top_up()

    def _top_up(self) -> None:
        """Start fetches until ``depth`` are in flight or ``2 x depth`` results are waiting."""
        while True:
            with self._lock:
                if self._closed or self._flying >= self.depth or len(self._window) >= 2 * self.depth:
                    return
                item = next(self._items, _END)
                if item is _END:
                    return
                value = self._ready(item) if self._ready is not None else None
                fut: Future = Future()
                if value is not None:
                    fut.set_result(value)
                    self._window.append(fut)
                    continue
                self._flying += 1
                self._window.append(fut)
            self._pool.submit(self._run, item, fut)

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
        with self._lock:
            return bool(self._window) and self._window[0].done()

    def __iter__(self) -> Iterator[Any]:
        self._top_up()
        while True:
            with self._lock:
                if not self._window:
                    return
                head = self._window.popleft()
            value = head.result()
            self._top_up()
            yield value
