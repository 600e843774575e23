"""Many files: listing, first item, memory and ``%air_volume ls -r`` as the file count grows (issue 35).

Each size is a folder of small files (1 KiB, 100 per folder, two levels of folders) on an embedded
volume on local disk (no latency: what is measured is our own per-file cost). Every measurement
runs in a fresh process (imports excluded from the clock), interleaved over ``--reps``:

- ceiling ``os.walk``: ``os.walk`` + join + sort of the same folder (the file system's speed);
- ceiling for ``ls``: ``os.scandir`` + ``stat`` of every file (what a listing with sizes costs);
- ``UCVolumeDataset`` listing: construction + ``len()`` (every name collected and sorted);
- first item, ``shuffle=False`` and ``shuffle=True``: construction to the first path yielded;
- dataset memory: the process's RSS after the listing minus before, per file, and the size of
  the file list pickled (what each DataLoader worker receives);
- ``%air_volume ls -r``: the magic in an IPython shell, its result's text made.

With ``--epochs`` (always in ``--quick``), per size and each in a fresh process: the ceiling, a
plain 64-thread pool copying every file (``os.walk`` + ``shutil.copyfile``); a cold epoch of
``UCVolumeDataset(folder)`` into a fresh cache, then a warm one in that process, another once its
pins have aged (``pin_seconds / 4`` after the last hand-out: each entry re-pinned), the JSON size of
``state_dict()`` half way through a third and the cache index's size; a restart epoch (a new
process over the warm cache); eviction of half the cache (a limit of half its bytes, then one
miss); ``pack`` into 1 GiB shards. One rep at a million files (minutes each).

Run: ``.venv/bin/python benchmarks/bench_scale.py [--sizes 10000,100000] [--reps 3] [--epochs]``
(``--sizes 10000,100000,1000000`` for the million; making it takes minutes and ~4 GB of disk,
~12 GB with ``--epochs``). Prints a table per size and the per-file growth from the smallest size
to the largest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
VOLUME = "main.scale.v"
WORKER_ITEMS = 20_000  # items the workers' measurement reads after the first batch
PER_FOLDER = 100

METHODS = {
    "walk": "ceiling: `os.walk` + join + sort",
    "walk_stat": "ceiling for `ls`: `os.scandir` + `stat` of every file",
    "list": "`UCVolumeDataset` listing (construct + `len`)",
    "first": "first item, `shuffle=False`",
    "first_shuffled": "first item, `shuffle=True`",
    "ls": "`%air_volume ls -r` (and its text)",
}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(spec: dict) -> dict:
    """One measurement in this (fresh) process."""
    method, folder, vpath = spec["method"], spec["folder"], spec["vpath"]
    if method == "walk":
        t = time.perf_counter()
        names = sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs)
        return {"s": time.perf_counter() - t, "n": len(names)}
    if method == "walk_stat":
        t = time.perf_counter()
        n, nbytes, stack = 0, 0, [folder]
        while stack:
            with os.scandir(stack.pop()) as it:
                for de in it:
                    if de.is_dir(follow_symlinks=False):
                        stack.append(de.path)
                    else:
                        n, nbytes = n + 1, nbytes + de.stat(follow_symlinks=False).st_size
        return {"s": time.perf_counter() - t, "n": n}
    if method == "ls":
        from IPython.core.interactiveshell import InteractiveShell

        ip = InteractiveShell.instance()
        ip.run_line_magic("load_ext", "air_magics")
        t = time.perf_counter()
        res = ip.run_line_magic("air_volume", f"ls -r {vpath}")
        text = repr(res)
        return {"s": time.perf_counter() - t, "n": len(getattr(res, "files", [])), "lines": text.count("\n") + 1}
    if method == "workers":
        return _workers(vpath)
    if method in EPOCHS:
        return EPOCHS[method](spec)
    from air_magics.data import UCVolumeDataset

    before = _rss()
    t = time.perf_counter()
    ds = UCVolumeDataset(vpath, shuffle=method == "first_shuffled", seed=0)
    if method == "list":
        n = len(ds)
        s, rss = time.perf_counter() - t, _rss() - before
        import pickle

        # what each DataLoader worker receives (and keeps: no object per file, so reading it does
        # not grow the worker by copy-on-read)
        return {"s": s, "n": n, "rss": rss, "pickled": len(pickle.dumps(ds.files)), "kind": type(ds.files).__name__}
    first = next(iter(ds))
    s = time.perf_counter() - t
    assert os.path.exists(first), first
    return {"s": s, "n": None}


def _workers(vpath: str) -> dict:
    """Each DataLoader worker's unique memory (USS: pages no other process shares) after its first
    batch and after the loader has read up to ``WORKER_ITEMS`` items (half the epoch at most): what reading the file list
    costs a worker (a list of one object per file grows by copy-on-read as its items are touched)."""
    import psutil

    from air_magics.data import DataLoader, UCVolumeDataset

    ds = UCVolumeDataset(vpath, shuffle=True, seed=0)
    it = iter(DataLoader(ds, batch_size=256, num_workers=2))
    next(it)

    def uss() -> list[int]:
        return [c.memory_full_info().uss for c in psutil.Process().children()]

    first, read, target = uss(), 256, min(WORKER_ITEMS, len(ds) // 2)  # stopped mid-epoch: workers alive
    for batch in it:
        read += len(batch)
        if read >= target:
            break
    return {"s": 0.0, "n": None, "uss_first": sorted(first), "uss_after": sorted(uss()), "read": read}


def _epochs(spec: dict) -> dict:
    """A fresh cache: the cold epoch (listing included), then a warm one in the same process, the
    size of ``state_dict()`` half way through a third, and the cache index's size afterwards."""
    from air_magics.cache import FileCache
    from air_magics.data import UCVolumeDataset

    t = time.perf_counter()
    ds = UCVolumeDataset(spec["vpath"], cache=FileCache(pin_seconds=spec["pin"]))
    n = sum(1 for _ in ds)
    cold = time.perf_counter() - t
    t = time.perf_counter()
    assert sum(1 for _ in ds) == n
    warm = time.perf_counter() - t
    # past pin_seconds / 4 since the last hand-out: every entry is re-pinned in the index before it
    # is served again (what every epoch longer than that pays, at any size: the warm epoch's regime
    # at 100k files and more, where the cold epoch itself outlasts it)
    time.sleep(ds.cache.pin_seconds / 4 + 0.5)
    t = time.perf_counter()
    assert sum(1 for _ in ds) == n
    aged = time.perf_counter() - t
    it = iter(ds)
    for _ in range(n // 2):
        next(it)
    state = len(json.dumps(ds.state_dict()))
    ds.cache.info()  # (the index rows are written behind the fetches: all in before it is measured)
    index = sum(p.stat().st_size for p in Path(ds.cache.root).glob("index.sqlite*"))
    return {"s": cold, "n": n, "cold": cold, "warm": warm, "aged": aged, "state": state, "index": index}


def _restart(spec: dict) -> dict:
    """A new process over the warm cache: every file validated, none fetched."""
    from air_magics.data import UCVolumeDataset

    t = time.perf_counter()
    n = sum(1 for _ in UCVolumeDataset(spec["vpath"]))
    return {"s": time.perf_counter() - t, "n": n}


def _evict(spec: dict) -> dict:
    """The full cache given a limit of half its bytes: the next miss evicts half the entries."""
    from air_magics.cache import FileCache

    cache = FileCache(pin_seconds=0.0)
    before = cache.info()
    cache.limit = max(1, before.bytes // 2)
    t = time.perf_counter()
    cache.get(spec["extra"])
    s = time.perf_counter() - t
    evicted = before.entries - cache.info().entries + 1
    return {"s": s, "n": None, "evicted": evicted}


def _pool(spec: dict) -> dict:
    """Ceiling for the cold epoch: ``os.walk`` the folder and copy every file to local disk with a
    plain 64-thread pool (``shutil.copyfile``), into a fresh folder."""
    from concurrent.futures import ThreadPoolExecutor

    dst = Path(spec["scratch"])
    t = time.perf_counter()
    jobs = []
    for d, _, fs in os.walk(spec["folder"]):
        out = dst / os.path.relpath(d, spec["folder"])
        out.mkdir(parents=True, exist_ok=True)
        jobs += [(os.path.join(d, f), str(out / f)) for f in fs]
    with ThreadPoolExecutor(64) as pool:
        for _ in pool.map(lambda job: shutil.copyfile(*job), jobs, chunksize=64):
            pass
    s = time.perf_counter() - t
    shutil.rmtree(dst, ignore_errors=True)
    return {"s": s, "n": len(jobs)}


def _pack(spec: dict) -> dict:
    """``pack`` of the folder into 1 GiB shards beside it (removed afterwards)."""
    from air_magics.shards import pack

    dest = spec["vpath"] + "_packed"
    t = time.perf_counter()
    report = pack(spec["vpath"], dest)
    s = time.perf_counter() - t
    from air_magics.volumes import VolumeStore

    shutil.rmtree(VolumeStore().locate(dest).path, ignore_errors=True)
    return {"s": s, "n": report.files}


EPOCHS = {"epochs": _epochs, "restart": _restart, "evict": _evict, "pool": _pool, "pack": _pack}
EPOCH_ROWS = {
    "pool": "ceiling: `os.walk` + 64-thread pool copying every file",
    "cold": "cold epoch (`for p in UCVolumeDataset(folder)`, listing included)",
    "warm": "warm epoch, same process, right after the cold one",
    "aged": "warm epoch, same process, its pins aged (`pin_seconds / 4` since the last)",
    "restart": "restart epoch: a new process over the warm cache",
    "pack": "`pack` into 1 GiB shards",
    "evict": "eviction at a limit of half (the next miss; per evicted file)",
}


def make(root: Path, n: int) -> None:
    """*n* files of 1 KiB under *root*, 100 per folder, two levels of folders (``bench_scale_fuse`` too)."""
    data = b"x" * 1024
    for i in range(0, n, PER_FOLDER):
        d = root / f"d{i // 10_000:03d}" / f"e{(i // PER_FOLDER) % 100:02d}"
        d.mkdir(parents=True, exist_ok=True)
        for j in range(i, min(n, i + PER_FOLDER)):
            with open(d / f"f{j:07d}.bin", "wb") as f:
                f.write(data)


def measure(spec: dict, env: dict) -> dict:
    """``child(spec)`` in a fresh interpreter with *env*: its result."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)], env=env, capture_output=True, text=True, timeout=1800
    )
    if out.returncode != 0:
        raise RuntimeError(f"{spec['method']} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="file counts, comma-separated")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 2,000 files, one rep")
    ap.add_argument(
        "--epochs",
        action="store_true",
        help="also the cold, warm and restart epochs, pack and eviction (minutes at 1M)",
    )
    ap.add_argument("--no-wait", action="store_true", help="accepted for the suite's runner (never waits anyway)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return 0
    sizes = [2000] if a.quick else [int(s) for s in a.sizes.split(",")]
    reps = 1 if a.quick else a.reps
    work = Path(tempfile.mkdtemp(prefix="air-bench-scale-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AIR_VOLUMES_MOUNT")}
    env.update(AIR_HOME=str(work / "home"), AIR_VOLUMES_ROOT=str(work / "volumes"))
    os.environ.update(AIR_HOME=env["AIR_HOME"], AIR_VOLUMES_ROOT=env["AIR_VOLUMES_ROOT"])
    os.environ.pop("AIR_VOLUMES_MOUNT", None)
    from air_magics.volumes import VolumeStore

    store = VolumeStore()
    store.create(VOLUME)
    results: dict[int, dict[str, list[dict]]] = {}
    bad = 0
    try:
        for n in sizes:
            vpath = f"/Volumes/{VOLUME.replace('.', '/')}/n{n}"
            folder = Path(store.locate(vpath).path)
            t = time.perf_counter()
            make(folder, n)
            print(f"{n:,} files made in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            results[n] = {m: [] for m in [*METHODS, "workers"]}
            for rep in range(reps):
                for m in [*METHODS, "workers"]:
                    r = measure({"method": m, "folder": str(folder), "vpath": vpath}, env)
                    if r.get("n") is not None and r["n"] != n:
                        print(f"**wrong count**: {m} saw {r['n']} files of {n}", file=sys.stderr)
                        bad += 1
                    results[n][m].append(r)
                    shutil.rmtree(work / "home" / "cache", ignore_errors=True)  # every first item is cold
                print(f"{n:,} files: rep {rep + 1}/{reps} done", file=sys.stderr)
            if a.epochs or a.quick:
                pin = 4.0 if a.quick else 30.0
                _epoch_reps(results[n], folder, vpath, env, work, reps if n < 1_000_000 else 1, pin)
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _report(results, reps)
    return 1 if bad else 0


def _epoch_reps(
    by: dict[str, list[dict]], folder: Path, vpath: str, env: dict, work: Path, reps: int, pin: float
) -> None:
    """The epochs' measurements (one rep at a million files: minutes each), in this order: the
    pool; a cold then warm epoch; a restart; eviction of half the cache; ``pack``."""
    extra = f"/Volumes/{VOLUME.replace('.', '/')}/extra.bin"
    # the default pin_seconds (30 s); a smoke run's pins age in 1 s
    spec = {"folder": str(folder), "vpath": vpath, "extra": extra, "scratch": str(work / "pool-copy"), "pin": pin}
    with open(Path(folder).parents[0] / "extra.bin", "wb") as f:
        f.write(b"e" * 1024)
    for m in [*EPOCHS, "state", "index", "cold", "warm", "aged"]:
        by.setdefault(m, [])
    for _ in range(reps):
        shutil.rmtree(work / "home" / "cache", ignore_errors=True)
        for m in EPOCHS:
            r = measure({**spec, "method": m}, env)
            if m == "epochs":
                for k in ("cold", "warm", "aged", "state", "index"):
                    by[k].append({"s": r[k], "n": r["n"]} if k in ("cold", "warm", "aged") else {k: r[k]})
            else:
                by[m].append(r)
            print(f"  {m}: {r['s']:.1f} s", file=sys.stderr)
    shutil.rmtree(work / "home" / "cache", ignore_errors=True)


def _report_epochs(results: dict[int, dict[str, list[dict]]]) -> None:
    """One table of the epochs' per-file costs at every size, and their growth."""
    sizes = [n for n, by in sorted(results.items()) if by.get("cold")]
    if not sizes:
        return
    print("### Epochs, `pack` and eviction (us per file; x: the pool ceiling's cost / ours, 1.00 = as fast)\n")
    print("| method | " + " | ".join(f"{n:,}" for n in sizes) + f" | {sizes[-1]:,} / {sizes[0]:,} |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for m, label in EPOCH_ROWS.items():
        cells, per = [], []
        for n in sizes:
            runs = results[n].get(m, [])
            if not runs:
                cells.append("-")
                continue
            count = n if m != "evict" else statistics.median(r["evicted"] for r in runs)
            us = statistics.median(r["s"] for r in runs) / max(count, 1) * 1e6
            pool = statistics.median(r["s"] for r in results[n]["pool"]) / n * 1e6
            per.append(us)
            cells.append(f"{us:,.1f}" + (f" ({pool / us:.2f}x)" if m in ("cold", "pack") else ""))
        growth = f"{per[-1] / per[0]:.2f}" if len(per) > 1 else "-"
        print(f"| {label} | {' | '.join(cells)} | {growth} |")
    for key, label in (("state", "`state_dict()` half way, JSON bytes"), ("index", "cache index bytes per file")):
        vals = [statistics.median(r[key] for r in results[n][key]) for n in sizes]
        shown = [f"{v:,.0f}" if key == "state" else f"{v / n:,.0f}" for v, n in zip(vals, sizes, strict=True)]
        print(f"| {label} | {' | '.join(shown)} | - |")
    print()


def _report(results: dict[int, dict[str, list[dict]]], reps: int) -> None:
    print(f"## bench_scale: many small files on an embedded volume on local disk ({reps} rep(s), medians)\n")
    per_file: dict[str, dict[int, float]] = {m: {} for m in METHODS}
    for n, by in results.items():
        walk = statistics.median(r["s"] for r in by["walk"])
        print(f"### {n:,} files\n")
        print("| method | s (min-max) | us per file | x walk | memory B/file |")
        print("|---|---|---|---|---|")
        for m, label in METHODS.items():
            secs = [r["s"] for r in by[m]]
            s = statistics.median(secs)
            per_file[m][n] = s / n
            rss = [r["rss"] for r in by[m] if "rss" in r]
            mem = f"{statistics.median(rss) / n:,.0f}" if rss else "-"
            print(
                f"| {label} | {s:.3f} ({min(secs):.3f}-{max(secs):.3f}) | {s / n * 1e6:,.1f} | {s / walk:.2f}x | {mem} |"
            )
        pickled = [r["pickled"] for r in by["list"] if "pickled" in r]
        if pickled:
            kind = by["list"][0].get("kind", "?")
            print(
                f"\nThe file list (a `{kind}`) pickles to {statistics.median(pickled) / n:,.0f} B/file for each DataLoader worker."
            )
        lines = [r.get("lines") for r in by["ls"] if r.get("lines")]
        if lines:
            print(f"\n`ls -r` printed {max(lines):,} lines for {n:,} files.")
        print()
    _report_workers(results)
    _report_epochs(results)
    if len(results) > 1:
        lo, hi = min(results), max(results)
        print(f"### Growth from {lo:,} to {hi:,} files (per-file cost ratio; 1.00 = linear)\n")
        print("| method | " + " | ".join(f"us/file at {n:,}" for n in sorted(results)) + f" | {hi:,} / {lo:,} |")
        print("|---|" + "---|" * len(results) + "---|")
        for m, label in METHODS.items():
            cells = " | ".join(f"{per_file[m][n] * 1e6:,.1f}" for n in sorted(results))
            print(f"| {label} | {cells} | {per_file[m][hi] / per_file[m][lo]:.2f} |")


def _report_workers(results: dict[int, dict[str, list[dict]]]) -> None:
    """Each worker's unique memory after its first batch and after reading more (medians over reps
    and the two workers): growth per item read, and per listed file between the sizes."""
    rows = []
    for n, by in sorted(results.items()):
        runs = [r for r in by.get("workers", []) if r.get("uss_first")]
        if not runs:
            continue
        first = statistics.median(u for r in runs for u in r["uss_first"])
        after = statistics.median(u for r in runs for u in r["uss_after"])
        read = statistics.median(r["read"] - 256 for r in runs)
        rows.append((n, first, after, read))
    if not rows:
        return
    print("### DataLoader workers (2, `shuffle=True`): unique memory (USS) of each\n")
    print("| files | after its first batch | after the loader read N more items | growth per item read |")
    print("|---|---|---|---|")
    for n, first, after, read in rows:
        print(
            f"| {n:,} | {first / 2**20:,.1f} MiB | {after / 2**20:,.1f} MiB (N = {read:,.0f}) | {(after - first) / max(read, 1):,.0f} B |"
        )
    if len(rows) > 1:
        (n0, f0, _, _), (n1, f1, _, _) = rows[0], rows[-1]
        print(
            f"\nFrom {n0:,} to {n1:,} files a worker's first-batch USS grows by {(f1 - f0) / (n1 - n0):,.0f} B per listed file."
        )
    print()


if __name__ == "__main__":
    sys.exit(main())
