"""Reading a table stored as files (``read_table("/Volumes/.../tbl")``): no Spark session at all.

Why: an export, a folder of Parquet or a Delta table on a volume is already the data; starting a
Spark server to read it back costs seconds and, for Delta, cannot work here (no Delta jars). The
folder is resolved exactly as :class:`~air_magics.data.UCDataset` resolves it (one snapshot's live
files for a Delta table, deletion vectors and partition values applied: :mod:`air_magics.tablefiles`),
read row group by row group through the volume store's confined open, and refused as soon as what
was read passes the size limit (the limit of :mod:`.size_guard`), before it is converted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import AirError, TablesError, TableTooLargeError
from ..io.units import fmt_bytes
from ..volumes.store import VolumeStore

__all__ = ["is_folder_source", "read_folder", "describe_folder"]


def is_folder_source(name: str) -> bool:
    """Whether *name* names files (a ``/Volumes/...`` or local folder), not a catalog table."""
    return isinstance(name, str) and name.strip().startswith("/")


def _resolve(path: str, version: int | None, timestamp: Any, store: VolumeStore | None) -> Any:
    from ..tablefiles.resolve import resolve

    store = store or VolumeStore.shared()
    try:
        return store, resolve(path, store, version=version, timestamp=timestamp)
    except AirError as exc:
        raise TablesError(str(exc)) from None


def describe_folder(path: str, preview: int = 5) -> tuple[list[tuple[str, str]], int, Any]:
    """``(columns and types, rows, first *preview* rows as pandas)`` of a folder: rows from the
    footers and the Delta log only (live rows of a snapshot), the preview read."""
    store, table = _resolve(path, None, None, None)
    rows = table.delta.rows if table.delta is not None else -1
    if rows < 0:  # plain Parquet, or a log without counts: the footers (live rows less the masks)
        rows = sum(
            sum(p.row_groups) if p.view is None or p.view.keep is None else _live(p.view.keep, sum(p.row_groups))
            for p in table.parts
        )
    cols = [(f.name, str(f.type)) for f in table.schema]
    return cols, rows, read_folder(path, limit=preview, store=store)


def _live(keep: Any, n: int) -> int:
    return int(keep[:n].sum()) + max(0, n - len(keep))


def read_folder(
    path: str,
    *,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    limit: int | None = None,
    to: str = "pandas",
    max_bytes: int | None = None,
    version: int | None = None,
    timestamp: Any = None,
    store: VolumeStore | None = None,
) -> Any:
    """The rows of folder *path* (plain Parquet, or a Delta table at *version* / *timestamp*) as
    pandas, a NumPy structured array or Arrow. *where* is a SQL condition (the subset
    ``UCDataset``'s ``filter`` takes: comparisons, AND/OR/NOT, IN, BETWEEN, IS NULL)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..tablefiles.filter import filter_columns, parse_filter
    from ..tablefiles.scan import scan_row_group

    if limit is not None and limit < 0:
        raise TablesError(f"limit {limit} must be >= 0")
    store, table = _resolve(path, version, timestamp, store)
    names = list(table.schema.names)
    cols = [c.strip() for c in columns] if columns else names
    if bad := [c for c in cols if c not in names]:
        raise TablesError(f"columns {bad} are not in {path}; it has {names}")
    try:
        expr = parse_filter(where, table.schema) if where else None
    except AirError as exc:
        raise TablesError(str(exc)) from None
    read_cols = list(dict.fromkeys(cols + filter_columns(expr, names)))
    schema = pa.schema([table.schema.field(c) for c in cols])
    out: list[Any] = []
    rows = nbytes = 0
    for part in table.parts:
        if limit is not None and rows >= limit:
            break
        with store.open(part.key, "rb") if part.volume else open(part.key, "rb") as f:
            pf = pq.ParquetFile(f)
            offset = 0
            for rg, n in enumerate(part.row_groups):
                for b in scan_row_group(pf, rg, read_cols, cols, expr, part.view, offset):
                    if limit is not None:
                        b = b.slice(0, limit - rows)
                    out.append(b)
                    rows, nbytes = rows + b.num_rows, nbytes + b.nbytes
                    if max_bytes is not None and nbytes > max_bytes:
                        raise TableTooLargeError(
                            f"reading {path}: more than {fmt_bytes(max_bytes)} after {rows:,} rows, over the limit "
                            f"for reading into memory; read less with --limit N, --columns or --where, or stream "
                            f"it with UCDataset (the limit: --max-bytes, max_bytes=, setting table_max_bytes)"
                        )
                    if limit is not None and rows >= limit:
                        break
                if limit is not None and rows >= limit:
                    break
                offset += n
    tbl = pa.Table.from_batches(out, schema=schema)
    if to == "arrow":
        return tbl
    if to == "pandas":
        return tbl.to_pandas()
    return tbl.to_pandas().to_records(index=False)  # numpy: a structured array keeps each column's dtype
