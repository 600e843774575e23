"""The I/O primitives every layer shares: the confined open (:mod:`.confined`), in-flight names and
sweeping their leftovers (:mod:`.leftovers`), process liveness (:mod:`.process`).

Nothing here imports the rest of air_magics except :mod:`air_magics.errors`, so every layer can
use it.
"""

from __future__ import annotations

from .confined import (
    check_inside,
    is_within,
    makedirs,
    open_dir,
    open_file,
    open_read,
    open_write,
    publish_at,
    real_root,
    write_all,
)
from .leftovers import NAME_MAX, PENDING_EXPORT_PREFIX, TEMP_MARK, is_leftover, owner_pid, sweep_stale, temp_name
from .process import pid_alive

__all__ = [
    "check_inside",
    "is_within",
    "makedirs",
    "open_dir",
    "open_file",
    "open_read",
    "open_write",
    "publish_at",
    "real_root",
    "write_all",
    "NAME_MAX",
    "PENDING_EXPORT_PREFIX",
    "TEMP_MARK",
    "is_leftover",
    "owner_pid",
    "sweep_stale",
    "temp_name",
    "pid_alive",
]
