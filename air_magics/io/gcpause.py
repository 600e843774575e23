"""Pausing Python's cyclic garbage collector while a listing builds its many small objects.

Why: a listing makes a few objects per file (names, rows, locations), none of them in a cycle. The
cyclic collector runs after every 700 new container objects and, as they survive, scans all of them
again in its older generations: at 100,000 files it took half of a dataset's listing time. Reference
counting still frees everything at once; the collector runs again right after the block.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0  # blocks open in any thread: the collector resumes when the last one ends


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's threads, so none of their open blocks: a fresh lock,
    and the collector back on if only those blocks had paused it."""
    global _lock, _depth
    _lock = threading.Lock()
    if _depth:
        _depth = 0
        gc.enable()


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off (if it was on), restored when the last such
    block in the process ends."""
    global _depth
    with _lock:
        paused = _depth > 0 or gc.isenabled()  # off by the application's choice: left to it
        if paused:
            _depth += 1
            gc.disable()
    try:
        yield
    finally:
        if paused:
            with _lock:
                _depth = max(0, _depth - 1)  # 0 already: a block open at fork() ending in the child
                if _depth == 0:
                    gc.enable()
