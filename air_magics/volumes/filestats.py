"""Every file below a local folder with its size and mtime, at the file system's speed (``ls -r``).

Why a module of its own: ``%air_volume ls -r`` of a million files has to stat each one (it shows
bytes and a size histogram), and in Python ``os.scandir`` + ``stat`` alone is ~1.9x an
``os.walk``; an :class:`~air_magics.volumes.walk.Entry` per file and a sort of them all took it
to 3.2x. Here GNU ``find`` walks and stats in its own process and writes three columns (sizes,
mtimes, names) that are parsed in bulk, and the rows are kept as those columns
(:class:`FileStats`): the ``limit`` rows shown are the smallest names, found without sorting the
rest. Where ``find`` is not GNU's, or it meets anything it cannot read (it would only print a
message), the listing is :func:`~air_magics.volumes.walk.scan_local`'s, with the same rules.
"""

from __future__ import annotations

import heapq
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import cache
from itertools import repeat
from typing import overload

from ..io.leftovers import FUSE_HIDDEN_PREFIX, PENDING_EXPORT_PREFIX, TEMP_MARK, TRASH_EXPORT_PREFIX, is_leftover
from .walk import Entry, checked_links, scan_local

__all__ = ["FileStats", "file_stats", "size_stats"]

_HEAD = 4096  # a slice from 0 up to this many rows is found by a heap, not a sort of everything
_BULK = 1 << 20  # bytes of a column from which numpy parses it
_POLL = 0.1  # seconds between two looks at find's progress
_FINDS = min(4, os.cpu_count() or 1)  # find processes at once (one per core, a few at most)


class FileStats(Sequence[Entry]):
    """The files of a listing as three columns, in the order they were found; as a sequence,
    the :class:`Entry` rows in name order (the first few found by a heap, the rest by one sort
    made on first use)."""

    def __init__(self, names: list[str], sizes: array, mtimes: array) -> None:
        self.names, self.sizes, self.mtimes = names, sizes, mtimes
        self._sorted: list[int] | None = None
        self._head: tuple[int, list[Entry]] | None = None  # (stop, the first rows)

    def __len__(self) -> int:
        return len(self.names)

    def _row(self, i: int) -> Entry:
        return Entry(self.names[i], self.sizes[i], self.mtimes[i])

    @overload
    def __getitem__(self, i: int) -> Entry: ...
    @overload
    def __getitem__(self, i: slice) -> list[Entry]: ...
    def __getitem__(self, i: int | slice) -> Entry | list[Entry]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if self._sorted is None and start == 0 and step == 1 and stop <= _HEAD:
                if self._head is None or self._head[0] != stop:  # (a summary shows its head twice)
                    names = self.names
                    found = heapq.nsmallest(stop, zip(names, range(len(names)), strict=True))
                    self._head = (stop, [self._row(j) for _, j in found])
                return list(self._head[1])
            return [self[j] for j in range(start, stop, step)]
        if self._sorted is None:
            self._sorted = sorted(range(len(self.names)), key=self.names.__getitem__)
        return self._row(self._sorted[i])


def size_stats(sizes: array, bounds: Sequence[int]) -> tuple[int, list[int], float]:
    """``(total bytes, files per size bucket, median size)``; bucket *i* holds the sizes below
    ``bounds[i]`` and at or above the bound before it (the last: the rest)."""
    if not len(sizes):
        return 0, [0] * (len(bounds) + 1), 0.0
    try:
        if len(sizes) * 8 < _BULK:
            raise ImportError  # (as in _numbers)
        import numpy as np
    except ImportError:
        counts = [0] * (len(bounds) + 1)
        for i in map(bisect_right, repeat(bounds, len(sizes)), sizes):
            counts[i] += 1
        return sum(sizes), counts, float(statistics.median(sizes))
    col = np.frombuffer(sizes, dtype=np.int64)
    counts = np.bincount(np.searchsorted(np.asarray(bounds), col, side="right"), minlength=len(bounds) + 1)
    return int(col.sum()), [int(c) for c in counts], float(np.median(col))


