"""Training data from volumes: ``UCVolumeDataset``, ``DataLoader``, ``Checkpointable``.

Same names as the reference ``databricks.air.data``. Importing this package is light; torch is
imported when one of the classes is first used.
"""
from __future__ import annotations

from typing import Any

from .checkpointable import Checkpointable

__all__ = ["UCVolumeDataset", "DataLoader", "Checkpointable", "LoaderTiming"]


def __getattr__(name: str) -> Any:
    if name == "UCVolumeDataset":
        from .dataset import UCVolumeDataset

        return UCVolumeDataset
    if name in ("DataLoader", "LoaderTiming"):
        from . import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'air_magics.data' has no attribute {name!r}")
