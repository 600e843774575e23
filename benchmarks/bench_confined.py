"""What the confined open costs: plain ``os.open`` + read vs ``air_magics.io.open_read`` + read, and
plain temp-file + rename vs ``publish_at`` in a verified folder, on page-cached local files (the
case where a per-file overhead shows most: the loader's warm path reads 30-39k files/s per thread).

    python benchmarks/bench_confined.py [--files 3000] [--size-kib 150] [--reps 5]

Interleaved repetitions, medians, one table on stdout.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt, med  # noqa: E402

from air_magics.io import open_dir, open_read, publish_at, temp_name  # noqa: E402


def read_plain(paths: list[str]) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            os.read(fd, st.st_size + 1)
        finally:
            os.close(fd)


def read_confined(paths: list[str], root: str) -> None:
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
    dfd = open_dir(folder, root, create=True)  # once per folder, as the copy engine does
    try:
        for n in names:
            publish_at(dfd, n, lambda fd: os.write(fd, data), temp=temp_name(n))
    finally:
        os.close(dfd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--size-kib", type=int, default=150)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as td:
        root = os.path.join(td, "vol")
        src = os.path.join(root, "data")
        os.makedirs(src)
        data = os.urandom(a.size_kib << 10)
        names = [f"f{i:05d}.bin" for i in range(a.files)]
        for n in names:
            Path(src, n).write_bytes(data)
        paths = [os.path.join(src, n) for n in names]
        read_plain(paths)  # warm the page cache
        times: dict[str, list[float]] = {k: [] for k in ("read plain", "read confined", "write plain", "write confined")}
        for rep in range(a.reps):
            for key, fn in (("read plain", lambda: read_plain(paths)), ("read confined", lambda: read_confined(paths, root)),
                            ("write plain", lambda: write_plain(os.path.join(root, f"wp{rep}"), names, data)),
                            ("write confined", lambda: write_confined(os.path.join(root, f"wc{rep}"), root, names, data))):
                if key == "write plain":
                    os.makedirs(os.path.join(root, f"wp{rep}"))
                t0 = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t0)
    print(f"### confined open vs plain open ({a.files} x {a.size_kib} KiB, page cache, {a.reps} reps, one thread)\n")
    print("| operation | plain files/s | confined files/s | confined / plain |")
    print("|---|---|---|---|")
    for op in ("read", "write"):
        p, c = med(times[f"{op} plain"]), med(times[f"{op} confined"])
        print(f"| {op} | {fmt(a.files / p, ',.0f')} | {fmt(a.files / c, ',.0f')} | {fmt(p / c, '.2f')}x |")


if __name__ == "__main__":
    main()
