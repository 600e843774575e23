"""What one process hands out of a packed folder's shards: the clock of its overflow copies.

Why: a shard that found no room in the cache (:meth:`~air_magics.cache.FileCache.claim` said no)
is copied into the process's overflow folder instead; like an overflow file, the copy stays valid
until ``size`` (the cache's ``overflow_files``) more members were handed out by this process, then
it goes. Both fetchers (:mod:`.cached` by offset, :mod:`.fetch` as paths) count here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ["HandOuts", "renew_every"]

_RENEW_SECONDS = 2.0  # a cached shard's entry is renewed (its pin) at most this often while it is read


def renew_every(pin_seconds: float) -> float:
    """Seconds between renewals of a shard's entry while it is read: often enough that whatever is
    handed out stays pinned ``pin_seconds`` (eviction spares 1.25 x that since the last renewal)."""
    return min(_RENEW_SECONDS, pin_seconds / 8)


class HandOuts:
    """The hand-out count of one fetcher and its overflow copies (shard index -> count at last use)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.count = 0
        self._last: dict[int, int] = {}
        self._queue: deque[tuple[int, int]] = deque()  # (count when queued, shard), oldest first

    def hold(self, i: int) -> None:
        """Shard *i* is served from an overflow copy from now on."""
        self._last[i] = self.count
        self._queue.append((self.count, i))

    def tick(self, i: int) -> bool:
        """Count one member of shard *i* handed out; True when it came from an overflow copy."""
        self.count += 1
        if i in self._last:
            self._last[i] = self.count
            return True
        return False

    def expired(self, busy: Callable[[int], bool]) -> list[int]:
        """The overflow copies not used in the last ``size`` hand-outs (forgotten here: remove
        them); one still being fetched (*busy*) counts from now."""
        queue, horizon, out = self._queue, self.count - self.size, []
        while queue and queue[0][0] < horizon:
            _, i = queue.popleft()
            last = self._last.get(i)
            if last is None:
                continue
            if busy(i):
                queue.append((self.count, i))
            elif last >= horizon:  # used since: stays, from its last use
                queue.append((last, i))
            else:
                del self._last[i]
                out.append(i)
        return out

    def due(self) -> bool:
        """Whether :meth:`expired` has anything to look at (cheap: the warm path asks every time)."""
        queue = self._queue
        return bool(queue) and queue[0][0] < self.count - self.size

    def forget(self, i: int) -> None:
        """Shard *i*'s copy is gone (its state dropped another way)."""
        self._last.pop(i, None)
