"""Parallel directory listing, the I/O shape that suits remote mounts (globs: :mod:`.glob`).

On a mount with milliseconds of latency per request a serial ``os.walk`` + ``stat`` costs one
round trip per entry. Here directories are scanned and entries stat'ed on a thread pool so the
round trips overlap. Symlinks are followed only when they stay inside ``confine``.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from ..io.confined import is_within
from ..io.leftovers import is_leftover
from ..io.pools import threads

__all__ = ["Entry", "scan_local"]

_STAT_CHUNK = 4


@dataclass(frozen=True)
class Entry:
    """One listed file or directory; ``rel`` is ``/``-separated and relative to the scan root."""

    rel: str
    size: int | None  # None: a names-only listing did not ask
    mtime: float | None
    is_dir: bool = False


def _scan_dir(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        return [de for de in it if not is_leftover(de.name)]  # temp files / pending exports are never data


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
) -> list[Entry]:
    """List files under *root* (a directory) with size and mtime, scanning in parallel.

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
    with ThreadPoolExecutor(max_workers=max(1, workers or threads("remote-io")), thread_name_prefix="air-scan") as pool:
        pending: dict[Future, tuple[str, str]] = {pool.submit(_scan_dir, root): ("dir", "")}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                kind, rel = pending.pop(fut)
                if kind == "stat":
                    results.extend(fut.result())
                    continue
                try:
                    listed = fut.result()
                except OSError as exc:
                    if not rel:
                        raise
                    skipped.append((rel, f"folder cannot be listed ({exc.strerror or exc})"))
                    continue
                files: list[tuple[str, os.DirEntry[str]]] = []
                for de in listed:
                    child = f"{rel}/{de.name}" if rel else de.name
                    if de.is_dir(follow_symlinks=False):
                        if with_dirs:
                            results.append(Entry(child, 0, 0.0, True))
                        if recursive:
                            pending[pool.submit(_scan_dir, de.path)] = ("dir", child)
                    elif not stat and de.is_file(follow_symlinks=False):  # d_type: no stat round trip
                        results.append(Entry(child, None, None))
                    else:
                        files.append((child, de))
                for i in range(0, len(files), _STAT_CHUNK):
                    pending[pool.submit(_stat_entries, files[i : i + _STAT_CHUNK], conf, skipped)] = ("stat", rel)
    results.sort(key=lambda e: e.rel)
    skipped.sort()
    return results
