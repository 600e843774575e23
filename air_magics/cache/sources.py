"""Whether a cached entry's source still exists: the question eviction asks of every candidate.

Why a module of its own: eviction spares a file whose source is gone (its copy may be the only
one left), so each of the up to 1,024 candidates of a batch is looked up. Through
``VolumeStore.exists`` each look-up located its volume again (the path parsed, the volume's folder
and real path checked, every component below it ``lstat``'ed): ~75 us a key, most of an eviction's
cost. Here a volume is located once a second and a key on a local or mounted volume costs one
``stat`` of its path; other volumes (fsspec) still ask the store.
"""

from __future__ import annotations

import os
import re
import time

from ..volumes.store import VolumeStore

__all__ = ["SourceCheck", "DERIVED"]

DERIVED = re.compile(r"@[0-9a-f]{8}$")  # a key claim() made: a copy named after its content
_TTL = 1.0  # seconds a volume's located folder is reused


class SourceCheck:
    """``check(key) -> bool``: whether the source of cache key *key* (a ``/Volumes/...`` path)
    exists; a claimed copy (``...@<8 hex digits>``) never is one, and always answers True."""

    def __init__(self, store: VolumeStore) -> None:
        self.store = store
        self._volumes: dict[str, tuple[float, str | None]] = {}  # volume path -> (when, local folder)

    def __call__(self, key: str) -> bool:
        if DERIVED.search(key):
            return True
        parts = key.split("/", 5)  # ["", "Volumes", catalog, schema, volume, relative path]
        if len(parts) < 6 or parts[0] or parts[1] != "Volumes":
            return self.store.exists(key)
        volume, now = "/".join(parts[:5]), time.monotonic()
        known = self._volumes.get(volume)
        if known is None or now - known[0] > _TTL:
            loc = self.store.locate(volume)  # (a missing volume raises here, as exists() did)
            known = self._volumes[volume] = (now, loc.path if loc.is_local else None)
        if known[1] is None:
            return self.store.exists(key)
        return os.path.exists(f"{known[1]}/{parts[5]}")
