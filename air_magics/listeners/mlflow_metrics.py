"""``MlflowListener``: a DataLoader's timing as metrics of the active mlflow run.

Nothing is logged into mlflow unless you attach it::

    from air_magics.events import channel
    from air_magics.listeners import MlflowListener
    channel.attach(MlflowListener())

It logs ``air.data_wait_s``, ``air.compute_s``, ``air.wait_share`` and the input stages as a series
per rank, ``air.stage/<stage>_s/rank_N`` (wall seconds per stage: storage reads, transform, hand-over,
...; see :meth:`air_magics.data.LoaderTiming.stages`), plus the reference's own name for the storage
time, ``dataloader/fetch_seconds/rank_N`` (step = batches delivered), at most every ``interval``
seconds and at the end of each epoch, only while an mlflow run is active. The rank is torchrun's
``RANK`` (0 without it).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import AirError
from ..events import Event, LoaderEvent, throttled

__all__ = ["MlflowListener", "MlflowMissingError"]


class MlflowMissingError(AirError, ImportError):
    """mlflow is not installed."""


class MlflowListener:
    """Logs loader timing into ``mlflow.active_run()`` (see the module docstring)."""

    def __init__(self, *, interval: float = 0.5, prefix: str = "air.") -> None:
        try:
            import mlflow
        except ImportError:
            raise MlflowMissingError("MlflowListener needs mlflow: pip install mlflow") from None
        self._mlflow: Any = mlflow
        self.prefix = prefix
        self._log = throttled(self._log_metrics, interval)

    def __call__(self, event: Event) -> None:
        if isinstance(event, LoaderEvent):
            self._log(event)

    def _log_metrics(self, event: LoaderEvent) -> None:
        if self._mlflow.active_run() is None:
            return
        t = event.timing
        rank = os.environ.get("RANK", "0")
        metrics = {
            f"{self.prefix}data_wait_s": t.data_wait,
            f"{self.prefix}compute_s": t.compute,
            f"{self.prefix}wait_share": t.wait_share,
        }
        for stage, seconds in t.stages.items():
            metrics[f"{self.prefix}stage/{stage}_s/rank_{rank}"] = seconds
        if "storage_read" in t.stages:  # the reference's name for the time spent reading storage
            metrics[f"dataloader/fetch_seconds/rank_{rank}"] = t.stages["storage_read"]
        self._mlflow.log_metrics(metrics, step=t.steps)

    def __repr__(self) -> str:
        return f"MlflowListener(prefix={self.prefix!r})"
