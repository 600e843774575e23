"""``HeldFolder``: names looked up relative to a folder's descriptor, opened once.

Why: a path is resolved part by part, and on a FUSE mount each part whose cached entry has
expired (after a second, commonly) is asked again: checking ``.../run/step_12`` after a minute of
training cost five round trips, not one. ``CheckpointManager`` asks whether a step exists on the
training loop's clock; relative to a held descriptor of its folder that is one lookup.
"""

from __future__ import annotations

import os
import weakref

from ..io.confined import open_dir
from ..volumes.store import Location

__all__ = ["HeldFolder"]


class HeldFolder:
    """The folder at *loc*; its descriptor (verified inside its volume) is opened on first use and
    closed with the object. A folder replaced after that is not seen: drop the object and make a
    new one when an operation on the folder failed."""

    def __init__(self, loc: Location) -> None:
        self.loc = loc
        self._fd: int | None = None

    def has(self, name: str) -> bool:
        """Whether *name* (a file, folder or link) is in the folder."""
        loc = self.loc
        if not loc.is_local:
            return bool(loc.fs.exists(loc.join(name).path))
        if self._fd is None:
            try:
                self._fd = open_dir(loc.path, loc.root)
            except FileNotFoundError:  # not made yet (another rank makes it): nothing is in it
                return False
            weakref.finalize(self, os.close, self._fd)
        try:
            os.stat(name, dir_fd=self._fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True
