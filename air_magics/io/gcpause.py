"""Pausing Python's cyclic garbage collector while a listing builds its many small objects.

Why: a listing makes a few objects per file (names, rows, locations), none of them in a cycle. The
cyclic collector runs after every 700 new container objects and, as they survive, scans all of them
again in its older generations: at 100,000 files it took half of a dataset's listing time. Reference
counting still frees everything at once; the collector runs again right after the block.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0  # blocks open in any thread: the collector resumes when the last one ends


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
                _depth -= 1
                if _depth == 0:
                    gc.enable()
