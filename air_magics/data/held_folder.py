"""``HeldFolder``: names looked up relative to a folder's descriptor, opened once.

Why: a path is resolved part by part, and on a FUSE mount each part whose cached entry has
expired (after a second, commonly) is asked again: checking ``.../run/step_12`` after a minute of
training cost five round trips, not one. ``CheckpointManager`` asks whether a step exists on the
training loop's clock; relative to a held descriptor of its folder that is one lookup.
"""

from __future__ import annotations

import os
import weakref

from ..io.confined import exists_at, open_dir
from ..volumes.store import Location
from .commit import read_text

__all__ = ["HeldFolder"]


class HeldFolder:
    """The folder at *loc*; its descriptor (verified inside its volume) is opened on first use and
    closed with the object. A folder replaced after that is not seen: drop the object and make a
    new one when an operation on the folder failed."""

    def __init__(self, loc: Location) -> None:
        self.loc = loc
        self._fd: int | None = None

    def _held(self) -> int | None:
        """The folder's descriptor; None while the folder is not there."""
        if self._fd is None:
            try:
                self._fd = open_dir(self.loc.path, self.loc.root)
            except FileNotFoundError:  # not made yet (another rank makes it): nothing is in it
                return None
            weakref.finalize(self, os.close, self._fd)
        return self._fd

    def has(self, name: str) -> bool:
        """Whether *name* (a file, folder or link; ``a/b`` looks inside folder ``a``) is in the folder."""
        if not self.loc.is_local:
            return self.loc.join(name).exists()
        fd = self._held()
        return fd is not None and exists_at(fd, name)

    def read_text(self, name: str) -> str | None:
        """File *name*'s text, stripped (a link is not followed); None when it is not there."""
        loc = self.loc
        if not loc.is_local:
            return read_text(loc.join(name))
        fd = self._held()
        if fd is None:
            return None
        try:
            f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        with open(f, encoding="utf-8", closefd=True) as text:
            return text.read().strip()
