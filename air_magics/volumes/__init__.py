"""Volumes: validated ``/Volumes/...`` paths and the store that resolves them to storage.

``mount()`` links ``/Volumes`` to the embedded root so plain Python (``open``, ``torch.save``) takes
the same paths; registered fsspec volumes are reached through ``volumes://`` URLs, not raw paths."""

import sys

from .location import FileInfo, Location, VolumeInfo
from .mount import MountStatus, mount, mount_status, unmount
from .path import PREFIX, VolumePath, is_volume_text
from .probe import ProbeReport, probe
from .registry import VolumeRegistry
from .store import VolumeStore

PROTOCOL = "volumes"  # volumes://catalog/schema/volume/path == /Volumes/catalog/schema/volume/path


def register_fsspec() -> None:
    """Register the ``volumes://`` protocol with fsspec (:mod:`air_magics.volumes.fsspec_fs`).

    Installed packages register it through fsspec's entry point; this covers a source checkout on
    ``sys.path``. Called on import only when fsspec is already loaded, so ``%load_ext`` stays light."""
    import fsspec

    fsspec.register_implementation(PROTOCOL, "air_magics.volumes.fsspec_fs.VolumesFileSystem", clobber=True)


if "fsspec" in sys.modules:
    register_fsspec()

__all__ = [
    "PREFIX",
    "VolumePath",
    "is_volume_text",
    "VolumeRegistry",
    "VolumeStore",
    "FileInfo",
    "VolumeInfo",
    "Location",
    "PROTOCOL",
    "register_fsspec",
    "mount",
    "unmount",
    "mount_status",
    "MountStatus",
    "probe",
    "ProbeReport",
]
