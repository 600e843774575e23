"""``%air_volume probe PATH``: what the storage under PATH delivers, measured in at most 20 s."""

from __future__ import annotations

from typing import Any

from ...volumes import VolumePath
from .._state import default_volume, store
from .command import Command

__all__ = ["PROBE"]


def _probe(magics: Any, args: Any) -> Any:
    """The probe's report (shown as its table); an absolute path outside /Volumes is a local folder."""
    from ...volumes.path import is_volume_text
    from ...volumes.probe import probe

    target = args.args[0]
    if target.startswith(("/", "~")) and not is_volume_text(target):
        return probe(target, store=store())
    return probe(VolumePath.parse(target, default=default_volume(magics)), store=store())


PROBE = Command(
    "probe",
    "PATH",
    (1, 1),
    "measure the storage under PATH (a volume folder or a local one) in at most 20 s: op latency, read MB/s, "
    "files/s, advice",
    _probe,
    paths=True,
)
