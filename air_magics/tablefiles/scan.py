"""Reading a table's rows from Parquet row groups, in ranges. Memory stays bounded.

A row range is read row group by row group with ``ParquetFile.iter_batches`` (only the needed
columns, ``READ_ROWS`` rows at a time, the filter applied to each record batch), so memory holds
one record batch whatever the table's size (:class:`Rows`; a dataset's stream turns the ranges it
is given into batches, see :mod:`air_magics.datasets.row_batches`).

A Delta file whose batches need conforming (partition values, deletion vectors, column mapping:
a :class:`~.delta.FileView`) is read the same way; each record batch passes through its view
before the filter, so positions are counted over live rows. Other files take the plain path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["count_rows", "count_view_rows", "scan_row_group", "Rows", "to_columns", "READ_ROWS"]

READ_ROWS = 65536
BUFFER = 1 << 20  # bytes read per column at a time: memory does not grow with the row group


def count_rows(path: str, row_group: int, expr: Any) -> int:
    """Rows of one row group that pass *expr* (row-group statistics first, then the filter's columns)."""
    import pyarrow.dataset as pads
    import pyarrow.fs as pafs

    frag = pads.ParquetFileFormat().make_fragment(path, filesystem=pafs.LocalFileSystem(), row_groups=[row_group])
    return frag.count_rows(filter=expr)


def count_view_rows(path: str, row_group: int, expr: Any, view: Any, offset: int, cols: list[str]) -> int:
    """Rows of one row group of a Delta file that are live and pass *expr* (read through its view;
    *offset*: the row group's first row in the file, *cols*: the columns *expr* reads)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path, buffer_size=BUFFER)
    return sum(b.num_rows for b in scan_row_group(pf, row_group, cols, cols, expr, view, offset))


def scan_row_group(
    pf: Any,
    row_group: int,
    read_cols: list[str],
    out_cols: list[str],
    expr: Any,
    view: Any = None,
    offset: int = 0,
) -> Iterator[Any]:
    """Every row of one row group of the open ``ParquetFile`` *pf* that is live and passes *expr*,
    as record batches of *out_cols* (for whole-table reads: no plan, no torch)."""
    cur = _Cursor(pf, row_group, read_cols, out_cols, expr, view, offset)
    while cur.step():
        yield cur.batch


class _Cursor:
    """Sequential reader of one row group's rows that pass the filter; position counted after it."""

    def __init__(
        self,
        pf: Any,
        row_group: int,
        read_cols: list[str],
        out_cols: list[str],
        expr: Any,
        view: Any = None,
        offset: int = 0,
    ) -> None:
        cols = read_cols if view is None else view.columns(read_cols)
        self._it = pf.iter_batches(batch_size=READ_ROWS, row_groups=[row_group], columns=cols, use_threads=False)
        self.read_cols, self.out_cols, self.expr = read_cols, out_cols, expr
        self.view, self.offset = view, offset  # offset: the file row of the next batch read (views only)
        self.pos = 0  # filtered position of the first row in self._buf
        self._buf: Any = None

    @property
    def batch(self) -> Any:
        """The record batch at the cursor (after :meth:`step`)."""
        return self._buf

    def step(self) -> bool:
        """Move past the buffered rows to the next non-empty batch; False at the row group's end."""
        if self._buf is not None:
            self.pos += self._buf.num_rows
        return self._next()

    def _next(self) -> bool:
        for b in self._it:
            if self.view is not None:
                n = b.num_rows
                b = self.view.conform(b, self.read_cols, self.offset)
                self.offset += n
            if self.expr is not None:
                b = b.filter(self.expr)
            if b.num_rows:
                self._buf = b.select(self.out_cols)
                return True
        self._buf = None
        return False

    def read(self, lo: int, hi: int) -> list[Any]:
        """Record batches of filtered rows ``lo..hi-1``; *lo* must not be before the cursor."""
        if lo < self.pos:
            raise RuntimeError(f"cursor at row {self.pos} cannot go back to {lo}")
        out = []
        while lo < hi:
            if self._buf is None or lo >= self.pos + self._buf.num_rows:
                if self._buf is not None:
                    self.pos += self._buf.num_rows
                if not self._next():
                    raise RuntimeError(f"row group ended before row {lo}: the file changed while it was read")
                continue
            a = lo - self.pos
            b = min(hi - self.pos, self._buf.num_rows)
            out.append(self._buf.slice(a, b - a))
            lo = self.pos + b
        return out


class Rows:
    """Reads row ranges of units (a part's row group) in order, keeping one cursor (and one open file) per unit while it is used."""

    def __init__(
        self,
        units: Sequence[tuple[int, int]],
        local_path: Callable[[int], str],
        read_cols: list[str],
        out_cols: list[str],
        expr: Any,
        views: Sequence[tuple[Any, int]] | None = None,
    ) -> None:
        self.units, self.local_path, self.views = units, local_path, views
        self.read_cols, self.out_cols, self.expr = read_cols, out_cols, expr
        self._files: dict[int, Any] = {}
        self._cursors: dict[int, _Cursor] = {}

    def _file(self, part: int) -> Any:
        import pyarrow.parquet as pq

        pf = self._files.get(part)
        if pf is None:
            if len(self._files) >= 4:
                self._files.pop(next(iter(self._files)))
            pf = self._files[part] = pq.ParquetFile(self.local_path(part), buffer_size=BUFFER, pre_buffer=False)
        return pf

    def read(self, unit: int, lo: int, hi: int) -> list[Any]:
        """Record batches of the filtered rows ``lo..hi-1`` of *unit*."""
        cur = self._cursors.get(unit)
        if cur is None or lo < cur.pos:
            part, rg = self.units[unit]
            if len(self._cursors) >= 4:
                self._cursors.pop(next(iter(self._cursors)))
            view, offset = self.views[unit] if self.views is not None else (None, 0)
            cur = self._cursors[unit] = _Cursor(
                self._file(part), rg, self.read_cols, self.out_cols, self.expr, view, offset
            )
        return cur.read(lo, hi)


def to_columns(tbl: Any) -> dict[str, Any]:
    """Each column as a NumPy array (numeric and boolean columns without nulls that NumPy can
    hold: NaN for missing floats) or a Python list (everything else)."""
    import numpy as np
    import pyarrow as pa

    out: dict[str, Any] = {}
    for name, col in zip(tbl.column_names, tbl.columns, strict=True):
        t = col.type
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
        if numeric and (col.null_count == 0 or pa.types.is_floating(t)):
            out[name] = np.ascontiguousarray(col.to_numpy())
        elif numeric and pa.types.is_integer(t):  # missing ints: float64 with NaN, as pandas does
            out[name] = col.cast(pa.float64()).to_numpy()
        else:
            out[name] = col.to_pylist()
    return out
