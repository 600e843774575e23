"""The warm hot path, side by side in one run: a bare read loop over the cached files vs the same
files through ``iter(UCVolumeDataset)``, the default ``DataLoader`` and ``DataLoader(num_workers=0)``,
and (``--packed``) the same folder packed into shards, read warm as bytes by offset.

No FUSE, no latency: the folder is on an embedded volume and fully cached before the first rep, so
what is left is each layer's own cost per item. Every row reads every file (``open().read()`` of
the yielded path, as a training loop does); reps are interleaved and the table gives medians with
(min-max) and the ratio to the bare loop measured in the same rep. ``CPU us/hit``: process CPU of a
loop over ``iter(dataset)`` that does not read (the dataset's own work per warm hit).

    .venv/bin/python benchmarks/bench_hotpath.py [--files 3000] [--size-kib 150] [--reps 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import table  # noqa: E402

FOLDER = "/Volumes/main/bench/hot/train"
PACKED = "/Volumes/main/bench/hot/packed"


def _seed(home: Path, files: int, size: int) -> None:
    from air_magics.volumes.store import VolumeStore

    store = VolumeStore()
    store.create("main.bench.hot")
    root = Path(store.locate(FOLDER).path)
    root.mkdir(parents=True, exist_ok=True)
    block = os.urandom(size)
    for i in range(files):
        (root / f"{i:06d}.bin").write_bytes(i.to_bytes(4, "big") + block[4:])


def _read_all(paths) -> int:
    n = 0
    for p in paths:
        with open(p, "rb") as f:
            n += len(f.read())
    return n


def _byte_items(items) -> int:
    return sum(len(b) for b in items)


def _loader_paths(loader):
    for batch in loader:
        yield from batch if isinstance(batch, list) else [batch]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--size-kib", type=int, default=150)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--packed", action="store_true", help="also the packed folder, warm, output='bytes'")
    ap.add_argument("--quick", action="store_true", help="smoke test: 200 files of 16 KiB, 1 rep")
    ap.add_argument("--no-wait", action="store_true", help="accepted for the suite's runner (this bench never waits)")
    a = ap.parse_args(argv)
    if a.quick:
        a.files, a.size_kib, a.reps = 200, 16, 1
    home = Path(tempfile.mkdtemp(prefix="air-bench-hot-"))
    os.environ["AIR_HOME"] = str(home)
    os.environ.setdefault("AIR_VOLUMES_MOUNT", str(home / "no-mount"))
    try:
        return _run(a, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _run(a: argparse.Namespace, home: Path) -> int:
    from air_magics.data import DataLoader, UCVolumeDataset

    _seed(home, a.files, a.size_kib << 10)
    ds = UCVolumeDataset(FOLDER)
    cached = list(ds)  # cold: fills the cache (the slots are the bare loop's files)
    assert len(cached) == a.files
    dl_default = DataLoader(ds)
    dl_zero = DataLoader(ds, num_workers=0)
    _read_all(_loader_paths(dl_default))  # workers started and warm
    names = ["bare", "dataset", "default", "zero"]
    loops = {
        "bare": lambda: _read_all(cached),
        "dataset": lambda: _read_all(iter(ds)),
        "default": lambda: _read_all(_loader_paths(dl_default)),
        "zero": lambda: _read_all(_loader_paths(dl_zero)),
    }
    if a.packed:
        from air_magics.shards import pack

        pack(FOLDER, PACKED, shard_size="64MiB")
        packed = UCVolumeDataset(PACKED, output="bytes")
        assert _byte_items(packed) == a.files * (a.size_kib << 10)  # cold: the shards cached
        packed_dl = DataLoader(packed)  # the default collate: the workers send slices, read here
        assert _byte_items(_loader_paths(packed_dl)) == a.files * (a.size_kib << 10)  # workers started
        names += ["packed", "packed_dl"]
        loops["packed"] = lambda: _byte_items(packed)
        loops["packed_dl"] = lambda: _byte_items(_loader_paths(packed_dl))
    rows: dict[str, list[float]] = {k: [] for k in names}
    ratios: dict[str, list[float]] = {k: [] for k in names if k != "bare"}
    cpu: list[float] = []
    for rep in range(a.reps):
        t = {}
        for name in names:
            t0 = time.perf_counter()
            n = loops[name]()
            t[name] = time.perf_counter() - t0
            assert n == a.files * (a.size_kib << 10), (name, n)
            rows[name].append(a.files / t[name])
        for name in ratios:
            ratios[name].append(t["bare"] / t[name])
        c0 = time.process_time()
        k = sum(1 for _ in ds)
        cpu.append((time.process_time() - c0) / k * 1e6)
        print(f"rep {rep + 1}: " + "  ".join(f"{k} {a.files / v:,.0f}/s" for k, v in t.items()), flush=True)

    def med(xs: list[float], spec: str) -> str:
        return f"{statistics.median(xs):{spec}} ({min(xs):{spec}}-{max(xs):{spec}})"

    label = {
        "bare": "bare read loop over the cached files",
        "dataset": "iter(UCVolumeDataset)",
        "default": "DataLoader(ds) defaults",
        "zero": "DataLoader(ds, num_workers=0)",
        "packed": "iter(UCVolumeDataset(packed, output='bytes'))",
        "packed_dl": "DataLoader(UCVolumeDataset(packed, output='bytes')) defaults",
    }
    body = [[label[k], med(rows[k], ",.0f"), med(ratios[k], ".2f") if k in ratios else "1.00"] for k in names]
    print()
    print(f"{a.files} x {a.size_kib} KiB, fully cached, embedded volume, {a.reps} interleaved reps, medians (min-max)")
    print(table(["loop", "files/s", "x bare loop"], body))
    print(f"\nprocess CPU per warm hit (iter(dataset), no read): {med(cpu, '.1f')} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
