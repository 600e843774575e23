"""``VolumeFile``: one file of a listing, resolved once and carried by every layer that touches it.

Why one value: a dataset's item used to be parsed into a ``VolumePath``, located again and mapped
to its cache path by each layer it crossed (the dataset, the cache, the hit log), for every item
of every epoch. A ``VolumeFile`` is made once, when the listing is made: its volume path (``key``),
where its bytes are (``src``), the cache slot it is copied to (``slot``, filled by the cache that
serves it) and its source version (``size``, ``mtime``: ``None`` while unknown, the one spelling of
"not known yet"; a validation fills them in without a second request). A packed member or a local
file read in place carries its own reader in ``member``. The copy engine takes the same value: a
:class:`~air_magics.transfer.CopyTask` is a ``VolumeFile`` and where to copy it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Any, Protocol

from .location import Location

__all__ = ["VolumeFile", "MemberReader", "slot_of"]

_VOLUMES = len("/Volumes")


class MemberReader(Protocol):
    """What a file that is not copied through the cache offers a dataset: a packed folder's member
    (:class:`~air_magics.shards.packed_folder.MemberRef`) or a local file read in place
    (:class:`~air_magics.volumes.local.InPlace`). The ``ready`` forms answer from what this
    process has at hand (``None``: not yet, no wait); the others fetch what they need. *cache*:
    the dataset's :class:`~air_magics.cache.FileCache`; *item*: the dataset index."""

    @property
    def name(self) -> str: ...

    def ready(self) -> str | None: ...

    def local_path(self, cache: Any) -> str: ...

    def ready_bytes(self) -> bytes | None: ...

    def read_bytes(self, cache: Any) -> bytes: ...

    def ready_slice(self, item: int) -> Any: ...

    def read_slice(self, cache: Any, item: int) -> Any: ...

    def open(self, cache: Any) -> IO[bytes]: ...


@dataclass(slots=True, eq=False)
class VolumeFile:
    """One file of a listing: volume path, source location, cache slot and source version."""

    key: str  # "/Volumes/<catalog>/<schema>/<volume>/<path>"; a file outside any volume: its own path
    src: Location
    size: int | None = None  # None: not known yet
    mtime: float | None = None
    slot: str = ""  # the local path a cache serves it at ("" until a cache binds it)
    member: MemberReader | None = None  # a packed folder's member, or a local file read in place

    @classmethod
    def staged(cls, path: str) -> VolumeFile:
        """A local file outside any volume (a checkpoint's staged copy, a file named on its own),
        its version from one ``stat``."""
        st = os.stat(path)
        return cls(path, Location(path), st.st_size, st.st_mtime)

    @property
    def version(self) -> tuple[int, float] | None:
        """``(size, mtime)`` of the source when known."""
        return None if self.size is None or self.mtime is None else (self.size, self.mtime)


def slot_of(files_root: str, key: str) -> str:
    """Where a cache whose files live under *files_root* keeps the volume path *key*
    (``/Volumes/c/s/v/p`` -> ``<files_root>/c/s/v/p``): the one place this is spelled out."""
    return files_root + key[_VOLUMES:]