def file_stats(
    root: str,
    *,
    confine: str | None = None,
    skipped: list[tuple[str, str]] | None = None,
    progress: Callable[[int], None] | None = None,
    drop: Sequence[str] = (),
) -> FileStats:
    """Every file below the folder *root* (on this machine: local disk or a mount) with its size
    and mtime, the rules of :func:`~air_magics.volumes.walk.scan_local` (leftovers never listed,
    links checked against *confine*, what cannot be read appended to *skipped*); files named one
    of *drop* (a base name: air_magics' own files in a user's folder) are left out."""
    skipped = [] if skipped is None else skipped
    found = _by_find(root, confine, skipped, progress, drop) if _gnu_find() else None
    if found is None:
        rows = scan_local(root, confine=confine, skipped=skipped, local_disk=True, progress=progress)
        rows = [e for e in rows if e.rel.rpartition("/")[2] not in drop] if drop else rows
        found = FileStats(
            [e.rel for e in rows], array("q", [e.size or 0 for e in rows]), array("d", [e.mtime or 0.0 for e in rows])
        )
    return found


@cache
def _gnu_find() -> str | None:
    exe = shutil.which("find")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return exe if "GNU findutils" in out else None


def _by_find(
    root: str,
    confine: str | None,
    skipped: list[tuple[str, str]],
    progress: Callable[[int], None] | None,
    drop: Sequence[str] = (),
) -> FileStats | None:
    """The listing by GNU ``find`` (None: it met something it could only print a message about,
    an unreadable folder or a file gone mid-walk: the caller lists in Python, which says which).
    The root's own entries are read here; its folders are shared among up to :data:`_FINDS`
    ``find`` processes run at once (each stat is a system call: two cores do them in ~0.75 of
    the time), whose columns are joined in bulk."""
    with os.scandir(root) as it:
        top = list(it)
    names: list[str] = []
    odd: list[str] = []
    sizes, mtimes = array("q"), array("d")
    dirs = []
    for de in top:  # the root's own entries, in Python (a few): its folders go to find
        if is_leftover(de.name):
            continue
        if de.is_dir(follow_symlinks=False):
            dirs.append(de.name)
        elif not de.is_file(follow_symlinks=False):
            odd.append(de.name)
        elif de.name not in drop:
            try:
                st = de.stat(follow_symlinks=False)
            except OSError:
                return None
            names.append(de.name)
            sizes.append(st.st_size)
            mtimes.append(st.st_mtime)
    dirs.sort()
    groups = [dirs[g::_FINDS] for g in range(min(_FINDS, len(dirs)))]
    with tempfile.TemporaryDirectory(prefix="air-ls-") as tmp:
        runs = [
            _start(root, [f"./{d}" for d in group], os.path.join(tmp, str(g)), drop) for g, group in enumerate(groups)
        ]
        _follow([proc for proc, _ in runs], [cols["sizes"] for _, cols in runs], progress)
        for proc, cols in runs:
            if not _collect(proc, cols, names, sizes, mtimes, odd):
                return None
    if not len(names) == len(sizes) == len(mtimes):
        return None
    for e in checked_links(root, odd, confine, skipped):  # links (checked) and special files
        names.append(e.rel)
        sizes.append(e.size or 0)
        mtimes.append(e.mtime or 0.0)
    skipped.sort()
    return FileStats(names, sizes, mtimes)


