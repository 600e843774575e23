"""Training data from volumes and tables: ``UCVolumeDataset``, ``UCDataset``, ``DataLoader``, ``Checkpointable``.

Same names as the reference ``databricks.air.data``. Importing this package is light; torch is
imported when one of the classes is first used.
"""

from __future__ import annotations

from typing import Any

from .checkpointable import Checkpointable

__all__ = [
    "UCVolumeDataset",
    "UCDataset",
    "DataLoader",
    "Checkpointable",
    "LoaderTiming",
    "Verdict",
    "StageTimes",
    "UCVolumeWriter",
    "UCVolumeReader",
    "CheckpointManager",
    "CheckpointError",
    "save_torch",
    "load_torch",
]


def __getattr__(name: str) -> Any:
    if name == "UCVolumeDataset":
        from .dataset import UCVolumeDataset

        return UCVolumeDataset
    if name == "UCDataset":
        from .table_dataset import UCDataset

        return UCDataset
    if name in ("DataLoader", "LoaderTiming"):
        from . import loader

        return getattr(loader, name)
    if name in ("UCVolumeWriter", "UCVolumeReader", "CheckpointError"):
        from . import checkpoint

        return getattr(checkpoint, name)
    if name in ("Verdict", "StageTimes"):
        from . import verdict

        return getattr(verdict, name)
    if name == "CheckpointManager":
        from .manager import CheckpointManager

        return CheckpointManager
    if name in ("save_torch", "load_torch"):
        from . import torch_io

        return getattr(torch_io, name)
    raise AttributeError(f"module 'air_magics.data' has no attribute {name!r}")
