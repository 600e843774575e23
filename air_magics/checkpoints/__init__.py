"""Checkpoints on volumes: DCP through ``UCVolumeWriter``/``UCVolumeReader``, steps kept and
pruned by ``CheckpointManager``, a whole model through ``save_torch``/``load_torch``.

Where a step is committed: :mod:`.commit` (the marker written last, the states a step goes
through); written: :mod:`.volume_writer` (DCP's storage writer), :mod:`.direct_write` (straight to
the volume, checksummed on the way); read back: :mod:`.volume_reader`. Importing this package is
light; torch comes with the first class used.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "UCVolumeWriter": ".volume_writer",
    "UCVolumeReader": ".volume_writer",
    "CheckpointError": ".volume_writer",
    "CheckpointManager": ".manager",
    "save_torch": ".torch_io",
    "load_torch": ".torch_io",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'air_magics.checkpoints' has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
