"""The ``Checkpointable`` protocol: anything with ``state_dict()`` and ``load_state_dict()``."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Checkpointable"]


@runtime_checkable
class Checkpointable(Protocol):
    """Objects whose progress can be saved and restored (datasets, loaders, models, optimizers)."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> Any: ...
