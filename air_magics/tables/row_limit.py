"""A row limit (``--limit N``, ``read_table(limit=N)``, ``export_table(limit=N)``), checked before any server starts.

Why: Spark's ``DataFrame.limit`` takes a 32-bit int; a larger N failed deep in the Spark Connect
client with an error that named neither the flag nor the range. The range is said here, once.
"""

from __future__ import annotations

from ..errors import TablesError

__all__ = ["MAX_LIMIT", "check_limit"]

MAX_LIMIT = 2**31 - 1  # Spark's DataFrame.limit is a Java int


def check_limit(limit: int | None, what: str = "limit") -> int | None:
    """*limit* when it is a whole number in 0..:data:`MAX_LIMIT` (or None: no limit); else a
    :class:`~air_magics.errors.TablesError` naming the value and the range."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TablesError(f"{what} {limit!r} is not a whole number of rows: use 0 to {MAX_LIMIT:,}")
    if not 0 <= limit <= MAX_LIMIT:
        raise TablesError(f"{what} {limit:,} is out of range: use 0 to {MAX_LIMIT:,} (the maximum Spark takes)")
    return limit
