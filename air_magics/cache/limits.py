"""A cache's byte limit split into the index's part and the overflow windows' part.

Why a module of its own: one byte budget bounds everything the cache writes. The overflow windows
(files served past a full cache, :mod:`.overflow`) take a part of the limit, ``overflow_bytes`` or
1/``WINDOW_SHARE`` of it, and the index counts the rest, so files and windows together stay
within the limit. A new limit (``FileCache.limit = ...``, ``%config AirMagics.cache_limit``) is
checked here once for every part that uses it.
"""

from __future__ import annotations

from ..errors import CacheLimitError
from ..io.units import parse_size
from .overflow import DEFAULT_OVERFLOW_FILES

__all__ = ["WINDOW_SHARE", "LOG_SHARE", "split_limit", "check_overflow_files", "log_cap"]

WINDOW_SHARE = 8  # the overflow windows' default share of the limit: 1/8
LOG_SHARE = 32  # the index's write-ahead log may reach 1/32 of the limit (it is outside the budget)


def log_cap(limit: int | None) -> int | None:
    """The most the index's write-ahead log may reach under a byte *limit* (None: no limit, only
    the disk bounds it; see :func:`air_magics.cache.index.wal_budget`)."""
    return None if limit is None else limit // LOG_SHARE


def split_limit(value: int | str | None, overflow_bytes: int | None) -> tuple[int | None, int | None]:
    """``(limit, window)`` for a limit *value* (bytes or ``"10GiB"``; ``None``: no limit, and the
    window is *overflow_bytes*, bounded only by the disk's reserve when that is ``None`` too)."""
    limit = parse_size(value, "cache limit") if value is not None else None
    if limit is not None and limit <= 0:
        raise CacheLimitError(f"cache limit {value!r} must be positive: give e.g. '10GiB', or None for no limit")
    window = overflow_bytes
    if limit is not None:
        window = limit // WINDOW_SHARE if window is None else window
        if window >= limit:
            raise CacheLimitError(
                f"overflow_bytes={overflow_bytes!r} must be less than the cache limit {limit!r}: the "
                f"overflow window is part of the limit (default 1/{WINDOW_SHARE} of it)"
            )
    return limit, window


def check_overflow_files(overflow_files: int) -> int:
    """*overflow_files*, refused below 1 (it bounds how many files past a full cache stay valid)."""
    if overflow_files < 1:
        raise CacheLimitError(
            f"overflow_files={overflow_files!r} must be at least 1: it bounds how many files past a full "
            f"cache stay valid, and should exceed the items a loader keeps in flight (default "
            f"{DEFAULT_OVERFLOW_FILES})"
        )
    return overflow_files
