"""How often a process renews the cache entry of a shard it hands members out of.

Why: eviction spares an entry accessed within ``1.25 x pin_seconds``; a shard read for longer than
that must have its pin renewed while its members (or their paths) are handed out, or it could be
evicted under a reader. Both fetchers (:mod:`.shard_reader` by offset, :mod:`.fetch` as paths) renew at
this pace.
"""

from __future__ import annotations

__all__ = ["renew_every"]

_RENEW_SECONDS = 2.0  # a cached shard's entry is renewed (its pin) at most this often while it is read


def renew_every(pin_seconds: float) -> float:
    """Seconds between renewals of a shard's entry while it is read: often enough that whatever is
    handed out stays pinned ``pin_seconds`` (eviction spares 1.25 x that since the last renewal)."""
    return min(_RENEW_SECONDS, pin_seconds / 8)
