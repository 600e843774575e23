"""``%air_volume checkpoints DIR``: the live view of the checkpoints a ``CheckpointManager`` saves
under DIR."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...volumes import VolumePath
from .._state import default_volume, store
from .command import Command, Text

__all__ = ["CHECKPOINTS"]


def _checkpoints(magics: Any, args: Any) -> Any:
    from ...checkpoints.commit import checkpoint_status
    from ...widgets import CheckpointView, checkpoints_text, has_widget_frontend

    directory = VolumePath.parse(args.args[0], default=default_volume(magics))
    doc = checkpoint_status(str(directory), store())  # validates the path and the volume
    if not store().exists(directory):
        raise UsageError(f"{directory} does not exist; pass the folder a CheckpointManager saves into")
    if not doc["steps"] and store().exists(directory / ".metadata"):  # saved by plain dcp.save, not a manager
        return Text(
            f"checkpoints in {directory}: one plain DCP checkpoint (.metadata), not saved by a CheckpointManager "
            f"(no step_N folders, so no latest step); load it with dcp.load(..., "
            f"storage_reader=UCVolumeReader({str(directory)!r}))"
        )
    if magics.widgets and has_widget_frontend():
        return CheckpointView(str(directory))
    return Text(checkpoints_text(doc))


CHECKPOINTS = Command(
    "checkpoints",
    "DIR",
    (1, 1),
    "live view of the checkpoints saved under DIR (the folder a CheckpointManager saves into)",
    _checkpoints,
    paths=True,
)
