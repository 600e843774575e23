"""Where each large tensor's bytes lie in the files a DCP save wrote, so a restore can read them in place.

Why a module of its own: the writer (:mod:`.volume_writer`) records it once per save, the reader
(:mod:`.read_into`) uses it; what a save plan holds is torch's, read here and nowhere else.
"""

from __future__ import annotations

import math
import sys
from typing import Any

__all__ = ["PLACED_MIN_BYTES", "data_layout", "planned_bytes"]

PLACED_MIN_BYTES = 4096  # a tensor this large has its data position recorded (data_layout)


def data_layout(
    plan: Any, planner: Any, results: list[Any], writes: dict[str, list[tuple[int, int]]]
) -> dict[str, dict[str, list[Any]]]:
    """Where each large tensor's data lies in its file and what it is:
    ``{file: {item offset: [data offset, bytes, dtype name]}}``.

    Why: a restore then reads those bytes straight into the destination tensor
    (:mod:`air_magics.checkpoints.read_into`) instead of into a buffer, then parsing each record's header
    and copying. ``torch.save`` writes a tensor's storage in one call of exactly its bytes, so it is
    the write of that size inside the item; only tensors of at least :data:`PLACED_MIN_BYTES` get an
    entry (no header record, tens to hundreds of bytes, can be that size), and only those saved
    contiguous from their storage's start, on a little-endian machine: their bytes are the tensor,
    element by element, in the recorded dtype. Other items are read the ordinary way."""
    import torch

    items = {item.index: item for item in plan.items}
    out: dict[str, dict[str, list[Any]]] = {}
    if sys.byteorder != "little":
        return out
    for wr in results:
        item = items.get(wr.index)
        td = getattr(item, "tensor_data", None)
        sd = wr.storage_data
        if td is None:
            continue
        nbytes = math.prod(td.chunk.sizes) * td.properties.dtype.itemsize  # this rank's chunk of it
        end = sd.offset + sd.length
        found = [at for at, n in writes.get(sd.relative_path, ()) if n == nbytes and sd.offset <= at and at + n <= end]
        if nbytes < PLACED_MIN_BYTES or len(found) != 1:
            continue
        t = planner.resolve_data(item)  # what torch saved (a lookup in the state being saved)
        if (
            isinstance(t, torch.Tensor)
            and t.is_contiguous()
            and t.storage_offset() == 0
            and t.dtype == td.properties.dtype
        ):
            out.setdefault(sd.relative_path, {})[str(sd.offset)] = [
                found[0],
                nbytes,
                str(t.dtype).removeprefix("torch."),
            ]
    return out


def planned_bytes(plan: Any) -> int:
    """Bytes of the tensors a rank's save plan writes (its pickled objects are not counted)."""
    total = 0
    for item in plan.items:
        td = getattr(item, "tensor_data", None)
        if td is not None:
            total += math.prod(td.size) * td.properties.dtype.itemsize
    return total
