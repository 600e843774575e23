"""Parallel directory listing, the I/O shape that suits remote mounts (globs: :mod:`.glob`).

On a mount with milliseconds of latency per request a serial ``os.walk`` + ``stat`` costs one
round trip per entry. Here directories are scanned and entries stat'ed on a thread pool so the
round trips overlap. Symlinks are followed only when they stay inside ``confine``.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
from bisect import bisect_left
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import NamedTuple

from ..io.confined import is_within
from ..io.gcpause import gc_paused
from ..io.leftovers import is_leftover
from ..io.pools import job_pool

__all__ = ["Entry", "checked_links", "scan_local", "scan_names"]

_STAT_CHUNK = 4
PROGRESS_EVERY = 10_000  # entries between two calls of a listing's ``progress``


class Entry(NamedTuple):
    """One listed file or directory; ``rel`` is ``/``-separated and relative to the scan root.

    A named tuple (why: a listing of a million files makes a million of them; this is 3x cheaper
    to make than a frozen dataclass, and a list of them sorts by ``rel`` without a key function,
    ``rel`` being unique in a listing)."""

    rel: str
    size: int | None  # None: a names-only listing did not ask
    mtime: float | None
    is_dir: bool = False


@dataclass
class _Scanned:
    """One folder's scan: its subfolders, the files it stat'ed itself, and those left to the pool."""

    dirs: list[tuple[str, os.DirEntry[str]]]
    entries: list[Entry]
    to_stat: list[tuple[str, os.DirEntry[str]]]


def _scan_dir(
    path: str,
    rel: str,
    stat: bool,
    confine: str | None,
    skipped: list[tuple[str, str]],
    inline: bool,
) -> _Scanned:
    """List one folder; with *inline* its files are stat'ed right here (local disk: a pool task per
    few files would cost more than the stats), else they are left to the pool (``to_stat``)."""
    out = _Scanned([], [], [])
    here = inline and stat  # a plain file's stat right here, in this loop (local disk)
    pending: list[tuple[str, os.DirEntry[str]]] = []
    prefix = f"{rel}/" if rel else ""
    dirs, entries = out.dirs, out.entries
    with os.scandir(path) as it:
        for de in it:
            name = de.name
            if name[0] == "." and is_leftover(name):  # temp files / pending exports are never data
                continue
            child = prefix + name
            if de.is_dir(follow_symlinks=False):
                dirs.append((child, de))
            elif not de.is_file(follow_symlinks=False):  # a link or a special file: checked below
                pending.append((child, de))
            elif not stat:  # d_type: no stat round trip
                entries.append(Entry(child, None, None))
            elif here:
                try:
                    st = de.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # vanished between readdir and stat
                except OSError:
                    pending.append((child, de))  # reported by name below
                    continue
                if stat_module.S_ISREG(st.st_mode):
                    entries.append(Entry(child, st.st_size, st.st_mtime))
                else:
                    pending.append((child, de))  # replaced since the readdir: checked below
            else:
                pending.append((child, de))
    if inline:
        out.entries.extend(_stat_entries(pending, confine, skipped))  # links (checked), and odd files
    else:
        out.to_stat = pending
    return out


def _stat_entries(
    items: list[tuple[str, os.DirEntry[str]]], confine: str | None, skipped: list[tuple[str, str]]
) -> list[Entry]:
    out = []
    for rel, de in items:
        try:
            if de.is_symlink():
                real = os.path.realpath(de.path)
                if confine is not None and not is_within(real, confine):
                    skipped.append((rel, "link leading outside the volume"))
                    continue  # a link out of the volume is never listed or followed
                st = os.stat(de.path)
            else:
                st = de.stat(follow_symlinks=False)
        except FileNotFoundError:
            if de.is_symlink():
                skipped.append((rel, "broken link"))
            continue  # vanished between readdir and stat
        except OSError as exc:  # ELOOP, EACCES, ...: report by name, never fail the whole listing
            skipped.append((rel, "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))))
            continue
        if not stat_module.S_ISREG(st.st_mode):
            if not stat_module.S_ISDIR(st.st_mode):
                skipped.append((rel, _special_kind(st.st_mode)))
            continue  # a link to a folder is not followed (no loops)
        out.append(Entry(rel, st.st_size, st.st_mtime))
    return out


class _PathEntry:
    """What :func:`_stat_entries` asks of an ``os.DirEntry``, for a path found another way."""

    __slots__ = ("path", "_lstat")

    def __init__(self, path: str) -> None:
        self.path, self._lstat = path, None

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        if follow_symlinks:
            return os.stat(self.path)
        if self._lstat is None:
            self._lstat = os.lstat(self.path)
        return self._lstat

    def is_symlink(self) -> bool:
        try:
            return stat_module.S_ISLNK(self.stat(follow_symlinks=False).st_mode)
        except OSError:
            return False


def checked_links(root: str, rels: list[str], confine: str | None, skipped: list[tuple[str, str]]) -> list[Entry]:
    """The entries *rels* below *root* that are neither plain files nor folders (links, special
    files), found by another walk (``find``), under the listing's rules: a link to a file inside
    *confine* is listed with its target's size, anything else is appended to *skipped*."""
    conf = os.path.realpath(confine) if confine is not None else None
    return _stat_entries([(rel, _PathEntry(os.path.join(root, rel))) for rel in rels], conf, skipped)  # type: ignore[misc]


