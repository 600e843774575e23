"""Monolithic checkpoints: ``torch.save`` / ``torch.load`` to and from a volume, atomically.

For models small enough for one file. With several ranks, save from rank 0 only and let the
others wait, so nobody reads a file that is still being written::

    if dist.get_rank() == 0:
        save_torch(model.state_dict(), "/Volumes/main/ml/ckpt/model.pt")
    dist.barrier()
    state = load_torch("/Volumes/main/ml/ckpt/model.pt")   # every rank, through the cache
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from .. import settings
from ..cache import FileCache
from ..transfer import CopyTask, copy_one
from ..volumes.path import VolumePath
from ..volumes.resolved import VolumeFile
from ..volumes.store import VolumeStore

__all__ = ["save_torch", "load_torch"]


def save_torch(obj: Any, path: str | VolumePath, *, store: VolumeStore | None = None) -> int:
    """``torch.save`` to local disk, then upload (temp name + rename): readers see the old file or
    the complete new one, never a partial file. Returns the bytes written."""
    import torch

    store = store or VolumeStore.shared()
    dest = store.locate(VolumePath.parse(path))
    staging = settings.air_home() / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=staging, suffix=".pt")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        return copy_one(CopyTask(VolumeFile.staged(tmp), dest))
    finally:
        os.unlink(tmp)


def load_torch(
    path: str | VolumePath,
    *,
    weights_only: bool = True,
    map_location: Any = "cpu",
    cache: FileCache | None = None,
    **kwargs: Any,
) -> Any:
    """``torch.load`` through the cache (``weights_only=True`` by default: no arbitrary code)."""
    import torch

    local = (cache or FileCache()).get(VolumePath.parse(path))
    return torch.load(local, weights_only=weights_only, map_location=map_location, **kwargs)
