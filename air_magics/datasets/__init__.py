"""The input pipeline: a volume's files or a table's rows, listed, ordered per epoch, fetched
through the cache and handed to a training loop, alone or through a ``DataLoader``.

Stages, each in its module: :mod:`.listing` (list once), :mod:`.epoch_order` (which item goes to
which stream, resumable), :mod:`.prefetch` and :mod:`.feed` (fetch ahead, hand out),
:mod:`.epoch_stream` (the streams' shared state), :mod:`.dataset` / :mod:`.table_dataset` (the
two datasets), :mod:`.loader` (the ``DataLoader``), :mod:`.timing` / :mod:`.verdict` (where the
time goes). Importing this package is light; torch comes with the first class used.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "UCVolumeDataset": ".dataset",
    "UCDataset": ".table_dataset",
    "DataLoader": ".loader",
    "LoaderTiming": ".loader",
    "Checkpointable": ".checkpointable",
    "Verdict": ".verdict",
    "StageTimes": ".verdict",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'air_magics.datasets' has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
