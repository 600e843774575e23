"""Atomic replacement of a file: :func:`write_atomic` (whole bytes: status documents, the registry,
the server record, checkpoint markers and ``latest`` pointers) and :class:`AtomicFile` (written
piece by piece: ``volumes://`` files opened ``wb``/``xb``, which pandas, pyarrow and torch DCP
write in pieces).

Why: readers in other processes (the sidebar, DataLoader workers, a second notebook) must see the
old or the new content, never a torn or empty file, and a process killed mid-write must leave
nothing but a temp name that listings ignore and the next writer can sweep.
"""

from __future__ import annotations

import errno
import io
import itertools
import json
import os
from typing import Any

from ..errors import VolumeExistsError
from .confined import exists_at, open_dir, publish_at, write_all
from .leftovers import temp_name
from .retry import retry_call

__all__ = ["write_atomic", "write_json_atomic", "AtomicFile", "replace", "replace_at"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_COUNTER = itertools.count()  # two writers of one name in one thread get two temp names


def write_atomic(
    path: str | os.PathLike[str], data: bytes | str, *, root: str | None = None, fsync: bool = False, mtime: float = 0.0
) -> None:
    """Replace *path* with *data*: temp file beside it, optional ``fsync`` (for what must survive a
    power cut: commit markers), *mtime* stamped when given, rename into place. Parent folders are
    made; with *root* every folder is confined to it (:mod:`air_magics.io.confined`)."""
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    raw = data.encode() if isinstance(data, str) else data
    dfd = open_dir(folder, root if root is not None else folder, create=True)
    try:
        publish_at(dfd, name, lambda fd: write_all(fd, raw), mtime=mtime, temp=temp_name(name), fsync=fsync)
    finally:
        os.close(dfd)


def write_json_atomic(
    path: str | os.PathLike[str], doc: Any, *, root: str | None = None, fsync: bool = False, **dumps: Any
) -> None:
    """:func:`write_atomic` of ``json.dumps(doc, **dumps)``."""
    write_atomic(path, json.dumps(doc, **dumps), root=root, fsync=fsync)


class AtomicFile(io.FileIO):
    """A file written under a temp name in its folder and renamed to its name on ``close()``.

    The same rule as :func:`write_atomic` for a file written piece by piece: the temp file
    (:func:`~.leftovers.temp_name`, so listings hide it and the sweeper knows it) is created relative
    to the verified folder descriptor *dir_fd* with ``O_NOFOLLOW``; readers see the old file or the
    new one, never a torn one. Leaving a ``with`` block by an exception (or :meth:`discard`)
    removes the temp file and leaves the target untouched. ``exclusive`` (mode ``x``) refuses an
    existing target when opened and publishes with ``link``, so a target that appeared meanwhile
    is never replaced either (:class:`VolumeExistsError` naming *display* and *hint*)."""

    def __init__(
        self,
        dir_fd: int,
        name: str,
        display: str,
        *,
        exclusive: bool = False,
        hint: str = "write it without exclusive to replace it",
        temp: str | None = None,
    ) -> None:
        """Takes ownership of *dir_fd* (a verified folder descriptor): it is closed on every path.
        *display* is what users see (``name``, error messages); *temp* the temp file's name (default:
        a fresh :func:`temp_name`; a caller that retries a failed create passes the same one)."""
        self._dir_fd, self._name, self._display, self._hint = dir_fd, name, display, hint
        self._exclusive = exclusive
        self._done = True  # nothing to publish or clean until the temp file exists
        try:
            if exclusive and exists_at(dir_fd, name):
                raise self._exists_error()
            self._temp = temp or self.temp_for(name)
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
        self.name = display  # type: ignore[misc]  # what users see, not the descriptor number

    @staticmethod
    def temp_for(name: str) -> str:
        """A fresh temp name for *name* in its folder (hidden from listings, known to the sweeper)."""
        return temp_name(f"{name}~{next(_COUNTER)}")

    def _exists_error(self) -> VolumeExistsError:
        return VolumeExistsError(errno.EEXIST, f"{self._display} already exists; {self._hint}")

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
        """Publish: rename the temp file to the name (``link`` when exclusive)."""
        if self._done:
            return
        self._done = True
        try:
            super().close()
            if self._exclusive:
                try:
                    os.link(self._temp, self._name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
                except FileExistsError:
                    raise self._exists_error() from None
            else:  # a transient error of a remote volume is worth another try before the temp file goes
                retry_call(lambda: os.replace(self._temp, self._name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd))
        except BaseException:
            self._cleanup()
            raise
        if self._exclusive:  # linked: the temp name still holds the file
            self._cleanup()
        else:  # renamed: nothing is left to remove (unlinking the gone name cost a mount one more request)
            os.close(self._dir_fd)

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


def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Move *src* onto *dst* in one step (same filesystem; *dst* replaced if present): the one
    place the package renames a local file or folder, so a store without renames has one seam."""
    os.replace(src, dst)


def replace_at(dir_fd: int, name: str, new_name: str, dst_dir_fd: int | None = None) -> None:
    """:func:`replace` by names relative to open folders (*dst_dir_fd*: the same folder if None),
    so a confined writer never resolves a path again after it verified the folders."""
    os.replace(name, new_name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd if dst_dir_fd is None else dst_dir_fd)