def _start(root: str, starts: list[str], tmp: str, drop: Sequence[str]) -> tuple[subprocess.Popen, dict[str, str]]:
    """One ``find`` over *starts* (``./name`` below *root*) writing its columns under *tmp*."""
    os.mkdir(tmp)
    cols = {k: os.path.join(tmp, k) for k in ("sizes", "mtimes", "names", "odd", "err")}
    for path in cols.values():  # (there before find writes: its progress is read as it runs)
        open(path, "wb").close()
    leftovers = ["-name", f"*{TEMP_MARK}*"]  # (leftovers all start with "."; that test comes first, it is cheap)
    for prefix in (PENDING_EXPORT_PREFIX, TRASH_EXPORT_PREFIX, FUSE_HIDDEN_PREFIX):
        leftovers += ["-o", "-name", f"{prefix}*"]
    cmd = [_gnu_find() or "find", *starts, "-name", ".*", "(", *leftovers, ")", "-prune", "-o"]
    for name in drop:  # air_magics' own files in a user's folder: neither listed nor odd
        cmd += ["-name", _glob_escape(name), "-type", "f", "-o"]
    cmd += ["-type", "f", "-fprintf", cols["sizes"], r"%s\n", "-fprintf", cols["mtimes"], r"%T@\n"]
    cmd += ["-fprintf", cols["names"], r"%p\0", "-o", "!", "-type", "d", "-fprintf", cols["odd"], r"%p\0"]
    env = {**os.environ, "LC_ALL": "C"}
    with open(cols["err"], "wb") as err:  # (a file: a pipe could fill with messages and stop it)
        proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=err, env=env)
    return proc, cols


def _collect(
    proc: subprocess.Popen, cols: dict[str, str], names: list[str], sizes: array, mtimes: array, odd: list[str]
) -> bool:
    """Add the columns of one finished ``find`` to the lists; False when it said anything (a
    message is something it could not read: the listing is then the Python walk's)."""
    if proc.wait() != 0 or os.path.getsize(cols["err"]):
        return False
    with open(cols["sizes"], "rb") as f:
        sizes.extend(_numbers(f.read(), "q"))
    with open(cols["mtimes"], "rb") as f:
        mtimes.extend(_numbers(f.read(), "d"))
    names += _paths(cols["names"])
    odd += _paths(cols["odd"])
    return True


def _numbers(text: bytes, typecode: str) -> array:
    """A column of decimal numbers, one a line, as an ``array`` (numpy parses it at C speed
    where it is installed: 20 ms a million, where ``map(int, ...)`` takes 130 and floats 280)."""
    try:
        if len(text) < _BULK:
            raise ImportError  # (a short column: not worth numpy's import, ~70 ms in a fresh process)
        import numpy as np
    except ImportError:
        return array(typecode, map(int if typecode == "q" else float, text.split()))
    out = array(typecode)
    if text.strip():
        out.frombytes(np.fromstring(text, dtype=np.int64 if typecode == "q" else np.float64, sep="\n").tobytes())
    return out


def _paths(column: str) -> list[str]:
    """A column of ``./rel\\0`` records as the relative names (the ``./`` cut in bulk)."""
    with open(column, "rb") as f:
        blob = f.read()
    if not blob:
        return []
    out = os.fsdecode(blob[2:].replace(b"\0./", b"\0")).split("\0")
    out.pop()  # (after the last separator)
    return out


def _follow(procs: list[subprocess.Popen], sizes: list[str], progress: Callable[[int], None] | None) -> None:
    """Wait for *procs*, telling *progress* how many files they have written so far (their sizes
    columns: one line a file)."""
    if progress is None:
        for proc in procs:
            proc.wait()
        return
    files = [open(path, "rb") for path in sizes]  # noqa: SIM115 (closed below)
    try:
        seen, told = 0, 0
        for proc in procs:
            while True:
                try:
                    proc.wait(_POLL)  # (returns as soon as it ends: a quick listing waits for nothing)
                    break
                except subprocess.TimeoutExpired:
                    seen += sum(f.read().count(b"\n") for f in files)
                    if seen > told:
                        told = seen
                        progress(seen)
    finally:
        for f in files:
            f.close()


def _glob_escape(name: str) -> str:
    """*name* as a ``find -name`` pattern that matches it alone."""
    return re.sub(r"([*?\[\\])", r"\\\1", name)
