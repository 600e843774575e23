"""Benchmark: what the confined open costs.

Plain ``os.open`` + read vs ``air_magics.io.open_read`` + read, and plain temp-file + rename vs
``publish_at`` in a verified folder, on page-cached local files: the case where a per-file overhead
shows most (the loader's warm path reads 30-39k files/s per thread). No FUSE, no subprocess.

    .venv/bin/python benchmarks/bench_confined.py [--files 3000] [--size-kib 150] [--reps 5]
    .venv/bin/python benchmarks/bench_confined.py --quick     # 1000 files, 3 reps (a few seconds)

Interleaved repetitions (order rotated per rep), medians, one table on stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness.report import fmt, table
from benchmarks.harness.runner import (
    add_common_args,
    interleaved,
    med,
    raise_on_sigterm,
    resolve_waits,
)
from benchmarks.harness.sampling import wait_quiet

__all__ = ["main"]

OPS = ("read plain", "read confined", "write plain", "write confined")


def read_plain(paths: list[str]) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            os.read(fd, st.st_size + 1)
        finally:
            os.close(fd)


def read_confined(paths: list[str], root: str) -> None:
    from air_magics.io import open_read

    for p in paths:
        fd, st = open_read(p, root)
        try:
            os.read(fd, st.st_size + 1)
        finally:
            os.close(fd)


def write_plain(folder: str, names: list[str], data: bytes) -> None:
    for n in names:
        tmp = os.path.join(folder, f".{n}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, os.path.join(folder, n))


def write_confined(folder: str, root: str, names: list[str], data: bytes) -> None:
    from air_magics.io import open_dir, publish_at, temp_name

    dfd = open_dir(folder, root, create=True)  # once per folder, as the copy engine does
    try:
        for n in names:
            publish_at(dfd, n, lambda fd: os.write(fd, data), temp=temp_name(n))
    finally:
        os.close(dfd)


def measure(a: argparse.Namespace, td: str) -> dict[str, list[float]]:
    """Seconds per operation and rep over *a.files* page-cached files under *td*."""
    import air_magics.io  # noqa: F401  (imported before the clock starts)

    root = os.path.join(td, "vol")
    src = os.path.join(root, "data")
    os.makedirs(src)
    data = os.urandom(a.size_kib << 10)
    names = [f"f{i:05d}.bin" for i in range(a.files)]
    for n in names:
        Path(src, n).write_bytes(data)
    paths = [os.path.join(src, n) for n in names]
    read_plain(paths)  # warm the page cache
    times: dict[str, list[float]] = {k: [] for k in OPS}
    if a.quiet_wait > 0:
        wait_quiet(a.quiet_below, a.quiet_wait)
    for rep, key in interleaved(a.reps, OPS):
        wp, wc = os.path.join(root, f"wp{rep}"), os.path.join(root, f"wc{rep}")
        if key == "write plain":
            os.makedirs(wp)  # outside the clock, as before the harness
        t0 = time.perf_counter()
        if key == "read plain":
            read_plain(paths)
        elif key == "read confined":
            read_confined(paths, root)
        elif key == "write plain":
            write_plain(wp, names, data)
        else:
            write_confined(wc, root, names, data)
        times[key].append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="bench_confined.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--files", type=int, help="files per operation (default 3000; --quick 1000)")
    ap.add_argument("--size-kib", type=int, default=150, help="file size in KiB (default 150)")
    ap.add_argument("--reps", type=int, help="interleaved repetitions (default 5; --quick 3)")
    add_common_args(ap, quiet_wait=0.0, quiet_below=0.15)
    a = ap.parse_args(argv)
    resolve_waits(a)
    a.files = a.files or (1000 if a.quick else 3000)
    a.reps = a.reps or (3 if a.quick else 5)
    raise_on_sigterm()  # a stopped run still removes its files
    with tempfile.TemporaryDirectory() as td:
        times = measure(a, td)
    print(f"### confined open vs plain open ({a.files} x {a.size_kib} KiB, page cache, {a.reps} reps, one thread)\n")
    rows = []
    for op in ("read", "write"):
        p, c = med(times[f"{op} plain"]), med(times[f"{op} confined"])
        rows.append([op, fmt(a.files / p, ",.0f"), fmt(a.files / c, ",.0f"), f"{fmt(p / c, '.2f')}x"])
    print(table(["operation", "plain files/s", "confined files/s", "confined / plain"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
