"""Publishing a finished folder, and taking a published one out of sight: the one place a folder
is renamed into or out of its name (exports, checkpoint steps).

Why: a folder written in place would be seen half-written by every reader in between, and a
process killed mid-write would leave it so. Both writers (``tables.export`` and the checkpoint
manager) build the folder under an in-flight name beside its final one and publish it with a
rename, which readers see as one step: the old folder (or none), then the new one, never a mix.

Replacing a non-empty folder takes one step where the kernel can swap two names
(``renameat2(RENAME_EXCHANGE)``, Linux): the old folder ends under the in-flight name and is
deleted. Elsewhere it takes two renames, the old folder first to a trash name
(:data:`~.leftovers.TRASH_EXPORT_PREFIX`, owned by this process), so a process killed between them
leaves *no* folder at the final name (never a half-published one) and two leftovers that
listings hide and :func:`~.leftovers.sweep_stale` removes. All renames are made relative to the
verified parent folder (:func:`~.confined.open_dir`): no link on the way is followed.

Files published into a folder one by one (a shard's members, :mod:`air_magics.shards.fetch`) are
written in a :func:`staging_folder` beside it and moved in by :func:`publish_staged`: the folder
only ever holds whole files, and the staging folder's names never share its namespace.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import VolumeExistsError
from .confined import open_dir
from .leftovers import TRASH_EXPORT_PREFIX, owned_name

__all__ = ["publish_folder", "publish_folder_at", "withdraw_folder", "staging_folder", "publish_staged"]

_RENAME_EXCHANGE = 2  # linux/fs.h
_BETWEEN: Callable[[], None] | None = None  # tests: runs between the two renames of the fallback


def _load_exchange() -> Callable[[int, str, int, str], bool] | None:
    """``renameat2(RENAME_EXCHANGE)`` through libc (Linux, glibc >= 2.28), or None where absent."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int

    def exchange(dfd: int, a: str, dfd2: int, b: str) -> bool:
        """Swap names *a* and *b*; False when this file system cannot (the caller falls back)."""
        if fn(dfd, os.fsencode(a), dfd2, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return True
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
            return False
        raise OSError(err, os.strerror(err), b)

    return exchange


_exchange = _load_exchange()


def _split(pending: str, final: str) -> tuple[str, str, str]:
    parent, fname = os.path.split(os.path.normpath(os.path.abspath(final)))
    pparent, pname = os.path.split(os.path.normpath(os.path.abspath(pending)))
    if pparent != parent:
        raise ValueError(f"{pending!r} must sit in the same folder as {final!r} to be renamed into its place")
    return parent, pname, fname


def publish_folder(pending: str, final: str, *, root: str | None = None, replace: bool = False) -> None:
    """Make the finished folder *pending* visible as *final* (its sibling) in one rename.

    A missing or empty *final* is taken by the rename itself. A non-empty *final* is replaced only
    with *replace* (swapped in one step where the kernel can, else through a trash name: see the
    module docstring) and its old content deleted; without it :class:`VolumeExistsError` is raised
    and nothing is touched. The parent folder is made if missing, confined to *root*."""
    parent, pname, fname = _split(pending, final)
    dfd = open_dir(parent, root, create=True)
    try:
        publish_folder_at(dfd, pname, fname, replace=replace, display=final)
    finally:
        os.close(dfd)


def publish_folder_at(dfd: int, pname: str, fname: str, *, replace: bool = False, display: str = "") -> None:
    """:func:`publish_folder` of *pname* as *fname*, both in the open, verified folder *dfd* (a
    caller that holds its folder's descriptor saves the lookups of every part of the path)."""
    try:
        os.rename(pname, fname, src_dir_fd=dfd, dst_dir_fd=dfd)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    if not replace:
        raise VolumeExistsError(
            errno.EEXIST, f"{display or fname} is not empty; nothing was replaced (remove it, or replace it)"
        )
    if _exchange is not None and _exchange(dfd, pname, dfd, fname):
        shutil.rmtree(pname, dir_fd=dfd, ignore_errors=True)  # the old folder, now under pname
        return
    trash = owned_name(TRASH_EXPORT_PREFIX)
    os.rename(fname, trash, src_dir_fd=dfd, dst_dir_fd=dfd)
    try:
        if _BETWEEN is not None:
            _BETWEEN()
        os.rename(pname, fname, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:  # put the old folder back: a failed publish leaves final as it was
            os.rename(trash, fname, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError:
            pass
        raise
    shutil.rmtree(trash, dir_fd=dfd, ignore_errors=True)


def withdraw_folder(path: str, trash: str, *, root: str | None = None) -> None:
    """Take published folder *path* out of sight in one rename to *trash* (its sibling: an
    in-flight name listings hide), before any of its files is deleted, so a reader never meets it
    half-deleted. The caller deletes *trash*."""
    parent, tname, name = _split(trash, path)
    dfd = open_dir(parent, root)
    try:
        os.rename(name, tname, src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        os.close(dfd)


@contextmanager
def staging_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A fresh, empty folder at *path* for files that :func:`publish_staged` moves out one by one.

    What a dead writer left at *path* is removed first, so the caller must be its only writer (it
    holds the lock of what it publishes into); the folder goes, with whatever is left in it, on
    exit."""
    shutil.rmtree(path, ignore_errors=True)
    os.mkdir(path)
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def publish_staged(temp: str, path: str) -> None:
    """Move the complete (verified) file *temp*, in a :func:`staging_folder` on the same file
    system, to *path* in one rename: readers of *path* see the whole file or none."""
    os.rename(temp, path)
