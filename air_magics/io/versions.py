"""One definition of "the same version of a file": equal size and mtime within a millisecond.

Why a tolerance: a copy carries its source's mtime through ``os.utime`` in float seconds, and some
file systems (and object stores) keep fewer digits than others, so an exact float comparison would
call an unchanged file changed. The cache, its overflow window and the shard packer all ask this.
"""

from __future__ import annotations

__all__ = ["MTIME_TOLERANCE", "same_version"]

MTIME_TOLERANCE = 1e-3  # seconds


def same_version(size: int, mtime: float, other_size: int, other_mtime: float) -> bool:
    """Whether (size, mtime) and (other_size, other_mtime) describe the same version of a file."""
    return size == other_size and abs(mtime - other_mtime) <= MTIME_TOLERANCE
