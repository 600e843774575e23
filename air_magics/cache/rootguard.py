"""The cache root's identity: a root swapped for a link (or another folder) mid-run is named, not obeyed.

Why: a process keeps open handles into its cache (the index's connection, verified folders); if the
root is renamed and a link put in its place, new paths handed out would lead through the link into
a folder the cache does not own, and the index would describe files that are not there. So the
folder a process first opened is remembered (whether it is a link, and the folder it reaches) and
compared before each write (a miss, a claim, a clear, a check's repair): an ``lstat`` (and a
``stat`` of a root that is a link).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ConfinementError

__all__ = ["RootGuard"]


class RootGuard:
    """Remembers the cache folder at *root* as first seen by this process; :meth:`verify` refuses a swap."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pid = 0
        self._id: tuple[bool, int, int] | None = None  # (a link?, device, inode of the folder it reaches)

    def verify(self) -> None:
        """Raise :class:`~air_magics.errors.ConfinementError` when the root became a link, or a link
        root reaches another folder than the one this process first used (a root that was a link
        from the start, to a larger disk, is fine while it keeps reaching the same folder; a folder
        deleted and made again is the same place)."""
        try:
            st = os.lstat(self.root)
            link = stat.S_ISLNK(st.st_mode)
            if link:  # (a folder's own lstat is its stat: one system call per miss, not two)
                st = os.stat(self.root)
        except FileNotFoundError:
            return
        ident = (link, st.st_dev, st.st_ino)
        if self._id is None or self._pid != os.getpid():
            self._id, self._pid = ident, os.getpid()
            return
        if ident == self._id:
            return
        if not link and not self._id[0]:  # deleted and made again (the evictor does): the same place
            self._id = ident
            return
        now = f"a link to {os.readlink(self.root)!r}" if link else "a folder, no longer the link it was"
        raise ConfinementError(
            f"the cache folder {self.root} was replaced while in use: it is now {now}; nothing is written or "
            f"deleted through it: put the folder back, or point AIR_CACHE_DIR (or FileCache(root=...)) at the "
            f"folder you mean and start again"
        )
