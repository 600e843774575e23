"""Packed shards: a folder of many small files as a few plain tar shards, read back transparently.

:func:`pack` writes them (:mod:`.writer`, planned by :mod:`.pack_plan`, format in :mod:`.format`);
:func:`open_packed` reads them (:mod:`.packed_folder`), and ``UCVolumeDataset`` over a packed folder
yields the same items as over the original folder.
"""

from __future__ import annotations

from ..events import PackEvent  # the event is defined with the others; the same class
from ..snapshots import PackProgress, PackReport
from .format import MANIFEST_NAME, Manifest, Member, ShardInfo
from .packed_folder import MemberRef, PackedFolder, is_packed, open_packed, prune_extracted
from .shard_order import windowed_order
from .slices import MemberSlice, SliceMaps
from .writer import ENGINES, pack, plan_pack

__all__ = [
    "pack",
    "plan_pack",
    "PackReport",
    "PackProgress",
    "PackEvent",
    "windowed_order",
    "ENGINES",
    "open_packed",
    "is_packed",
    "PackedFolder",
    "MemberRef",
    "MemberSlice",
    "SliceMaps",
    "prune_extracted",
    "MANIFEST_NAME",
    "Manifest",
    "Member",
    "ShardInfo",
]