def _special_kind(mode: int) -> str:
    for test, kind in (
        (stat_module.S_ISFIFO, "FIFO"),
        (stat_module.S_ISSOCK, "socket"),
        (stat_module.S_ISCHR, "character device"),
        (stat_module.S_ISBLK, "block device"),
    ):
        if test(mode):
            return kind
    return "special file"


def scan_local(
    root: str | os.PathLike[str],
    *,
    recursive: bool = True,
    with_dirs: bool = False,
    confine: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    stat: bool = True,
    skipped: list[tuple[str, str]] | None = None,
    local_disk: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[Entry]:
    """List files under *root* (a directory) with size and mtime, scanning in parallel.

    ``local_disk=True`` (a folder on this machine's own disk, e.g. the embedded volumes): one
    thread walks it as ``os.walk`` does, stat'ing each folder's files as it goes; round trips cost
    nothing there, and threads would only take turns at the interpreter.

    ``progress(n)`` is called with the entries found so far, about every :data:`PROGRESS_EVERY`.

    ``stat=False`` lists names only (``size`` and ``mtime`` ``None``): one readdir per folder and no per-file round
    trip, for callers that learn sizes later (the copy engine ``fstat``s each file it opens).

    ``recursive=False`` lists only the direct children (directories included when
    ``with_dirs``). Symlinked directories are not followed (no loops); symlinked files are
    listed only if their target is inside *confine*. Result is sorted by ``rel``.

    Nothing in a folder fails the listing: symlink loops, broken links, links out of *confine*,
    FIFOs, sockets and devices are left out and appended to *skipped* as ``(rel, reason)``; a
    folder that cannot be read is reported there too. Leftovers (temp files of copies, pending
    export folders; :func:`air_magics.io.is_leftover`) are never listed.
    """
    skipped = [] if skipped is None else skipped
    root = os.fspath(root)
    conf = os.path.realpath(confine) if confine is not None else None
    results: list[Entry] = []
    if local_disk:
        with gc_paused():  # an Entry per file, none in a cycle (see io/gcpause.py)
            _walk_serial(root, recursive, with_dirs, stat, conf, skipped, results, progress)
        results.sort()  # by rel (unique)
        skipped.sort()
        return results
    with job_pool("remote-io", "air-scan", workers or None) as pool:

        def scan(path: str, rel: str) -> Future:
            return pool.submit(_scan_dir, path, rel, stat, conf, skipped, False)

        pending: dict[Future, tuple[str, str]] = {scan(root, ""): ("dir", "")}
        tell = _every(progress)
        while pending:
            tell(len(results))
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                kind, rel = pending.pop(fut)
                if kind == "stat":
                    results.extend(fut.result())
                    continue
                try:
                    listed = fut.result()
                except OSError as exc:
                    _unlistable(rel, exc, skipped)
                    continue
                for child, de in _absorb(listed, with_dirs, recursive, results):
                    pending[scan(de.path, child)] = ("dir", child)
                files = listed.to_stat
                for i in range(0, len(files), _STAT_CHUNK):
                    pending[pool.submit(_stat_entries, files[i : i + _STAT_CHUNK], conf, skipped)] = ("stat", rel)
    results.sort()  # by rel (unique)
    skipped.sort()
    return results


def scan_names(
    root: str | os.PathLike[str],
    *,
    recursive: bool = True,
    confine: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    skipped: list[tuple[str, str]] | None = None,
    local_disk: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """The files under *root* as sorted relative names, nothing else: :func:`scan_local` with
    ``stat=False`` and the same rules, without an object per file (why: a folder of a million
    files is listed at close to ``os.walk``'s speed and kept as strings; see
    :class:`~air_magics.volumes.filelist.FileList`). A symlinked file is still checked (one stat)."""
    skipped = [] if skipped is None else skipped
    root = os.fspath(root)
    conf = os.path.realpath(confine) if confine is not None else None
    if local_disk and recursive:
        names = _names_in_order(root, conf, skipped, progress)
    else:
        found = scan_local(
            root,
            recursive=recursive,
            confine=confine,
            workers=workers,
            stat=False,
            skipped=skipped,
            local_disk=local_disk,
            progress=progress,
        )
        names = [e.rel for e in found]  # sorted
    skipped.sort()
    return names


def _names_in_order(
    root: str, confine: str | None, skipped: list[tuple[str, str]], progress: Callable[[int], None] | None
) -> list[str]:
    """:func:`scan_names` on local disk: depth first in name order, a folder's files gathered by
    one comprehension and sorted there, so the names come out sorted without a sort of them all
    (a sub-folder ``d`` is placed as ``d/`` is among its siblings, as the full paths sort)."""
    out: list[str] = []
    tell = _every(progress)
    # what is left, last first: a folder to list (its path and prefix), or one file's name (None)
    stack: list[tuple[str | None, str]] = [(root, "")]
    while stack:
        path, prefix = stack.pop()
        if path is None:
            out.append(prefix)  # (here: a file's whole relative name)
            continue
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError as exc:
            _unlistable(prefix[:-1], exc, skipped)
            continue
        files = [prefix + de.name for de in entries if de.is_file(follow_symlinks=False)]
        dirs: list[os.DirEntry[str]] = []
        if len(files) < len(entries):
            dirs = [de for de in entries if de.is_dir(follow_symlinks=False)]
            if len(files) + len(dirs) < len(entries):  # links and special files: checked one by one
                odd = [
                    (prefix + de.name, de)
                    for de in entries
                    if not de.is_file(follow_symlinks=False)
                    and not de.is_dir(follow_symlinks=False)
                    and not is_leftover(de.name)
                ]
                files += [e.rel for e in _stat_entries(odd, confine, skipped)]
            dirs = [de for de in dirs if not is_leftover(de.name)]
        files.sort()
        # the dot-names, where leftovers are: one block between prefix + "." and prefix + "/"
        lo, hi = bisect_left(files, prefix + "."), bisect_left(files, prefix + "/")
        if lo < hi:
            files[lo:hi] = [n for n in files[lo:hi] if not is_leftover(n[len(prefix) :])]
        if not dirs:  # everything before this folder is out already: its names follow
            out += files
            tell(len(out))
            continue
        keyed = sorted([(n, None) for n in files] + [(f"{prefix}{de.name}/", de.path) for de in dirs])
        stack += [(d, key) for key, d in reversed(keyed)]  # popped in name order
    return out


def _walk_serial(
    root: str,
    recursive: bool,
    with_dirs: bool,
    stat: bool,
    confine: str | None,
    skipped: list[tuple[str, str]],
    results: list[Entry],
    progress: Callable[[int], None] | None,
) -> None:
    """:func:`scan_local` on local disk: depth first, one thread, the same rules."""
    stack = [(root, "")]
    tell = _every(progress)
    while stack:
        tell(len(results))
        path, rel = stack.pop()
        try:
            listed = _scan_dir(path, rel, stat, confine, skipped, True)
        except OSError as exc:
            _unlistable(rel, exc, skipped)
            continue
        stack.extend((de.path, child) for child, de in _absorb(listed, with_dirs, recursive, results))


def _every(progress: Callable[[int], None] | None) -> Callable[[int], None]:
    """``progress(n)`` at most once per :data:`PROGRESS_EVERY` more entries (nothing without one)."""
    told = 0

    def tell(n: int) -> None:
        nonlocal told
        if progress is not None and n - told >= PROGRESS_EVERY:
            told = n
            progress(n)

    return tell


def _unlistable(rel: str, exc: OSError, skipped: list[tuple[str, str]]) -> None:
    """A folder that cannot be listed: the root fails the listing, any other is reported by name."""
    if not rel:
        raise exc
    skipped.append((rel, f"folder cannot be listed ({exc.strerror or exc})"))


def _absorb(
    listed: _Scanned, with_dirs: bool, recursive: bool, results: list[Entry]
) -> list[tuple[str, os.DirEntry[str]]]:
    """Take one folder's scan into *results* (its folders too, with *with_dirs*); returns the
    subfolders to list next (none unless *recursive*)."""
    results.extend(listed.entries)
    if with_dirs:
        results.extend(Entry(child, 0, 0.0, True) for child, _ in listed.dirs)
    return listed.dirs if recursive else []
