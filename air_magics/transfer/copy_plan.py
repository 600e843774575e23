"""Turn ``%%air_copy`` sources and a destination into copy tasks; all checks before any write.

Layout rule (``cp --parents`` style, relative structure kept): each source line has an *anchor*,
the folder it is taken relative to. A file or folder is anchored at its parent, so
``/Volumes/c/s/v/data/train`` lands at ``DEST/train/...``; a glob is anchored at its literal
prefix, so ``/Volumes/c/s/v/data/**/*.jpg`` lands at ``DEST/<path below data>``.

Sources are ``/Volumes/...`` paths, other absolute (local) paths, or paths relative to the default
volume (``%air_volume use``). The destination is a local folder or a ``/Volumes/...`` folder.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CopyPlanError, DestinationError, VolumeNotFoundError
from ..io.confined import is_within
from ..io.leftovers import temp_name
from ..io.retry import is_transient, retry_call
from ..volumes.glob import filter_glob, split_glob
from ..volumes.location import Location
from ..volumes.path import PREFIX, VolumePath
from ..volumes.resolved import VolumeFile
from ..volumes.store import VolumeStore
from ..volumes.walk import Entry, scan_local
from .task import CopyTask

__all__ = ["CopyPlan", "plan_copy", "parse_sources"]


@dataclass
class CopyPlan:
    """Tasks ready for :func:`air_magics.transfer.copy_files`, plus what they were made from."""

    tasks: list[CopyTask]
    dest: str
    sources: list[str] = field(default_factory=list)

    @property
    def bytes_total(self) -> int:
        return sum(t.size or 0 for t in self.tasks)


def parse_sources(text: str) -> list[str]:
    """One source per non-blank line, taken literally; a ``#`` at a line's start or after a space
    starts a comment (``train  # the training split``), as on a shell line."""
    sources = []
    for line in text.splitlines():
        m = _COMMENT.search(line)
        line = (line[: m.start()] if m else line).strip()
        if line:
            sources.append(line)
    return sources


_COMMENT = re.compile(r"(?:^|(?<=\s))#")


def _is_volume(text: str) -> bool:
    return text == PREFIX or text.startswith(PREFIX + "/")


@dataclass
class _Selection:
    line: str
    anchor_parent: Location  # where entry rels are relative to
    key: str  # the files' names are this + "/" + rel: the volume path, or the local path, of the anchor
    prefix: str  # prepended to each rel for the destination layout
    entries: list[Entry]
    tree: Location | None  # the folder copied from (for dest-inside-source checks)


def _select_volume(line: str, store: VolumeStore, default: VolumePath | None) -> _Selection:
    vp = VolumePath.parse(line, default=default)
    fixed, pat = split_glob(vp.parts)
    if pat:
        base = VolumePath(vp.catalog, vp.schema, vp.volume, fixed)
        loc = store.locate(base)
        entries = filter_glob(store.entries(base, recursive=True, stat=False), pat)
        return _Selection(line, loc, str(base), "", entries, loc)
    loc = store.locate(vp)
    entries = store.entries(vp, recursive=True, stat=False)
    is_file = len(entries) == 1 and entries[0].rel == ""
    return _Selection(line, loc, str(vp), vp.name, entries, None if is_file else loc)


def _select_local(line: str) -> _Selection:
    p = Path(line).expanduser()
    if not p.is_absolute():
        raise CopyPlanError(f"local source {line!r} must be an absolute path (relative lines mean the default volume)")
    parts = p.parts[1:]
    fixed, pat = split_glob(tuple(parts))
    if pat:
        base = Path("/", *fixed)
        if not base.is_dir():
            raise VolumeNotFoundError(f"source folder {str(base)!r} of {line!r} does not exist; check the path")
        entries = filter_glob(scan_local(base, confine=base, stat=False), pat)
        return _Selection(line, Location(str(base), root=str(base)), str(base), "", entries, Location(str(base)))
    if not p.exists():
        raise VolumeNotFoundError(f"source {line!r} does not exist; check the path")
    if p.is_dir():  # confined to the folder named: a link inside it never reads from elsewhere
        return _Selection(
            line, Location(str(p), root=str(p)), str(p), p.name, scan_local(p, confine=p, stat=False), Location(str(p))
        )
    st = p.stat()  # a file named on its own line: read wherever it is, but never a FIFO or device
    return _Selection(line, Location(str(p)), str(p), p.name, [Entry("", st.st_size, st.st_mtime)], None)


def _dest_location(dest: str, store: VolumeStore) -> Location:
    """Where the copy writes; every folder it creates or enters is confined to this root (a volume
    destination: to its volume)."""
    if _is_volume(dest):
        return store.locate(VolumePath.parse(dest))
    p = Path(dest).expanduser().absolute()
    return Location(str(p), root=str(p))


def _check_writable(loc: Location, dest: str) -> None:
    """Refuse a local destination nothing can be written to, before anything is copied.

    ``os.access`` is not enough: for root it says yes to a read-only mount or ``/proc``. So a temp
    file is created and removed in the nearest existing ancestor (nothing else is created there)."""
    if not loc.is_local:
        return
    existing = Path(loc.path)
    if existing.exists() and not existing.is_dir():
        raise DestinationError(f"destination {dest!r} is a file; give a folder to copy into")
    while not existing.exists():
        existing = existing.parent
    problem = "it is not a folder" if not existing.is_dir() else _probe_write(existing)
    if problem:
        raise DestinationError(
            f"destination {dest!r} is not writable ({problem} in {str(existing)!r}); pick a folder you can write to"
        )


def _probe_write(folder: Path) -> str | None:
    """Why no file can be created in *folder* (``None`` when one can): create and remove a temp file.

    Only a definite refusal (``EACCES``, ``EROFS``, ``ENOSPC``, ...) refuses the copy. Transient errors
    (``EIO`` on a flaky mount) are retried as the copy itself would retry them, on the same name (a
    temp name of this process and thread, as a copy's): a fresh random name per try met a fresh fault
    each time on a volume whose faults are per name (issue 36). One that outlasts the retries proves
    nothing about permissions, so it lets the copy go on, whose own retries and per-file report
    deal with it (issue 49: a flush fault on the probe's close aborted a copy before it started).
    The close is part of the create: on a FUSE mount it is the flush, where a write fault lands.
    """
    name = str(folder / temp_name("air-write-probe"))

    def create() -> None:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.close(fd)  # the descriptor is released even when close reports an error

    def remove() -> None:
        with contextlib.suppress(FileNotFoundError):  # gone already (a retried unlink that had succeeded)
            os.unlink(name)

    for step, what in ((create, "create"), (remove, "remove")):
        try:
            retry_call(step)
        except OSError as exc:
            if is_transient(exc):
                return None  # no verdict: the copy retries and reports per file
            return f"cannot {what} a file: {exc.strerror or exc}"
    return None


def plan_copy(
    sources: Iterable[str] | str,
    dest: str,
    *,
    store: VolumeStore | None = None,
    default_volume: VolumePath | None = None,
) -> CopyPlan:
    """Expand sources (paths or globs) into tasks; raise before anything is written if any is wrong."""
    lines = parse_sources(sources) if isinstance(sources, str) else [s.strip() for s in sources if s.strip()]
    if not lines:
        raise CopyPlanError("no sources given: put one /Volumes/... path or glob per line in the cell body")
    if not dest or not dest.strip():
        raise CopyPlanError("no destination: pass --to DEST (a local folder or a /Volumes/... folder)")
    dest = dest.strip()
    store = store or VolumeStore()
    dst_root = _dest_location(dest, store)
    _check_writable(dst_root, dest)
    tasks: list[CopyTask] = []
    owner: dict[str, str] = {}
    for line in lines:
        sel = (
            _select_volume(line, store, default_volume)
            if (_is_volume(line) or not line.startswith(("/", "~")))
            else _select_local(line)
        )
        if not sel.entries:
            raise CopyPlanError(f"source {line!r} matched no files; check the path or glob with `%air_volume ls`")
        if sel.tree is not None and _inside(dst_root, sel.tree):
            raise DestinationError(
                f"destination {dest!r} is inside source {line!r}; copying would recurse into itself. Pick a destination outside it"
            )
        for e in sel.entries:
            rel = "/".join(x for x in (sel.prefix, e.rel) if x)
            if rel in owner:
                if owner[rel] == line:
                    continue  # the same file selected twice by one line
                raise CopyPlanError(
                    f"{line!r} and {owner[rel]!r} both copy to {rel!r} under {dest!r}; copy them to different destinations"
                )
            owner[rel] = line
            src = VolumeFile(f"{sel.key}/{e.rel}" if e.rel else sel.key, sel.anchor_parent.join(e.rel), e.size, e.mtime)
            tasks.append(CopyTask(src, dst_root.join(rel)))
    _check_file_folder_clash(owner, dest)
    return CopyPlan(tasks, dest, lines)


def _check_file_folder_clash(owner: dict[str, str], dest: str) -> None:
    """A file ``train`` and a folder ``train/...`` cannot both land in one destination."""
    for rel in owner:
        parts = rel.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in owner:
                raise CopyPlanError(
                    f"{owner[folder]!r} copies a file to {folder!r} under {dest!r}, but {owner[rel]!r} needs a folder "
                    f"there (for {rel!r}); copy them to different destinations"
                )


def _inside(dst: Location, src_tree: Location) -> bool:
    if dst.is_local != src_tree.is_local:
        return False
    if dst.is_local:
        return is_within(os.path.realpath(dst.path), os.path.realpath(src_tree.path))
    return dst.fs is src_tree.fs and is_within(dst.path.rstrip("/"), src_tree.path.rstrip("/"))
