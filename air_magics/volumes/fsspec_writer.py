"""The streamed, atomic file behind ``volumes://`` ``open(..., "wb"/"xb")`` on a local volume.

Why a file object of its own: fsspec hands the caller a file to write piece by piece (pandas,
pyarrow and torch DCP write that way), so :func:`air_magics.io.atomic.write_atomic` (whole bytes at
once) does not fit. It keeps the same rule: the bytes go to a temp file in the target folder (named
by :func:`air_magics.io.leftovers.temp_name`, so listings hide it and the sweeper knows it, whatever
the final name's length), created relative to a verified folder descriptor with ``O_NOFOLLOW``,
and renamed into place on ``close()``. Readers see the old file or the new one, never a torn one.
"""

from __future__ import annotations

import errno
import io
import itertools
import os
from typing import Any

from ..errors import VolumeExistsError
from ..io.leftovers import temp_name

__all__ = ["AtomicWriter"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_COUNTER = itertools.count()  # two writers of one name in one thread get two temp names


def _exists_error(url: str) -> VolumeExistsError:
    return VolumeExistsError(errno.EEXIST, f"{url} already exists; open it with mode 'wb' to replace it")


class AtomicWriter(io.FileIO):
    """A file written under a temp name in its folder and renamed to its name on ``close()``.

    Leaving a ``with`` block by an exception (or :meth:`discard`) removes the temp file and leaves
    the target untouched. ``exclusive`` (mode ``x``) refuses an existing target when opened and
    publishes with ``link``, so a target that appeared meanwhile is never replaced either."""

    def __init__(self, dir_fd: int, name: str, url: str, *, exclusive: bool = False) -> None:
        """Takes ownership of *dir_fd* (a verified folder descriptor): it is closed on every path.
        *url* is what users see (``name``, error messages)."""
        self._dir_fd, self._name, self._url, self._exclusive = dir_fd, name, url, exclusive
        self._done = True  # nothing to publish or clean until the temp file exists
        try:
            if exclusive and _lexists(name, dir_fd):
                raise _exists_error(url)
            self._temp = temp_name(f"{name}~{next(_COUNTER)}")
            fd = os.open(self._temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644, dir_fd=dir_fd)
        except BaseException:
            os.close(dir_fd)
            raise
        try:
            super().__init__(fd, "wb", closefd=True)
        except BaseException:
            os.close(fd)
            self._cleanup()
            raise
        self._done = False
        self.name = url  # type: ignore[misc]  # what users see, not the descriptor number

    def _cleanup(self) -> None:
        try:
            os.unlink(self._temp, dir_fd=self._dir_fd)
        except OSError:
            pass
        os.close(self._dir_fd)

    def discard(self) -> None:
        """Close without publishing: the temp file is removed, the target untouched."""
        if self._done:
            return
        self._done = True
        super().close()
        self._cleanup()

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            super().close()
            if self._exclusive:
                try:
                    os.link(self._temp, self._name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
                except FileExistsError:
                    raise _exists_error(self._url) from None
            else:
                os.replace(self._temp, self._name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
        finally:
            self._cleanup()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.discard()
        else:
            self.close()

    def __del__(self) -> None:  # never publish a file that was dropped half-written
        try:
            self.discard()
        except Exception:
            pass


def _lexists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
