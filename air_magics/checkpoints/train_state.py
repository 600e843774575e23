"""A training run's state as the dict a checkpoint holds, and back: model, optimizer and loader.

Why a module of its own: what goes into a checkpoint for ``save(model=, optimizer=, loader=)``
and how ``restore`` puts it back is independent of how the manager writes and commits it. The
model and optimizer go through torch's ``get_state_dict``/``set_state_dict`` (sharded states
included); a loader's state goes in as JSON under a per-rank key (``loader_rank<r>``; DCP
de-duplicates equal keys across ranks).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from ..errors import CheckpointError

__all__ = ["apply_state", "collect_state", "loader_key", "model_state"]


def model_state(model: Any, optimizer: Any) -> dict[str, Any]:
    """The ``model``/``optimizer`` entries of a checkpoint's dict; empty without a *model*.

    A save fills them from the live objects; a restore passes the same dict to the load, which
    fills it in place, so both sides share this one definition of what a model's state is."""
    state: dict[str, Any] = {}
    if model is not None:
        from torch.distributed.checkpoint.state_dict import get_state_dict

        msd, osd = get_state_dict(model, [optimizer] if optimizer is not None else [])
        state["model"] = msd
        if optimizer is not None:
            state["optimizer"] = osd
    return state


def collect_state(model: Any, optimizer: Any, loader: Any, rank: int) -> dict[str, Any]:
    """The state dict a save of *model*, *optimizer* and *loader* (any of them None) writes."""
    state = model_state(model, optimizer)
    if loader is not None:
        state[f"loader_rank{rank}"] = json.dumps(loader.state_dict())  # per-rank key: DCP de-duplicates
    if not state:
        raise CheckpointError("nothing to save: pass state=... or model=/optimizer=/loader=")
    return state


def loader_key(keys: Collection[str], rank: int) -> str | None:
    """Which of a checkpoint's *keys* holds *rank*'s loader state: its own, or for a state gathered
    over all ranks (the same on every rank) rank 0's; None when it has none."""
    for key in (f"loader_rank{rank}", "loader_rank0"):
        if key in keys:
            return key
    return None


def apply_state(state: dict[str, Any], model: Any, optimizer: Any, loader: Any, key: str | None) -> None:
    """Put a loaded *state* back into *model*, *optimizer* and (under *key*) *loader*."""
    if model is not None:
        from torch.distributed.checkpoint.state_dict import set_state_dict

        set_state_dict(
            model,
            [optimizer] if optimizer is not None else [],
            model_state_dict=state["model"],
            optim_state_dict=state.get("optimizer", {}),
        )
    if key and loader is not None:
        loader.load_state_dict(json.loads(state[key]))
