"""``HeldFolder``: names looked up, written and renamed relative to a folder's descriptor, opened once.

Why: a path is resolved part by part, and on a FUSE mount each part whose cached entry has
expired (after a second, commonly) is asked again: checking ``.../run/step_12`` after a minute of
training cost five round trips, not one. ``CheckpointManager`` asks whether a step exists, makes
the step's pending folder, commits it and writes its ``latest`` pointer on the training loop's
clock; relative to a held descriptor of its folder each of those is one or two requests.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from concurrent.futures import Executor, Future

from ..io.atomic import replace_at
from ..io.confined import exists_at, folder_at, open_dir, publish_at, write_all, write_at
from ..io.folders import publish_folder_at
from ..io.leftovers import temp_name
from ..volumes.location import Location
from ..volumes.object_io import list_tree
from .commit import COMMITTED, METADATA, PENDING_PREFIX, read_text, remove_folder, write_text_atomic

__all__ = ["HeldFolder", "StagedText"]


class HeldFolder:
    """The folder at *loc*; its descriptor (verified inside its volume) is opened on first use and
    closed with the object. A folder replaced after that is not seen: drop the object and make a
    new one when an operation on the folder failed."""

    def __init__(self, loc: Location) -> None:
        self.loc = loc
        self._fd: int | None = None
        self.marker_read: tuple[str, str] | None = None  # (step folder, its _COMMITTED) last read by committed()

    def _held(self) -> int | None:
        """The folder's descriptor; None while the folder is not there."""
        if self._fd is None:
            try:
                self._fd = open_dir(self.loc.path, self.loc.root)
            except FileNotFoundError:  # not made yet (another rank makes it): nothing is in it
                return None
            weakref.finalize(self, os.close, self._fd)
        return self._fd

    def hold(self) -> None:
        """Open the folder's descriptor now, if the folder is there (on a mount, its path resolved
        now rather than on the clock of the first operation)."""
        if self.loc.is_local:
            self._held()

    @property
    def in_place(self) -> bool:
        """Whether a save writes its step straight under the step's name (a store without renames:
        an object store; the step is published by its marker, written last) rather than into a
        pending folder renamed in at the end (an OS path)."""
        return not self.loc.is_local

    def begin_save(self, final: str, *, clear: bool) -> str:
        """The folder a save of step folder *final* writes into, made ready: ``FileExistsError`` when
        *final* is a step already (committed); with *clear*, a crashed attempt's leftover is removed.
        OS paths: the pending folder (renamed to *final* by :meth:`commit`), one lookup. Object stores:
        *final* itself, one listing (and one batch delete of a leftover without its marker)."""
        if not self.in_place:
            if self.has(final):
                raise FileExistsError(final)
            pending = f"{PENDING_PREFIX}{final.removeprefix('step_')}"
            if clear and self.has(pending):  # a crashed attempt's leftover (rmtree follows no link)
                remove_folder(self.loc.join(pending))
            return pending
        here = self.loc.join(final)
        found = list_tree(here.fs, here.path)
        if COMMITTED in found:
            raise FileExistsError(final)
        if clear and found:  # written by a save killed before its marker: never loadable, never loaded
            remove_folder(here, found)
        return final

    def committed(self, step_folder: str) -> bool:
        """Whether *step_folder* is a complete step. OS paths: both markers (``.metadata`` and
        ``_COMMITTED``, written side by side), two lookups; object stores: ``_COMMITTED``, written
        after every other file of the step, one GET."""
        if self.in_place:
            text = self.read_text(f"{step_folder}/{COMMITTED}")
            self.marker_read = (step_folder, text) if text is not None else None
            return text is not None
        return self.has(f"{step_folder}/{COMMITTED}") and self.has(f"{step_folder}/{METADATA}")

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

    def _required(self) -> int:
        fd = self._held()
        if fd is None:
            raise FileNotFoundError(f"{self.loc.path} is not there (removed meanwhile?)")
        return fd

    def make_folder(self, name: str) -> int | None:
        """Folder *name* in this folder, made if missing; its descriptor (the caller closes it), or
        None on a remote file system (nothing to hold: the caller makes it by path). A link at
        *name* is refused, never followed."""
        if not self.loc.is_local:
            return None
        return folder_at(self._required(), name, self.loc.join(name).path, create=True)

    def write_text(self, name: str, text: str, *, fsync: bool) -> None:
        """Replace file *name* so readers see the old or the new text, never a mix (temp name,
        optional fsync, rename)."""
        if not self.loc.is_local:
            write_text_atomic(self.loc.join(name), text, fsync=fsync)
            return
        data = text.encode()
        publish_at(self._required(), name, lambda fd: write_all(fd, data), temp=temp_name(name), fsync=fsync)

    def stage_text(self, name: str, text: str) -> str:
        """Write *text* under a temp name for file *name* (put in place later by :meth:`rename`);
        returns the temp name. Local folders only."""
        temp = temp_name(name)
        write_at(self._required(), temp, text.encode())
        return temp

    def rename(self, name: str, new_name: str) -> None:
        """Rename *name* to *new_name* in the folder (a file at *new_name* is replaced)."""
        fd = self._required()
        replace_at(fd, name, new_name)

    def remove(self, name: str) -> None:
        """Remove file *name* from the folder if it is there."""
        fd = self._held()
        if fd is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=fd)

    def commit(self, pending: str, final: str, *, marker: str, text: str | None) -> None:
        """Publish folder *pending* as *final* (a non-empty *final* is refused, never replaced),
        marker file *marker* (holding *text*, fsynced) written into it first (``text=None``: the
        marker is there already, written with the folder's other files). On an object store
        (:attr:`in_place`: *pending* is *final*) the marker written last is the whole commit.

        The marker is written under its own name, not a temp one: nothing in *pending* is read
        as a step's until the rename, so a torn marker there is never seen (the rename of the
        temp name was one more request on the caller's clock)."""
        loc = self.loc
        if self.in_place:
            if pending != final:
                raise ValueError(f"{loc} has no renames: save {final} in place, not as {pending}")
            if text is not None:
                write_text_atomic(loc.join(f"{final}/{marker}"), text)
            return
        fd = self._required()
        if text is not None:
            sub = folder_at(fd, pending, loc.join(pending).path)
            try:
                write_at(sub, marker, text.encode(), fsync=True)
            finally:
                os.close(sub)
        publish_folder_at(fd, pending, final, display=loc.join(final).path)


