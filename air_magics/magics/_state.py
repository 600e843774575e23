"""Per-shell state shared by the magics: the store and the default volume."""

from __future__ import annotations

from typing import Any

from ..volumes import VolumePath, VolumeStore


def store() -> VolumeStore:
    """A fresh store each call, so environment changes (``AIR_HOME``...) take effect at once."""
    return VolumeStore()


def default_volume(magics: Any) -> VolumePath | None:
    text = magics.default_volume
    return VolumePath.parse(text) if text else None
