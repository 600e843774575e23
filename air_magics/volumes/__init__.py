"""Volumes: validated ``/Volumes/...`` paths and the store that resolves them to storage."""

from .path import PREFIX, VolumePath, is_volume_text
from .registry import VolumeRegistry
from .store import FileInfo, Location, VolumeInfo, VolumeStore

__all__ = [
    "PREFIX",
    "VolumePath",
    "is_volume_text",
    "VolumeRegistry",
    "VolumeStore",
    "FileInfo",
    "VolumeInfo",
    "Location",
]