class StagedText:
    """File *name*'s next *text*, written under a temp name on *pool*'s thread from :meth:`start`
    on, while the caller works (a save's data streams), then put in place by one rename
    (:meth:`publish`) or removed (:meth:`discard`): the create, write and close are off the
    caller's clock. On a remote file system, when not started, or when the staging failed,
    :meth:`publish` writes it the plain way."""

    def __init__(self, folder: HeldFolder, name: str, text: str) -> None:
        self.folder, self.name, self.text = folder, name, text
        self._temp: Future[str] | None = None

    def start(self, pool: Executor) -> None:
        if self._temp is None and self.folder.loc.is_local:
            self._temp = pool.submit(self.folder.stage_text, self.name, self.text)

    def _staged(self) -> str | None:
        if self._temp is None:
            return None
        try:
            return self._temp.result()
        except Exception:  # (OSError, or the folder gone): written the plain way, which reports it
            return None

    def publish(self) -> None:
        temp, self._temp = self._staged(), None
        if temp is not None:
            try:
                self.folder.rename(temp, self.name)
                return
            except FileNotFoundError:  # removed meanwhile (a cleanup sweeping temp names)
                pass
        self.folder.write_text(self.name, self.text, fsync=False)

    def discard(self) -> None:
        temp, self._temp = self._staged(), None
        if temp is not None:
            with contextlib.suppress(OSError):
                self.folder.remove(temp)
