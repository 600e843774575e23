"""Warm after a restart (issue 24): a new process over a warm cache vs the second epoch of one process.

A folder of small files on the project's FUSE tool (``benchmarks/harness/fusevol.py``, C engine, the
same latency on every request) is read once to fill the cache. Then each measurement runs in its own
interpreter on a fresh mount (no attributes in the kernel's cache) over that warm cache:

* **new process**: construct the dataset (the listing) and iterate it once, the consumer reading every
  yielded file: what a restarted kernel pays, validation of every cached file included;
* **same process**: a second epoch over the same dataset in that interpreter (validated moments ago);
* **floor**: a fresh interpreter that lists the folder, stats every file 128-wide and reads the cached
  copies: what any correct new process pays when it asks the volume once per file (no index, no pins).

Both for ``iter(dataset)`` and the default ``DataLoader(ds)``. Volume requests per file come from the
FUSE tool's counters (every request kind but ``release``), read in the child between the epochs. Reps
are interleaved (floor, dataset, loader, floor, ...); the table gives medians with (min-max), new/same
measured in the same interpreter and new/floor in the same rep. For ``iter(dataset)`` the child also
reports the validation's own numbers (``ds.validation``: files revalidated, requests, seconds).

    .venv/bin/python benchmarks/bench_restart.py [--files 1200] [--size-kib 100] [--latency-ms 10] [--reps 3]
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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.mounts import REPO, fuse_unavailable, read_stats, requests, slow_volume  # noqa: E402
from benchmarks.harness.report import table  # noqa: E402

REL = "main/bench/restart/train"
FOLDER = f"/Volumes/{REL}"
_SETTLE = 0.6  # fusevol rewrites its counters every 0.25 s


def _seed(root: Path, files: int, size: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    block = os.urandom(size)
    for i in range(files):
        (root / f"{i:06d}.bin").write_bytes(i.to_bytes(4, "big") + block[4:])


# -- the child: one interpreter, one fresh mount ----------------------------------------------------------
def _paths(it):
    for x in it:
        yield from x if isinstance(x, list) else [x]


def _epoch(make, stats: str) -> dict:
    before = requests(read_stats(stats)["ops"])
    t0 = time.perf_counter()
    it = make()
    t1 = time.perf_counter()
    n = nbytes = 0
    for p in _paths(it):
        with open(p, "rb") as f:
            nbytes += len(f.read())
        n += 1
    seconds = time.perf_counter() - t0
    time.sleep(_SETTLE)
    got = requests(read_stats(stats)["ops"]) - before
    return {"items": n, "bytes": nbytes, "seconds": seconds, "setup": t1 - t0, "requests": got}


def _bare(folder: str, cache_files: str, threads: int) -> Iterator[str]:
    """The floor of any correct new-process epoch: list the folder, ask every file's version
    *threads*-wide, then read the cached copies (no index, no pins, no checks)."""
    names = sorted(os.listdir(folder))
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda n: os.stat(f"{folder}/{n}"), names))
    return (f"{cache_files}/{n}" for n in names)


def _validation(ds) -> dict | None:
    v = getattr(ds, "validation", None)
    if v is None:
        return None
    return {"revalidated": v.revalidated, "requests": v.requests, "valid": v.valid, "seconds": v.seconds}


def child(spec: dict) -> dict:
    """Epoch 1 (construct + iterate: the new process) and epoch 2 (the same process) of *spec*'s mode."""
    from air_magics.cache import FileCache
    from air_magics.data import DataLoader, UCVolumeDataset

    if spec["mode"] == "bare":
        time.sleep(_SETTLE)
        cache = FileCache()
        folder, files = f"{os.environ['AIR_VOLUMES_MOUNT']}/{REL}", cache.slot(FOLDER)
        return {"new": _epoch(lambda: _bare(folder, files, spec["threads"]), spec["stats"]), "same": None}
    if spec["mode"] == "loader":
        import torch  # noqa: F401  (imported before the clock starts, as a training script has)
    time.sleep(_SETTLE)  # the mount's counters from before this child are written
    holder: dict = {}

    def first():
        ds = holder["ds"] = UCVolumeDataset(FOLDER)
        if spec["mode"] == "dataset":
            return iter(ds)
        holder["dl"] = DataLoader(ds)
        return iter(holder["dl"])

    def again():
        return iter(holder["ds"]) if spec["mode"] == "dataset" else iter(holder["dl"])

    before = FileCache().info()
    new = _epoch(first, spec["stats"])
    new["validation"] = _validation(holder["ds"])
    after = holder["ds"].cache.info()
    new["hits"], new["misses"] = after.hits - before.hits, after.misses - before.misses
    same = _epoch(again, spec["stats"])
    same["validation"] = _validation(holder["ds"])
    return {"new": new, "same": same}


