"""The persistent, cross-process cache of volume files (see :mod:`.filecache` for the guarantees).

One public API, :class:`FileCache` (``get``, ``try_hit``, ``pin``, ``clear``, ``check``, ``info``, ``limit``,
and the resolved-file forms ``bind``/``hit``/``fetch``/``validate`` the datasets use); the modules
inside are its parts, each one concept: the index's rows (:mod:`.entries`) and its durability
(:mod:`.index`), stripe locks (:mod:`.stripes`), the miss path (:mod:`.miss`), process-local hits (:mod:`.hits`), eviction
(:mod:`.evict`), the overflow window (:mod:`.overflow`), a new process's validation
(:mod:`.validate`), the root's identity (:mod:`.rootguard`) and the self-check (:mod:`.check`). Nothing outside the package touches their private members.
"""

from ..snapshots import CacheInfo
from .check import CheckReport, Finding
from .filecache import ClearProgress, ClearReport, FileCache
from .liveness import sweep_dead
from .overflow import DEFAULT_OVERFLOW_FILES, OverflowWindow, Residency
from .validate import Validation

__all__ = [
    "FileCache",
    "CacheInfo",
    "ClearReport",
    "ClearProgress",
    "CheckReport",
    "Finding",
    "Residency",
    "OverflowWindow",
    "DEFAULT_OVERFLOW_FILES",
    "sweep_dead",
    "Validation",
]
