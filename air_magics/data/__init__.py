"""The reference's ``databricks.air.data`` names in one place: ``UCVolumeDataset``, ``UCDataset``,
``DataLoader``, ``Checkpointable``, ``UCVolumeWriter``/``UCVolumeReader``, ``CheckpointManager``.

A face for users only: the input pipeline lives in :mod:`air_magics.datasets`, checkpoints in
:mod:`air_magics.checkpoints`, and the code imports them from there. Importing this package is
light; torch is imported when one of the classes is first used.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "UCVolumeDataset": "air_magics.datasets.dataset",
    "UCDataset": "air_magics.datasets.table_dataset",
    "DataLoader": "air_magics.datasets.loader",
    "LoaderTiming": "air_magics.datasets.loader",
    "Checkpointable": "air_magics.datasets.checkpointable",
    "Verdict": "air_magics.datasets.verdict",
    "StageTimes": "air_magics.datasets.verdict",
    "UCVolumeWriter": "air_magics.checkpoints.volume_writer",
    "UCVolumeReader": "air_magics.checkpoints.volume_writer",
    "CheckpointError": "air_magics.checkpoints.volume_writer",
    "CheckpointManager": "air_magics.checkpoints.manager",
    "save_torch": "air_magics.checkpoints.torch_io",
    "load_torch": "air_magics.checkpoints.torch_io",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'air_magics.data' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(__all__)
