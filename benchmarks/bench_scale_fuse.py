"""Many small files on a slow FUSE volume (issue 35): listing, first item, ``ls -r`` and the epochs
against the plain ceilings, on the same mount.

The files of ``bench_scale`` (1 KiB, 100 per folder, two levels of folders) in a fusevol volume (C
engine, the same latency on every request), reached as ``/Volumes/...`` through
``AIR_VOLUMES_MOUNT``. Every measurement is ``bench_scale``'s own, in its own interpreter on a
fresh mount (no attributes in the kernel's cache):

- ceiling ``os.walk`` + join + sort through the mount; the ``UCVolumeDataset`` listing; the first
  item with ``shuffle=False`` and ``shuffle=True`` (empty cache); ``%air_volume ls -r``;
- ceiling for the cold epoch: ``os.walk`` + a 64-thread pool copying every file to local disk;
- the cold epoch of ``for p in UCVolumeDataset(folder)`` into an empty cache, then a warm one in
  that process and another once its pins have aged (``pin_seconds / 4`` later);
- restart: a new process over the warm cache (every cached file checked against the volume).

Run: ``.venv/bin/python benchmarks/bench_scale_fuse.py [--files 100000] [--latency-ms 10] [--reps 1]``
(100,000 files at 10 ms: ~10 minutes a rep). Prints one table.
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

from benchmarks import bench_scale as scale  # noqa: E402
from benchmarks.harness.mounts import fuse_unavailable, slow_volume  # noqa: E402

REL = "main/scale/v/fuse"
LISTING = ("walk", "list", "first", "first_shuffled", "ls")
ROWS = {
    **{m: scale.METHODS[m] for m in LISTING},
    "pool": scale.EPOCH_ROWS["pool"],
    "cold": scale.EPOCH_ROWS["cold"],
    "warm": scale.EPOCH_ROWS["warm"],
    "aged": scale.EPOCH_ROWS["aged"],
    "restart": scale.EPOCH_ROWS["restart"],
}


def _one(method: str, spec: dict, env: dict, work: Path, latency: float) -> dict:
    """*method* of ``bench_scale.child`` in a fresh interpreter on a fresh mount."""
    with slow_volume(work / "backing", work / "mnt", work / "stats.json", latency_ms=latency, read_ms=latency):
        return scale.measure({**spec, "method": method}, env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--latency-ms", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1,000 files at 2 ms, one rep")
    ap.add_argument("--no-wait", action="store_true", help="accepted for the suite's runner (never waits anyway)")
    a = ap.parse_args(argv)
    if why := fuse_unavailable():
        print(f"bench_scale_fuse skipped: {why}")
        return 0
    n, latency, reps = (1000, 2.0, 1) if a.quick else (a.files, a.latency_ms, a.reps)
    work = Path(tempfile.mkdtemp(prefix="air-bench-scale-fuse-"))
    try:
        return _measure(n, latency, reps, 4.0 if a.quick else 30.0, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _measure(n: int, latency: float, reps: int, pin: float, work: Path) -> int:
    t = time.perf_counter()
    scale.make(work / "backing" / REL, n)
    print(f"{n:,} files made in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    (work / "mnt").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AIR_VOLUMES_ROOT")}
    env.update(AIR_HOME=str(work / "home"), AIR_VOLUMES_MOUNT=str(work / "mnt"))
    spec = {
        "folder": str(work / "mnt" / REL),
        "vpath": f"/Volumes/{REL}",
        "scratch": str(work / "pool-copy"),
        "pin": pin,
    }
    runs: dict[str, list[dict]] = {m: [] for m in ROWS}
    cache = work / "home" / "cache"
    bad = 0
    for rep in range(reps):
        for m in (*LISTING, "pool", "epochs", "restart"):
            if m != "restart":
                shutil.rmtree(cache, ignore_errors=True)  # every first item and cold epoch is cold
            r = _one(m, spec, env, work, latency)
            if r.get("n") is not None and r["n"] != n:
                print(f"**wrong count**: {m} saw {r['n']} files of {n}", file=sys.stderr)
                bad += 1
            if m == "epochs":
                for k in ("cold", "warm", "aged"):
                    runs[k].append({"s": r[k]})
            else:
                runs[m].append(r)
            print(f"  rep {rep + 1} {m}: {r['s']:.1f} s", file=sys.stderr)
    _report(runs, n, latency, reps)
    return 1 if bad else 0


def _report(runs: dict[str, list[dict]], n: int, latency: float, reps: int) -> None:
    print(
        f"## bench_scale_fuse: {n:,} files of 1 KiB on fusevol at {latency:g} ms per request "
        f"({reps} rep(s), medians, a fresh mount per measurement)\n"
    )
    print("| method | s (min-max) | us per file | x ceiling |")
    print("|---|---|---|---|")
    med = {m: statistics.median(r["s"] for r in rs) for m, rs in runs.items() if rs}
    for m, label in ROWS.items():
        if m not in med:
            continue
        secs = [r["s"] for r in runs[m]]
        if m in LISTING:  # the ceiling's time / ours would read upside down for a listing: ours / walk
            x = f"{med[m] / med['walk']:.2f}x the walk"
        elif m in ("cold", "pool"):
            x = f"{med['pool'] / med[m]:.2f}x the pool's speed"
        else:
            x = "-"
        print(f"| {label} | {med[m]:.2f} ({min(secs):.2f}-{max(secs):.2f}) | {med[m] / n * 1e6:,.1f} | {x} |")
    print()


if __name__ == "__main__":
    sys.exit(main())
