"""FUSE volumes for the benchmarks (``fusevol``, the tool the tests use too): mount, read request counts.

Every measurement gets its own mount, so no method profits from kernel caches filled by the one
before it. The benchmarks use fusevol's C engine: its server costs a third of the Python engine's
CPU per request, and the harness counts that CPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import fusevol

__all__ = [
    "REPO",
    "Mount",
    "VolumeError",
    "fuse_unavailable",
    "read_stats",
    "requests",
    "slow_volume",
    "unmount_leftover",
    "volumes_link",
]

REPO = Path(__file__).resolve().parents[2]
#: what a failed mount raises
VolumeError = fusevol.FuseVolError


def fuse_unavailable() -> str | None:
    """Why a benchmark volume (fusevol, C engine) cannot be mounted here, or None."""
    return fusevol.unavailable("c")


def read_stats(path: Path | str) -> dict:
    """fusevol's ``stats`` document (ops per request kind, bytes, peak in flight); empty parts if unreadable."""
    try:
        s = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        s = {}
    return {
        "ops": s.get("ops", {}),
        "bytes_read": s.get("bytes_read", 0),
        "bytes_written": s.get("bytes_written", 0),
        "peak_inflight": s.get("peak_inflight", 0),
    }


def requests(ops: dict) -> int:
    """FUSE requests counted by the benchmarks: every kind except ``release`` (it never waits)."""
    return sum(n for op, n in ops.items() if op != "release")


@dataclass(frozen=True)
class Mount:
    """A live volume: where it is, its server's PID (to count its CPU) and its stats file."""

    path: Path
    server_pid: int
    stats_file: Path

    def stats(self, settle: float = 0.0) -> dict:
        """The stats so far; *settle* > 0.25 s waits for the server's next rewrite of the file."""
        if settle:
            time.sleep(settle)
        return read_stats(self.stats_file)


@contextlib.contextmanager
def slow_volume(
    backing: Path,
    mnt: Path,
    stats: Path,
    *,
    latency_ms: float,
    read_ms: float | None = None,
    write_ms: float | None = None,
    cache_timeout: float = 1.0,
    engine: str = "c",
) -> Iterator[Mount]:
    """Mount *backing* at *mnt* with a fixed latency per request; always unmounted.

    *read_ms* / *write_ms* default to fusevol's own rule (read = 2 ms, write = read) when None.
    *engine*: ``c`` (the default: a server that costs little CPU) or ``python`` (one that costs as
    much as a real FUSE daemon written in Python, on the same cores as the client: there the
    client's CPU per file decides its rate).
    """
    opts: dict = dict(op_latency_ms=latency_ms, engine=engine, attr_timeout=cache_timeout, entry_timeout=cache_timeout)
    if read_ms is not None:
        opts["read_latency_ms"] = read_ms
    if write_ms is not None:
        opts["write_latency_ms"] = write_ms
    stats.unlink(missing_ok=True)
    with fusevol.mounted(backing, mnt, stats=stats, **opts) as server_pid:
        yield Mount(Path(mnt), server_pid, Path(stats))


def unmount_leftover(mnt: Path) -> bool:
    """Unmount *mnt* lazily if something is still mounted there; True when nothing is (safe to delete)."""
    return fusevol.unmount(mnt, lazy=True)


@contextlib.contextmanager
def volumes_link(
    link: Path, target: Path, *, wait_s: float = 0.0, busy: Callable[[], list[int]] | None = None
) -> Iterator[Path]:
    """Symlink *link* -> *target* for the with-block; removed afterwards, and only if it is still ours.

    The reference library reads the ``/Volumes/...`` path it is given straight from the filesystem and
    only checks that the string starts with ``/Volumes``, so a link like ``/Volumes-air-bench-<pid>``
    serves it without creating ``/Volumes`` (which air_magics would take for a real mount). With
    *wait_s* > 0 it waits that long for *link* to be free (and *busy()* to return nothing) instead of
    refusing at once; it never replaces or deletes a path it did not create.
    """
    deadline, said = time.monotonic() + wait_s, False
    while True:
        in_use = busy() if busy else []
        if not os.path.lexists(link) and not in_use:
            try:
                os.symlink(target, link)
                break
            except FileExistsError:
                pass
        if time.monotonic() >= deadline:
            raise SystemExit(
                f"{link} already exists"
                + (f" (or pids {in_use} use it)" if in_use else "")
                + "; pass another --volumes-link (the harness never replaces an existing path)"
            )
        if not said:
            print(
                f"  (waiting for {link} to be free" + (f"; pids {in_use}" if in_use else "") + ")",
                file=sys.stderr,
                flush=True,
            )
            said = True
        time.sleep(5)
    try:
        yield link
    finally:
        with contextlib.suppress(OSError):
            if os.path.islink(link) and os.readlink(link) == str(target):
                os.unlink(link)
