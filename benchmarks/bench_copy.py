#!/usr/bin/env python3
"""Benchmark: copying many small files out of a slow FUSE volume.

Compares, on a slowfs volume (../shared/tools/slowfs.py, C engine) with a fixed per-request latency:

  cp        serial ``cp -r SRC DEST``
  recipe    the runtime's recipe ``cd SRC && find . -type f -print0 | xargs -0 -P 256 -I {} cp --parents "{}" DEST``
  pool      a plain ``ThreadPoolExecutor(64)`` running ``os.makedirs(parent, exist_ok=True);
            shutil.copyfile(src, dst)`` over an ``os.walk`` listing
  air-N     ``air_magics.copy(["/Volumes/main/bench/vol/data"], DEST, workers=N)``, run as its two steps
            ``plan_copy`` (listing) + ``copy_files`` so the listing time can be shown; both are timed
  rerun     the same call again on the unchanged destination of the default-workers copy (all skipped)

Every measurement gets a fresh mount (so no method profits from the kernel's 1 s attr/entry cache
or page cache filled by the method before it) and a fresh, empty destination on local disk; the
mount, ``os.sync()`` and the verification are outside the timed region, listing is inside it.
Before each measurement it waits (``--quiet-wait``) until other processes leave the CPUs idle.
Repetitions are interleaved (each rep runs every method once, in an order rotated per rep) and
medians are reported.
Each copy is verified: every expected file present with the right size, nothing extra (no temp
files), and on the first rep a SHA-256 of every file against the source.

    .venv/bin/python benchmarks/bench_copy.py                 # full: 3000 x 150 KiB, 2 and 10 ms, 3 reps
    .venv/bin/python benchmarks/bench_copy.py --quick         # 300 files, 2 ms, 1 rep (about 10 s)
    .venv/bin/python benchmarks/bench_copy.py --latencies 2 --reps 1 --methods recipe,pool,air,rerun

Prints progress on stderr and a markdown report on stdout; ``--json FILE`` saves every measurement.
Needs root (or fuse access), /dev/fuse, fuse3, and gcc + pkg-config + libfuse3-dev for the C engine.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from _common import cpu_busy, load_slowfs  # noqa: E402  (benchmarks/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

VOLUME = ("main", "bench", "vol")  # catalog, schema, volume
TOP = "data"                       # the copied folder: /Volumes/main/bench/vol/data
SUBDIRS_PER_GROUP = 5              # leaf folders sit two levels deep: data/gNN/dM/


# --------------------------------------------------------------------------- data set

def leaf_dirs(folders: int) -> list[str]:
    return [f"g{i // SUBDIRS_PER_GROUP:02d}/d{i % SUBDIRS_PER_GROUP}" for i in range(folders)]


def make_dataset(backing: Path, files: int, folders: int, size: int, seed: int = 0) -> dict[str, str]:
    """Write *files* files of *size* random bytes spread evenly over *folders* leaf folders.

    Returns {relative path below data/: sha256 hex}.
    """
    top = backing.joinpath(*VOLUME, TOP)
    dirs = leaf_dirs(folders)
    rng = random.Random(seed)
    expected: dict[str, str] = {}
    for i in range(files):
        rel = f"{dirs[i % folders]}/f{i:05d}.bin"
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = rng.randbytes(size)
        p.write_bytes(data)
        expected[rel] = hashlib.sha256(data).hexdigest()
    return expected


def verify(dest_top: Path, expected: dict[str, str], size: int, hash_files: bool) -> dict:
    """Compare the copy under *dest_top* with the source: counts of good, missing, wrong and extra files."""
    found: dict[str, int] = {}
    if dest_top.is_dir():
        for root, _dirs, names in os.walk(dest_top):
            for n in names:
                p = os.path.join(root, n)
                found[os.path.relpath(p, dest_top).replace(os.sep, "/")] = os.path.getsize(p)
    missing = [r for r in expected if r not in found]
    wrong_size = [r for r in expected if r in found and found[r] != size]
    extra = [r for r in found if r not in expected]
    bad_hash: list[str] = []
    if hash_files:
        for r, h in expected.items():
            if r in found and found[r] == size:
                with open(dest_top / r, "rb") as f:
                    if hashlib.sha256(f.read()).hexdigest() != h:
                        bad_hash.append(r)
    good = len(expected) - len(missing) - len(wrong_size) - len(bad_hash)
    return {"files_found": len(found), "good": good, "lost": len(expected) - good, "missing": len(missing),
            "wrong_size": len(wrong_size), "bad_hash": len(bad_hash), "extra": len(extra),
            "extra_sample": extra[:5], "hashed": hash_files}


# --------------------------------------------------------------------------- methods
# Each runs inside a fresh mount, is timed as a whole, and returns a dict of details.

def run_cp(src: Path, dest: Path, **_) -> dict:
    p = subprocess.run(["cp", "-r", str(src), str(dest)], capture_output=True, text=True)
    return {"rc": p.returncode, "errors": len(p.stderr.splitlines())}


def run_recipe(src: Path, dest: Path, **_) -> dict:
    # the runtime's recipe verbatim; DEST is the folder the tree lands in (it must exist for cp --parents)
    target = dest / TOP
    target.mkdir()
    cmd = f'cd "{src}" && find . -type f -print0 | xargs -0 -P 256 -I {{}} cp --parents "{{}}" "{target}"'
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    lines = p.stderr.splitlines()
    return {"rc": p.returncode, "errors": len(lines), "file_exists_errors": sum("File exists" in ln for ln in lines),
            "error_sample": lines[:2]}


def run_pool(src: Path, dest: Path, workers: int = 64, **_) -> dict:
    target = dest / TOP

    def one(s: str, d: str) -> None:
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copyfile(s, d)

    errors = 0
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futs = []
        for root, _dirs, names in os.walk(src):
            rel = os.path.relpath(root, src)
            for n in names:
                futs.append(pool.submit(one, os.path.join(root, n), os.path.join(target, rel, n)))
        for f in futs:
            if f.exception() is not None:
                errors += 1
    return {"errors": errors}


def run_air(src: Path, dest: Path, mnt: Path, workers: int | None = None, **_) -> dict:
    # exactly what air_magics.copy() does (plan_copy, then copy_files), split to time the listing
    from air_magics.copy_plan import plan_copy
    from air_magics.transfer import copy_files
    from air_magics.volumes import VolumeStore

    t0 = time.perf_counter()
    plan = plan_copy(["/Volumes/" + "/".join((*VOLUME, TOP))], str(dest), store=VolumeStore(root=mnt))
    t1 = time.perf_counter()
    rep = copy_files(plan.tasks, dest=plan.dest, **({} if workers is None else {"workers": workers}))
    return {"copied": rep.copied, "skipped": rep.skipped, "failed": len(rep.failed), "workers": rep.workers,
            "plan_seconds": t1 - t0, "copy_seconds": rep.seconds, "failed_sample": [f.reason for f in rep.failed[:2]]}


# --------------------------------------------------------------------------- harness


def wait_quiet(limit: float, max_wait: float) -> float:
    """Wait (up to *max_wait* s) until other processes leave the CPUs mostly idle; return the last busy fraction."""
    deadline = time.monotonic() + max_wait
    busy = cpu_busy()
    while busy > limit and time.monotonic() < deadline:
        print(f"  (machine {busy:.0%} busy; waiting for it to calm down)", file=sys.stderr, flush=True)
        time.sleep(2)
        busy = cpu_busy()
    return busy


@dataclass
class Result:
    latency_ms: float
    rep: int
    method: str
    seconds: float
    files: int
    verify: dict
    details: dict
    requests: dict = field(default_factory=dict)
    busy_before: float = 0.0

    @property
    def lost(self) -> int:
        return self.verify["lost"]


class Bench:
    def __init__(self, args, slowfs, work: Path, expected: dict[str, str]):
        self.a, self.slowfs, self.work, self.expected = args, slowfs, work, expected
        self.backing, self.mnt = work / "backing", work / "mnt"
        self.src = self.mnt.joinpath(*VOLUME, TOP)
        self.results: list[Result] = []

    def mount_options(self, latency: float) -> dict:
        read = latency if self.a.read_latency_ms is None else self.a.read_latency_ms
        return dict(op_latency_ms=latency, read_latency_ms=read, engine="c",
                    attr_timeout=self.a.cache_timeout, entry_timeout=self.a.cache_timeout)

    def measure(self, latency: float, rep: int, method: str, fn, dest: Path, fresh: bool = True,
                hash_files: bool = False, **kw) -> Result:
        if fresh:
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
        os.sync()  # no writeback of the previous run's destination during this one
        busy = wait_quiet(self.a.quiet_below, self.a.quiet_wait) if self.a.quiet_wait > 0 else 0.0
        stats = self.work / f"stats-{method}.json"
        stats.unlink(missing_ok=True)
        with self.slowfs.mounted(self.backing, self.mnt, stats=stats, **self.mount_options(latency)):
            t0 = time.perf_counter()
            details = fn(src=self.src, dest=dest, mnt=self.mnt, **kw)
            seconds = time.perf_counter() - t0
        try:
            ops = json.loads(stats.read_text()).get("ops", {})
        except (OSError, ValueError):
            ops = {}
        v = verify(dest / TOP, self.expected, self.a.size_kib * 1024, hash_files)
        r = Result(latency, rep, method, seconds, len(self.expected), v, details, ops, busy)
        self.results.append(r)
        req = sum(n for op, n in ops.items() if op != "release")
        extra = ""
        if "skipped" in details:
            extra = (f" listing={details['plan_seconds']:.2f}s copied={details['copied']} skipped={details['skipped']} "
                     f"failed={details['failed']}")
        print(f"  [{latency:g} ms rep {rep + 1}] {method:<10} {seconds:7.2f} s {len(self.expected) / seconds:8.0f} files/s "
              f"lost={v['lost']} extra={v['extra']} requests/file={req / len(self.expected):.1f} "
              f"busy-before={busy:.0%}{extra}",
              file=sys.stderr, flush=True)
        return r

    def run(self) -> None:
        a = self.a
        methods = a.methods
        blocks = []  # (name, callable) in the base order; rotated per rep
        if "cp" in methods:
            blocks.append("cp")
        if "recipe" in methods:
            blocks.append("recipe")
        if "pool" in methods:
            blocks.append("pool")
        if "air" in methods or "rerun" in methods:
            blocks += [f"air-{w}" for w in a.workers]
        for latency in a.latencies:
            for rep in range(a.reps):
                order = blocks[rep % len(blocks):] + blocks[:rep % len(blocks)]
                for name in order:
                    dest = self.work / "dest"
                    h = rep == 0 and a.hash != "none" or a.hash == "all"
                    if name == "cp":
                        self.measure(latency, rep, "cp", run_cp, dest, hash_files=h)
                    elif name == "recipe":
                        self.measure(latency, rep, "recipe", run_recipe, dest, hash_files=h)
                    elif name == "pool":
                        self.measure(latency, rep, "pool", run_pool, dest, hash_files=h, workers=a.pool_workers)
                    else:
                        w = int(name.split("-")[1])
                        is_default = w == a.default_workers
                        if "air" in methods or is_default:
                            self.measure(latency, rep, name, run_air, dest, hash_files=h,
                                         workers=None if is_default else w)
                        if is_default and "rerun" in methods:
                            self.measure(latency, rep, "rerun", run_air, dest, fresh=False)
                    shutil.rmtree(dest, ignore_errors=True)


# --------------------------------------------------------------------------- report

def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(results: list[Result], args, files: int) -> str:
    out = []
    lat_list = sorted({r.latency_ms for r in results})
    best: dict[float, tuple[str, float]] = {}
    for lat in lat_list:
        rs = [r for r in results if r.latency_ms == lat]
        names = list(dict.fromkeys(r.method for r in rs))
        secs = {m: [r.seconds for r in rs if r.method == m] for m in names}
        msec = {m: med(v) for m, v in secs.items()}
        air_names = [m for m in names if m.startswith("air-")]
        if air_names:
            b = min(air_names, key=lambda m: msec[m])
            best[lat] = (b, msec[b])
        default = f"air-{args.default_workers}"
        read = lat if args.read_latency_ms is None else args.read_latency_ms
        out.append(f"\n### op latency {lat:g} ms, read/write latency {read:g} ms "
                   f"({files} files x {args.size_kib} KiB, {args.folders} folders, {args.reps} reps)\n")
        out.append("| method | median s (min-max) | files/s | files lost (per rep) | requests/file | "
                   "of which listing, s | x recipe | x pool |")
        out.append("|---|---|---|---|---|---|---|---|")
        for m in names:
            v = secs[m]
            lost = [r.lost for r in rs if r.method == m]
            reqs = [sum(n for op, n in r.requests.items() if op != "release") / files for r in rs if r.method == m]
            plan_s = [r.details["plan_seconds"] for r in rs if r.method == m and "plan_seconds" in r.details]
            listing = f"{med(plan_s):.2f}" if plan_s else "-"
            label = {"cp": "serial `cp -r`", "recipe": "recipe `find \\| xargs -P 256 cp --parents`",
                     "pool": f"plain `ThreadPoolExecutor({args.pool_workers})`",
                     "rerun": f"air_magics re-run, unchanged dest (workers={args.default_workers})"}.get(m)
            if label is None:
                w = m.split("-")[1]
                label = f"air_magics workers={w}" + (" (default)" if m == default else "")
            xr = f"{msec['recipe'] / msec[m]:.2f}x" if "recipe" in msec else "-"
            xp = f"{msec['pool'] / msec[m]:.2f}x" if "pool" in msec else "-"
            if m == "rerun" and default in msec:
                xr = xp = "-"
                label += f": **{msec[default] / msec[m]:.1f}x faster than its first copy**"
            out.append(f"| {label} | {msec[m]:.2f} ({min(v):.2f}-{max(v):.2f}) | {files / msec[m]:,.0f} | "
                       f"{'/'.join(str(x) for x in lost)} | {med(reqs):.1f} | {listing} | {xr} | {xp} |")
        # targets
        if default in msec:
            t = []
            if "recipe" in msec:
                x = msec["recipe"] / msec[default]
                t.append(f"air_magics (default) vs recipe: {x:.2f}x (target >= 2x: {'MET' if x >= 2 else 'NOT MET'})")
            if "pool" in msec:
                x = msec["pool"] / msec[default]
                t.append(f"air_magics (default) vs plain pool: {x:.2f}x (target >= 1.3x: {'MET' if x >= 1.3 else 'NOT MET'})")
            lost = sum(r.lost for r in rs if r.method.startswith("air-") or r.method == "rerun")
            t.append(f"air_magics files lost, all runs: {lost} (target 0: {'MET' if lost == 0 else 'NOT MET'})")
            if "rerun" in msec:
                x = msec[default] / msec["rerun"]
                t.append(f"unchanged re-run vs first copy: {x:.1f}x (target >= 10x: {'MET' if x >= 10 else 'NOT MET'})")
            if air_names:
                t.append(f"fastest air_magics workers: {best[lat][0].split('-')[1]} ({best[lat][1]:.2f} s)")
            out.append("")
            out += [f"- {s}" for s in t]
    if len(best) > 0:
        air_all = sorted({r.method for r in results if r.method.startswith("air-")}, key=lambda m: int(m.split("-")[1]))
        if len(air_all) > 1:
            score = {}
            for m in air_all:
                rel = []
                for lat in lat_list:
                    ms = med([r.seconds for r in results if r.latency_ms == lat and r.method == m])
                    rel.append(ms / best[lat][1])
                score[m] = statistics.geometric_mean(rel)
            b = min(score, key=score.get)
            out.append("\nWorkers, median time relative to the fastest per latency (geometric mean over latencies): "
                       + ", ".join(f"{m.split('-')[1]}: {score[m]:.2f}" for m in air_all)
                       + f". Best: **{b.split('-')[1]}**.")
    hashed = [r for r in results if r.verify["hashed"]]
    out.append(f"\nVerification: every destination walked after its run (file count, every expected path with size "
               f"{args.size_kib * 1024} B, no extra or temp files): {sum(r.verify['extra'] for r in results)} extra files, "
               f"{sum(r.verify['wrong_size'] for r in results)} wrong sizes in {len(results)} runs; SHA-256 of every "
               f"file against the source in {len(hashed)} runs: {sum(r.verify['bad_hash'] for r in hashed)} mismatches.")
    return "\n".join(out)


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, help="number of files (default 3000; --quick 300)")
    p.add_argument("--folders", type=int, help="leaf folders, two levels deep (default 30; --quick 6)")
    p.add_argument("--size-kib", type=int, default=150, help="file size in KiB (default 150)")
    p.add_argument("--reps", type=int, help="interleaved repetitions (default 3; --quick 1)")
    p.add_argument("--latencies", help="comma-separated op latencies in ms (default 2,10; --quick 2)")
    p.add_argument("--read-latency-ms", type=float, default=None,
                   help="read/write latency per request (default: equal to the op latency)")
    p.add_argument("--cache-timeout", type=float, default=1.0,
                   help="slowfs --attr-timeout/--entry-timeout in s (default 1, the slowfs default)")
    p.add_argument("--workers", help="comma-separated air_magics worker counts (default 32,64,128; --quick: the "
                   "default only); the engine's default is always included")
    p.add_argument("--pool-workers", type=int, default=64, help="threads of the plain pool (default 64)")
    p.add_argument("--methods", default="cp,recipe,pool,air,rerun",
                   help="comma-separated subset of cp,recipe,pool,air,rerun (default all)")
    p.add_argument("--hash", choices=("first", "all", "none"), default="first",
                   help="SHA-256 every copied file: on the first rep (default), every rep, or never")
    p.add_argument("--quiet-wait", type=float, default=120.0,
                   help="before each measurement wait up to this many seconds for the CPUs to be idle (other "
                   "processes below --quiet-below busy); 0 = don't check (default 120)")
    p.add_argument("--quiet-below", type=float, default=0.15, help="busy fraction counted as idle (default 0.15)")
    p.add_argument("--quick", action="store_true", help="small smoke run: 300 files, 6 folders, 2 ms, 1 rep")
    p.add_argument("--workdir", help="where to put the data, mount and destinations (default: a new temp dir; "
                   "must be on local disk)")
    p.add_argument("--keep", action="store_true", help="keep the work dir")
    p.add_argument("--json", help="write every measurement as JSON here")
    p.add_argument("--slowfs", default=str(REPO.parent / "shared" / "tools" / "slowfs.py"),
                   help="path of slowfs.py (default ../shared/tools/slowfs.py)")
    a = p.parse_args(argv)

    q = a.quick
    a.files = a.files or (300 if q else 3000)
    a.folders = a.folders or (6 if q else 30)
    a.reps = a.reps or (1 if q else 3)
    a.latencies = [float(x) for x in (a.latencies or ("2" if q else "2,10")).split(",")]
    a.methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    bad = set(a.methods) - {"cp", "recipe", "pool", "air", "rerun"}
    if bad:
        p.error(f"unknown method(s): {', '.join(sorted(bad))}")

    from air_magics.transfer import DEFAULT_WORKERS
    a.default_workers = DEFAULT_WORKERS
    ws = [int(x) for x in a.workers.split(",")] if a.workers else ([] if q else [32, 64, 128])
    a.workers = sorted(set(ws) | {DEFAULT_WORKERS})

    slowfs = load_slowfs(Path(a.slowfs))
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="air-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["AIR_HOME"] = str(work / "air_home")  # keep the volume registry out of ~/.air
    os.environ.pop("AIR_VOLUMES_ROOT", None)
    try:
        backing = work / "backing"
        shutil.rmtree(backing, ignore_errors=True)
        print(f"writing {a.files} files x {a.size_kib} KiB into {a.folders} folders under {backing} ...",
              file=sys.stderr, flush=True)
        expected = make_dataset(backing, a.files, a.folders, a.size_kib * 1024)
        bench = Bench(a, slowfs, work, expected)
        t0 = time.perf_counter()
        bench.run()
        print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        rl = "= op latency" if a.read_latency_ms is None else f"{a.read_latency_ms:g} ms"
        print(f"## bench_copy: {a.files} files x {a.size_kib} KiB, {a.folders} folders two levels deep, "
              f"slowfs C engine, read/write latency {rl}, attr/entry timeout {a.cache_timeout:g} s, "
              f"fresh mount per measurement, {a.reps} interleaved reps, medians")
        print("\nfiles/s = all files / median seconds (so a method that loses files is not credited for skipping "
              "them); x recipe / x pool = their median seconds / this method's median seconds.")
        print(report(bench.results, a, a.files))
        if a.json:
            Path(a.json).write_text(json.dumps({"args": {k: v for k, v in vars(a).items()},
                                                "results": [asdict(r) for r in bench.results]}, indent=1))
        air_lost = sum(r.lost for r in bench.results if r.method.startswith("air-") or r.method == "rerun")
        return 1 if air_lost else 0
    finally:
        if slowfs._fstype(work / "mnt"):  # never delete through a live mount
            slowfs.unmount(str(work / "mnt"), lazy=True)
        if not a.keep and not slowfs._fstype(work / "mnt"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
