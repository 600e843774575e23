"""A fresh embedded volume holding given files: the fixture most data tests start from."""

from __future__ import annotations

from collections.abc import Mapping

from air_magics.volumes import VolumeStore


def seeded_volume(volume: str, files: Mapping[str, bytes]) -> VolumeStore:
    """Create *volume* (``"catalog.schema.volume"``) in this test's AIR_HOME and write *files*
    (volume path -> content) into it; returns the store."""
    s = VolumeStore()
    s.create(volume)
    for path, data in files.items():
        with s.open(path, "wb") as f:
            f.write(data)
    return s
