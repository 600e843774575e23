"""Per-shell state shared by the magics: the store and the default volume."""

from __future__ import annotations

from typing import Any

from ..volumes import VolumePath, VolumeStore, detect


def store(*, fresh: bool = False) -> VolumeStore:
    """The process's store for the current settings (``AIR_HOME``... changes take effect at once);
    ``fresh`` looks at the mount point again first (``%air_volume`` with no arguments)."""
    if fresh:
        detect.forget()
    return VolumeStore.shared()


def default_volume(magics: Any) -> VolumePath | None:
    text = magics.default_volume
    return VolumePath.parse(text) if text else None
