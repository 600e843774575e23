"""Refuse to pull a table into this process when it would not fit, before Spark starts sending it.

A read to pandas/NumPy/Arrow collects the whole result in the client (and, on the way, in the
server's driver, whose result size is capped). Failing late, or swapping the notebook to death, is
the worst way to learn that a table is large. So a read is sized first:

1. Spark's plan statistics (``sizeInBytes`` of the optimized plan's root): free, no job runs. They
   come from the files' sizes (compressed Parquet, smaller than in memory) and do not shrink for a
   filter or a join, so they are only a first look;
2. when that look says more than a quarter of the limit, or says nothing, the result is measured:
   its row count (one Spark job, nothing transferred) times the Arrow width of a sample row
   (1,000 rows fetched).

Above the limit the read is refused with one line that names the estimate and suggests ``--to``
(files on a volume, read in pieces) or ``--limit``. The limit is ``max_bytes=`` / ``--max-bytes``,
else the ``table_max_bytes`` setting, else 1/8 of this machine's memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import SettingError, TablesError, TableTooLargeError
from ..io.units import fmt_bytes, parse_size

__all__ = ["SizeEstimate", "check_size", "default_max_bytes", "max_bytes_limit", "plan_bytes", "measured_bytes"]

_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60}
_STATS = re.compile(r"Statistics\(sizeInBytes=([0-9.Ee+]+)\s*(B|KiB|MiB|GiB|TiB|PiB|EiB)")
_UNKNOWN = 1 << 62  # Spark's "no idea" is Long.MaxValue (8.0 EiB)
_SAMPLE_ROWS = 1000


@dataclass(frozen=True)
class SizeEstimate:
    """What a read was estimated at and how (``plan``: Spark's statistics; ``measured``: rows x width)."""

    bytes: int
    how: str
    rows: int | None = None


def default_max_bytes() -> int:
    """1/8 of this machine's memory: room for the result, its conversion copy and everything else."""
    import psutil

    return psutil.virtual_memory().total // 8


def max_bytes_limit(value: int | str | None = None) -> int:
    """The limit: *value* (bytes or ``"4GiB"``), else the ``table_max_bytes`` setting, else the default."""
    from .. import settings

    if value is None:
        try:
            value = settings.get("table_max_bytes")
        except SettingError as exc:
            raise TablesError(str(exc)) from None
        return default_max_bytes() if value is None else int(value)
    try:
        n = parse_size(value, "max_bytes")
    except (ValueError, TypeError):
        n = None
    if n is None or n <= 0:
        raise TablesError(f"max_bytes {value!r} is not a positive size: write e.g. 4GiB or a number of bytes")
    return n


def plan_bytes(df: Any) -> int | None:
    """``sizeInBytes`` of *df*'s optimized plan (no job runs), or ``None`` when Spark does not know.

    A query Spark cannot analyse (a missing table or column) raises its error here."""
    try:
        text = df._explain_string(mode="cost")  # noqa: SLF001 - pyspark's cost estimate has no public accessor
    except Exception as exc:
        if _is_analysis_error(exc):  # a missing table or column: the read fails now, not after a second try
            raise
        return None
    m = _STATS.search(text)
    if not m:
        return None
    n = int(float(m.group(1)) * _UNITS[m.group(2)])
    return None if n >= _UNKNOWN else n


def _is_analysis_error(exc: Exception) -> bool:
    try:
        from pyspark.errors import AnalysisException
    except ImportError:
        return False
    return isinstance(exc, AnalysisException)


def measured_bytes(df: Any) -> SizeEstimate:
    """Row count (a Spark job) times the Arrow bytes per row of a sample of the result."""
    rows = int(df.count())
    if rows == 0:
        return SizeEstimate(0, "measured", 0)
    sample = df.limit(_SAMPLE_ROWS).toArrow()
    per_row = sample.nbytes / max(sample.num_rows, 1)
    return SizeEstimate(int(rows * per_row), "measured", rows)


def check_size(df: Any, limit: int, what: str) -> SizeEstimate:
    """Raise ``TableTooLargeError`` when *df* is estimated above *limit* bytes; the estimate otherwise."""
    first = plan_bytes(df)
    if first is not None and first <= limit // 4:
        return SizeEstimate(first, "plan")
    est = measured_bytes(df)
    if est.bytes > limit:
        rows = f" ({est.rows:,} rows)" if est.rows is not None else ""
        raise TableTooLargeError(
            f"{what}: about {fmt_bytes(est.bytes)}{rows} is over the {fmt_bytes(limit)} limit for reading into "
            f"memory; export it with --to /Volumes/... (tables.export_table) or read less with --limit N "
            f"or --where (the limit: --max-bytes, max_bytes=, setting table_max_bytes)"
        )
    return est