# -- the parent ---------------------------------------------------------------------------------------------
def _run_child(work: Path, mode: str, a: argparse.Namespace, name: str) -> dict:
    stats = work / f"stats-{name}.json"
    spec = {"mode": mode, "stats": str(stats), "threads": a.bare_threads}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(REPO), AIR_HOME=str(work / "home"), AIR_VOLUMES_MOUNT=str(work / "mnt"))
    os.sync()
    with slow_volume(work / "backing", work / "mnt", stats, latency_ms=a.latency_ms, read_ms=a.latency_ms):
        p = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_restart", "--child", json.dumps(spec)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=900,
        )
    if p.returncode != 0:
        raise SystemExit(f"{name} failed:\n{p.stderr[-3000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    for ep in (out["new"], out["same"]):
        if ep is not None and (ep["items"] != a.files or ep["bytes"] != a.files * (a.size_kib << 10)):
            raise SystemExit(f"{name}: an epoch read {ep['items']} files, {ep['bytes']} bytes; expected {a.files}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1200)
    ap.add_argument("--size-kib", type=int, default=100)
    ap.add_argument("--latency-ms", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--modes", default="bare,dataset,loader")
    ap.add_argument("--bare-threads", type=int, default=128, help="requests in flight of the bare floor's stats")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return 0
    if why := fuse_unavailable():
        print(f"bench_restart skipped: {why}")
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    try:
        return _measure(a, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _measure(a: argparse.Namespace, work: Path) -> int:
    modes = a.modes.split(",")
    _seed(work / "backing" / REL, a.files, a.size_kib << 10)
    (work / "mnt").mkdir()
    cold = _run_child(work, "dataset", a, "fill")  # fills the cache: its "new process" epoch is cold
    print(f"fill (cold) {a.files / cold['new']['seconds']:,.0f} files/s", flush=True)
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for rep in range(a.reps):
        for mode in modes:
            out = _run_child(work, mode, a, f"{mode}-{rep}")
            runs[mode].append(out)
            new, same, v = out["new"], out["same"], out["new"].get("validation")
            line = f"rep {rep + 1} {mode}: new {a.files / new['seconds']:,.0f}/s ({new['requests'] / a.files:.2f} req/file)"
            if same is not None:
                line += f", hits {new['hits']} misses {new['misses']}, same {a.files / same['seconds']:,.0f}/s"
            if v:
                line += f"; validation {v['revalidated']} files, {v['requests']} requests, {v['seconds']:.2f} s"
            print(line, flush=True)
    print()
    print(
        f"{a.files:,} files x {a.size_kib} KiB, fusevol at {a.latency_ms:g} ms per request, a fresh mount per run, "
        f"{a.reps} interleaved reps, medians (min-max), air_magics {_commit()}"
    )
    print(table(_HEADS, _rows(a, runs)))
    return 0


_HEADS = [
    "loop",
    "same process files/s",
    "new process files/s",
    "new / same",
    "new / floor",
    "new, epoch only files/s",
    "requests/file (new)",
    "cache hits (new)",
    "validation s (new)",
]


def _rows(a: argparse.Namespace, runs: dict[str, list[dict]]) -> list[list[str]]:
    def med(xs: list[float], spec: str) -> str:
        return f"{statistics.median(xs):{spec}} ({min(xs):{spec}}-{max(xs):{spec}})" if xs else "-"

    label = {
        "bare": f"floor: listdir + {a.bare_threads}-wide stat + read cached copies",
        "dataset": "iter(UCVolumeDataset)",
        "loader": "DataLoader(ds) defaults",
    }
    body = []
    floor = [o["new"]["seconds"] for o in runs.get("bare", [])]
    for mode, outs in runs.items():
        new = [o["new"] for o in outs]
        same = [o["same"] for o in outs if o["same"] is not None]
        vs = [ep["validation"]["seconds"] for ep in new if ep.get("validation")]
        body.append(
            [
                label[mode],
                med([a.files / ep["seconds"] for ep in same], ",.0f"),
                med([a.files / ep["seconds"] for ep in new], ",.0f"),
                med([s["seconds"] / n["seconds"] for s, n in zip(same, new, strict=False)], ".2f"),
                med([f / n["seconds"] for f, n in zip(floor, new, strict=False)], ".2f") if mode != "bare" else "1.00",
                med([a.files / (ep["seconds"] - ep["setup"]) for ep in new], ",.0f") if mode != "bare" else "-",
                med([ep["requests"] / a.files for ep in new], ".2f"),
                med([ep["hits"] for ep in new if "hits" in ep], ",.0f"),
                med(vs, ".2f") if vs else ("in the workers" if mode == "loader" else "-"),
            ]
        )
    return body


def _commit() -> str:
    p = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return p.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
