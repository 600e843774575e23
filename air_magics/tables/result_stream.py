"""Stream a query's result to Parquet files on this machine without the server or client holding it whole.

Spark Connect answers a query as one job whose finished partitions wait in the driver's heap until
the client has read them; a client slower than the scan (writing and compressing Parquet) lets the
whole result pile up there, and on the shared embedded server that runs every process out of heap.
So the result is fetched as a series of queries that each return at most about ``chunk_bytes``:

1. the query runs once into a server-side ``localCheckpoint`` on disk (``DISK_ONLY``), each row
   numbered with ``monotonically_increasing_id`` (partition in the high bits), so every later
   query sees exactly the same rows and each is fetched exactly once, whatever the query
   (``rand()``, ``limit`` without order, a changing source);
2. the rows per partition (a small aggregate) and the Arrow size of a sample of rows give ranges of
   row numbers of about ``chunk_bytes`` each;
3. each range is fetched (Arrow batches) and written into files of ``rows_per_file`` rows before
   the next is asked for; the checkpoint is released at the end.

``AIR_EXPORT_CHUNK_BYTES`` sets the chunk size; by default 1/8 of the server's driver memory,
between 32 and 512 MiB.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["write_parquet_stream", "chunk_bytes", "row_ranges"]

_ROW = "__air_row"
_PART_BITS = 33  # monotonically_increasing_id = partition << 33 | row within the partition
_MIB = 1 << 20


def chunk_bytes(spark: Any) -> int:
    """How many result bytes one fetch may ask the server to buffer."""
    from .. import settings
    from ..errors import SettingError, TablesError

    try:
        n = settings.export_chunk_bytes()
    except SettingError as exc:
        raise TablesError(str(exc)) from None
    if n is not None:
        return n
    heap = 0
    try:
        text = str(spark.conf.get("spark.driver.memory", "") or "").strip().lower()
        units = {"k": 1 << 10, "m": _MIB, "g": 1 << 30, "t": 1 << 40}
        heap = int(text[:-1]) * units[text[-1]] if text and text[-1] in units else int(text or 0)
    except Exception:  # a server that does not tell: use the middle of the range
        heap = 1 << 30
    return min(max(heap // 8, 32 * _MIB), 512 * _MIB)


def row_ranges(partition_rows: dict[int, int], rows_per_chunk: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of row numbers covering every row once, each at most *rows_per_chunk* rows.

    *partition_rows* maps a partition index to its row count; rows of partition ``p`` are numbered
    ``p << 33`` upwards."""
    out: list[tuple[int, int]] = []
    lo, taken = None, 0
    for p in sorted(partition_rows):
        n, i = partition_rows[p], 0
        while i < n:
            if lo is None:
                lo, taken = (p << _PART_BITS) + i, 0
            step = min(n - i, rows_per_chunk - taken)
            i, taken = i + step, taken + step
            if taken == rows_per_chunk:
                out.append((lo, (p << _PART_BITS) + i))
                lo = None
    if lo is not None:
        last = max(p for p, n in partition_rows.items() if n)
        out.append((lo, (last << _PART_BITS) + partition_rows[last]))
    return out


def _local_checkpoint(df: Any, level: Any) -> Any:
    """``df.localCheckpoint`` bound to *df*'s own session. pyspark 4.3 binds the checkpointed
    DataFrame to ``SparkSession.active()``: with the embedded session active, every query on a
    remote session's checkpoint then failed with DATAFRAME_NOT_FOUND. The thread's active session
    is *df*'s for the call, and restored after."""
    try:
        from pyspark.sql.connect.session import SparkSession
    except ImportError:  # classic pyspark: no Spark Connect, nothing to rebind
        return df.localCheckpoint(eager=True, storageLevel=level)
    holder = SparkSession._active_session  # noqa: SLF001 - pyspark exposes the active session holder only here
    before = getattr(holder, "session", None)
    holder.session = df.sparkSession
    try:
        return df.localCheckpoint(eager=True, storageLevel=level)
    finally:
        holder.session = before


def _chunks(df: Any, budget: int) -> Iterator[Any]:
    """DataFrames that together hold *df*'s rows once, each about *budget* Arrow bytes."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    ck = _local_checkpoint(df.withColumn(_ROW, F.monotonically_increasing_id()), StorageLevel.DISK_ONLY)
    try:
        counts = ck.groupBy(F.shiftright(F.col(_ROW), _PART_BITS).alias("p")).count().collect()
        parts = {int(r["p"]): int(r["count"]) for r in counts}
        total = sum(parts.values())
        if total == 0:
            yield ck.drop(_ROW)
            return
        sample = ck.drop(_ROW).limit(1000).toArrow()
        per_row = max(1, sample.nbytes // max(sample.num_rows, 1))
        for lo, hi in row_ranges(parts, max(1, budget // per_row)):
            yield ck.where((F.col(_ROW) >= F.lit(lo)) & (F.col(_ROW) < F.lit(hi))).drop(_ROW)
    finally:
        del ck  # releases the server-side checkpoint


def write_parquet_stream(
    spark: Any, df: Any, folder: str, rows_per_file: int, budget: int, on_rows: Callable[[int, int], None]
) -> int:
    """Write *df* into ``folder/part-NNNNN.parquet`` files of *rows_per_file* rows; the row count.

    *on_rows(rows, files)* is called as batches arrive."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .interruptible import raise_if_cancelled

    client = spark.client
    os.makedirs(folder, exist_ok=True)
    writer, n_file, rows_in_file, rows, schema = None, 0, 0, 0, None
    try:
        for chunk in _chunks(df, budget):
            raise_if_cancelled()  # a Ctrl-C interrupts the running query; this stops the next one
            for item in client.to_table_as_iterator(chunk._plan.to_proto(client), chunk._plan.observations):  # noqa: SLF001 - pyspark streams a plan's Arrow batches only through its client
                if not isinstance(item, pa.Table):
                    continue
                for batch in item.to_batches():
                    schema = schema or batch.schema
                    while batch.num_rows:
                        if writer is None or rows_in_file >= rows_per_file:
                            if writer is not None:
                                writer.close()
                            writer = pq.ParquetWriter(os.path.join(folder, f"part-{n_file:05d}.parquet"), schema)
                            n_file, rows_in_file = n_file + 1, 0
                        part = batch.slice(0, rows_per_file - rows_in_file)
                        writer.write_batch(part)
                        batch = batch.slice(part.num_rows)
                        rows_in_file += part.num_rows
                        rows += part.num_rows
                        on_rows(rows, n_file)
    finally:
        if writer is not None:
            writer.close()
    return rows
