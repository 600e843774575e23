"""Packed shards on a slow FUSE volume: pack time vs ``tar -cf`` on the mount, unchanged re-pack,
cold and warm epochs over the packed folder vs the raw folder (air_magics both).

Standalone: imports only public air_magics names; mounts ``../shared/tools/slowfs.py`` over a
fresh temp folder (never ``/Volumes``: the store is pointed at the mount by AIR_VOLUMES_MOUNT).

    .venv/bin/python benchmarks/bench_pack.py [--files 1000] [--size-kib 150] [--latency-ms 10]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SLOWFS = Path(__file__).resolve().parents[2] / "shared" / "tools" / "slowfs.py"


def _slowfs():
    spec = importlib.util.spec_from_file_location("slowfs", SLOWFS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _seed(root: Path, files: int, size: int) -> None:
    rng = random.Random(0)
    for i in range(files):
        d = root / f"c{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{i:06d}.bin").write_bytes(rng.randbytes(size))


def _epoch(ds) -> tuple[float, float, int]:
    """(seconds to the first item, seconds for the epoch, items)."""
    t = time.perf_counter()
    first, n = None, 0
    for _ in ds:
        n += 1
        if first is None:
            first = time.perf_counter() - t
    return first or 0.0, time.perf_counter() - t, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--size-kib", type=int, default=150)
    ap.add_argument("--latency-ms", type=float, default=10.0)
    ap.add_argument("--shard-size", default="1GiB")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-pack-"))
    os.environ["AIR_HOME"] = str(tmp / "home")
    backing, mnt = tmp / "backing", tmp / "mnt"
    _seed(backing / "main" / "bench" / "data" / "raw", args.files, args.size_kib << 10)
    slowfs = _slowfs()
    lat = args.latency_ms
    rows: list[tuple[str, str]] = []
    try:
        with slowfs.mounted(backing, mnt, op_latency_ms=lat, read_latency_ms=lat, write_latency_ms=lat):
            os.environ["AIR_VOLUMES_MOUNT"] = str(mnt)
            from air_magics.cache import FileCache
            from air_magics.data import UCVolumeDataset
            from air_magics.shards import pack

            raw, packed = "/Volumes/main/bench/data/raw", "/Volumes/main/bench/data/packed"
            data = mnt / "main" / "bench" / "data"
            t = time.perf_counter()
            subprocess.run(["tar", "-b", "2048", "-cf", str(data / "baseline.tar"), "-C", str(data), "raw"], check=True)
            tar_s = time.perf_counter() - t
            (data / "baseline.tar").unlink()
            r = pack(raw, packed, shard_size=args.shard_size)
            again = pack(raw, packed, shard_size=args.shard_size)
            assert again.unchanged
            rows += [
                ("`tar -b 2048 -cf` on the mount (reads and writes the mount)", f"{tar_s:.1f} s"),
                (f"`pack` ({r.shards} shard(s))", f"{r.seconds:.1f} s ({tar_s / r.seconds:.1f}x tar's speed)"),
                ("unchanged re-pack", f"{again.seconds:.2f} s"),
            ]
            for name, path in (("raw", raw), ("packed", packed)):
                cache = FileCache(root=tmp / f"cache-{name}")
                first, cold, n = _epoch(UCVolumeDataset(path, cache=cache))
                _, warm, _ = _epoch(UCVolumeDataset(path, cache=cache))
                rows += [
                    (f"{name}: first item (cold)", f"{first:.2f} s"),
                    (f"{name}: cold epoch", f"{n / cold:,.0f} files/s ({cold:.1f} s)"),
                    (f"{name}: warm epoch (new dataset object)", f"{n / warm:,.0f} files/s"),
                ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.files:,} files x {args.size_kib} KiB, slowfs at {lat:g} ms per request\n")
    print("| measure | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    sys.exit(main())
