"""A table stream's batches: its rows read window by window, permuted, cut into batches.

Memory holds one shuffle window and one batch being converted, whatever the table's size; each
window is converted to NumPy/lists once and batches are slices of it. Which rows a stream reads
is :mod:`.row_plan`'s; reading them from the files is :class:`~air_magics.tablefiles.scan.Rows`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..tablefiles.scan import Rows, to_columns
from .row_plan import StreamPlan, take_range, total, window_perm

__all__ = ["iter_batches"]


def _batch(cols: dict[str, Any], a: int, b: int) -> dict[str, Any]:
    import numpy as np
    import torch

    return {k: torch.from_numpy(v[a:b].copy()) if isinstance(v, np.ndarray) else v[a:b] for k, v in cols.items()}


def iter_batches(
    plan: StreamPlan,
    *,
    units: Sequence[tuple[int, int]],
    local_path: Callable[[int], str],
    read_cols: list[str],
    out_schema: Any,
    expr: Any,
    batch_size: int,
    window: int,
    shuffle: bool,
    views: Sequence[tuple[Any, int]] | None = None,
) -> Iterator[dict[str, Any]]:
    """The stream's batches: windows of its slice read in order, permuted, cut into batches.
    *views*: per unit, a Delta file's view (or None) and the unit's first row in its file."""
    import pyarrow as pa

    rows = Rows(units, local_path, read_cols, list(out_schema.names), expr, views)
    n = total(plan.pieces)
    w = plan.skip // window
    drop = plan.skip % window
    carry = out_schema.empty_table()
    while w * window < n:
        start, stop = w * window, min(n, (w + 1) * window)
        batches = [b for p in take_range(plan.pieces, start, stop) for b in rows.read(p.unit, p.lo, p.hi)]
        tbl = pa.Table.from_batches(batches, schema=out_schema)
        if shuffle:
            tbl = tbl.take(window_perm(stop - start, shuffle=True, key=(*plan.key, w)))
        if drop:
            tbl, drop = tbl.slice(drop), 0
        if carry.num_rows:
            tbl = pa.concat_tables([carry, tbl])
        last = stop >= n
        full = tbl.num_rows if last else tbl.num_rows // batch_size * batch_size
        if full:
            cols = to_columns(tbl.slice(0, full).combine_chunks())
            for a in range(0, full, batch_size):
                yield _batch(cols, a, min(a + batch_size, full))
        carry = tbl.slice(full)
        w += 1
