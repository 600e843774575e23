"""Where this process sits in a training job: rank/world size and DataLoader worker."""

from __future__ import annotations

import os
from typing import Any

from ..errors import DatasetError


def rank_and_world() -> tuple[int, int]:
    """From an initialised ``torch.distributed`` group, else ``RANK``/``WORLD_SIZE``, else (0, 1)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None and world is None:
        return 0, 1
    if rank is None or world is None:
        raise DatasetError(
            f"only one of RANK={rank!r} and WORLD_SIZE={world!r} is set; launch with torchrun (sets both) or set neither"
        )
    try:
        r, w = int(rank), int(world)
    except ValueError:
        raise DatasetError(f"RANK={rank!r} / WORLD_SIZE={world!r} must be integers") from None
    if not 0 <= r < w:
        raise DatasetError(f"RANK={r} is outside WORLD_SIZE={w}")
    return r, w


def worker() -> tuple[int, int, Any]:
    """(worker id, number of workers, the worker's dataset copy or None) for this process."""
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    if info is None:
        return 0, 1, None
    return info.id, info.num_workers, info.dataset


def gather_counts(streams: int, own: dict[int, int]) -> list[int]:
    """Merge per-rank ``{stream: delivered}`` into one list; ``-1`` where no rank reported.

    With an initialised process group every rank contributes (a collective: call it on all
    ranks); without one, only this process's streams are known.
    """
    import torch.distributed as dist

    parts = [own]
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        parts = [None] * dist.get_world_size()
        dist.all_gather_object(parts, own)
    counts = [-1] * streams
    for part in parts:
        for s, c in (part or {}).items():
            counts[int(s)] = int(c)
    return counts


def barrier(world: int) -> None:
    """Wait for every rank of an initialised ``torch.distributed`` group (nothing with one rank)."""
    if world > 1:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.barrier()
