"""Benchmark: copying many small files out of a slow FUSE volume.

Compares, on a fusevol volume (benchmarks/harness/fusevol.py, C engine) with a fixed per-request latency:

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
medians are reported. Each copy is verified: every expected file present with the right size, nothing
extra (no temp files), and on the first rep a SHA-256 of every file against the source.

    .venv/bin/python benchmarks/bench_copy.py                 # full: 3000 x 150 KiB, 2 and 10 ms, 3 reps
    .venv/bin/python benchmarks/bench_copy.py --quick         # 300 files, 2 ms, 1 rep (about 10 s)
    .venv/bin/python benchmarks/bench_copy.py --latencies 2 --reps 1 --methods recipe,pool,air,rerun

Prints progress on stderr and a markdown report on stdout; ``--json FILE`` saves every measurement.
The exit status is 1 if air_magics lost or corrupted a file.
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
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.harness.mounts import (
    fuse_unavailable,
    requests,
    slow_volume,
    unmount_leftover,
)
from benchmarks.harness.report import log, skipped
from benchmarks.harness.runner import (
    add_common_args,
    interleaved,
    raise_on_sigterm,
    resolve_waits,
)
from benchmarks.harness.sampling import wait_quiet
from benchmarks.scenarios.copy_report import report

__all__ = ["Result", "main", "make_dataset", "verify"]

METHODS = ("cp", "recipe", "pool", "air", "rerun")
VOLUME = ("main", "bench", "vol")  # catalog, schema, volume
TOP = "data"  # the copied folder: /Volumes/main/bench/vol/data
SUBDIRS_PER_GROUP = 5  # leaf folders sit two levels deep: data/gNN/dM/


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
    return {
        "files_found": len(found),
        "good": good,
        "lost": len(expected) - good,
        "missing": len(missing),
        "wrong_size": len(wrong_size),
        "bad_hash": len(bad_hash),
        "extra": len(extra),
        "extra_sample": extra[:5],
        "hashed": hash_files,
    }


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
    return {
        "rc": p.returncode,
        "errors": len(lines),
        "file_exists_errors": sum("File exists" in ln for ln in lines),
        "error_sample": lines[:2],
    }


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
    from air_magics.transfer import copy_files
    from air_magics.volumes import VolumeStore

    plan_copy = _plan_copy()

    t0 = time.perf_counter()
    plan = plan_copy(["/Volumes/" + "/".join((*VOLUME, TOP))], str(dest), store=VolumeStore(root=mnt))
    t1 = time.perf_counter()
    rep = copy_files(plan.tasks, dest=plan.dest, **({} if workers is None else {"workers": workers}))
    return {
        "copied": rep.copied,
        "skipped": rep.skipped,
        "failed": len(rep.failed),
        "workers": rep.workers,
        "plan_seconds": t1 - t0,
        "copy_seconds": rep.seconds,
        "failed_sample": [f.reason for f in rep.failed[:2]],
    }


def _plan_copy():
    """air_magics's planning step (``air_magics.transfer.plan_copy``)."""
    from air_magics.transfer import plan_copy

    return plan_copy


# --------------------------------------------------------------------------- measuring


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
    def __init__(self, args: argparse.Namespace, work: Path, expected: dict[str, str]) -> None:
        self.a, self.work, self.expected = args, work, expected
        self.backing, self.mnt = work / "backing", work / "mnt"
        self.src = self.mnt.joinpath(*VOLUME, TOP)
        self.results: list[Result] = []

    def measure(
        self, latency: float, rep: int, method: str, fn, dest: Path, fresh: bool = True, hash_files: bool = False, **kw
    ) -> Result:
        if fresh:
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
        os.sync()  # no writeback of the previous run's destination during this one
        busy = wait_quiet(self.a.quiet_below, self.a.quiet_wait) if self.a.quiet_wait > 0 else 0.0
        stats = self.work / f"stats-{method}.json"
        read = latency if self.a.read_latency_ms is None else self.a.read_latency_ms
        with slow_volume(
            self.backing,
            self.mnt,
            stats,
            latency_ms=latency,
            read_ms=read,
            cache_timeout=self.a.cache_timeout,
        ) as mount:
            t0 = time.perf_counter()
            details = fn(src=self.src, dest=dest, mnt=self.mnt, **kw)
            seconds = time.perf_counter() - t0
        ops = mount.stats()["ops"]
        v = verify(dest / TOP, self.expected, self.a.size_kib * 1024, hash_files)
        r = Result(latency, rep, method, seconds, len(self.expected), v, details, ops, busy)
        self.results.append(r)
        extra = ""
        if "skipped" in details:
            extra = (
                f" listing={details['plan_seconds']:.2f}s copied={details['copied']} skipped={details['skipped']} "
                f"failed={details['failed']}"
            )
        log(
            f"  [{latency:g} ms rep {rep + 1}] {method:<10} {seconds:7.2f} s {len(self.expected) / seconds:8.0f} files/s "
            f"lost={v['lost']} extra={v['extra']} requests/file={requests(ops) / len(self.expected):.1f} "
            f"busy-before={busy:.0%}{extra}"
        )
        return r

    def blocks(self) -> list[str]:
        """The measured units in their base order (rotated per rep); an air-N block may carry the re-run."""
        a, out = self.a, []
        out += [m for m in ("cp", "recipe", "pool") if m in a.methods]
        if "air" in a.methods or "rerun" in a.methods:
            out += [f"air-{w}" for w in a.workers]
        return out

    def run(self) -> None:
        a = self.a
        for latency in a.latencies:
            for rep, name in interleaved(a.reps, self.blocks()):
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
                    if "air" in a.methods or is_default:
                        self.measure(latency, rep, name, run_air, dest, hash_files=h, workers=None if is_default else w)
                    if is_default and "rerun" in a.methods:
                        self.measure(latency, rep, "rerun", run_air, dest, fresh=False)
                shutil.rmtree(dest, ignore_errors=True)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench_copy.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--files", type=int, help="number of files (default 3000; --quick 300)")
    p.add_argument("--folders", type=int, help="leaf folders, two levels deep (default 30; --quick 6)")
    p.add_argument("--size-kib", type=int, default=150, help="file size in KiB (default 150)")
    p.add_argument("--reps", type=int, help="interleaved repetitions (default 3; --quick 1)")
    p.add_argument("--latencies", help="comma-separated op latencies in ms (default 2,10; --quick 2)")
    p.add_argument(
        "--read-latency-ms",
        type=float,
        default=None,
        help="read/write latency per request (default: equal to the op latency)",
    )
    p.add_argument(
        "--cache-timeout",
        type=float,
        default=1.0,
        help="fusevol attr_timeout/entry_timeout in s (default 1, the fusevol default)",
    )
    p.add_argument(
        "--workers",
        help="comma-separated air_magics worker counts (default 32,64,128; --quick: the "
        "default only); the engine's default is always included",
    )
    p.add_argument("--pool-workers", type=int, default=64, help="threads of the plain pool (default 64)")
    p.add_argument(
        "--methods", default=",".join(METHODS), help="comma-separated subset of cp,recipe,pool,air,rerun (default all)"
    )
    p.add_argument(
        "--hash",
        choices=("first", "all", "none"),
        default="first",
        help="SHA-256 every copied file: on the first rep (default), every rep, or never",
    )
    p.add_argument(
        "--workdir",
        help="where to put the data, mount and destinations (default: a new temp dir; must be on local disk)",
    )
    p.add_argument("--keep", action="store_true", help="keep the work dir")
    p.add_argument("--json", help="write every measurement as JSON here")
    add_common_args(p, quiet_wait=120.0, quiet_below=0.15)
    a = p.parse_args(argv)
    resolve_waits(a)
    q = a.quick
    a.files = a.files or (300 if q else 3000)
    a.folders = a.folders or (6 if q else 30)
    a.reps = a.reps or (1 if q else 3)
    a.latencies = [float(x) for x in (a.latencies or ("2" if q else "2,10")).split(",")]
    a.methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    if bad := set(a.methods) - set(METHODS):
        p.error(f"unknown method(s): {', '.join(sorted(bad))}")
    from air_magics.transfer import DEFAULT_WORKERS

    a.default_workers = DEFAULT_WORKERS
    ws = [int(x) for x in a.workers.split(",")] if a.workers else ([] if q else [32, 64, 128])
    a.workers = sorted(set(ws) | {DEFAULT_WORKERS})
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if reason := fuse_unavailable():
        print(skipped("bench_copy", reason))
        return 0
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="air-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["AIR_HOME"] = str(work / "air_home")  # keep the volume registry out of ~/.air
    os.environ.pop("AIR_VOLUMES_ROOT", None)
    raise_on_sigterm()  # a stopped run still unmounts
    try:
        backing = work / "backing"
        shutil.rmtree(backing, ignore_errors=True)
        log(f"writing {a.files} files x {a.size_kib} KiB into {a.folders} folders under {backing} ...")
        expected = make_dataset(backing, a.files, a.folders, a.size_kib * 1024)
        bench = Bench(a, work, expected)
        t0 = time.perf_counter()
        bench.run()
        log(f"done in {time.perf_counter() - t0:.0f} s")
        rl = "= op latency" if a.read_latency_ms is None else f"{a.read_latency_ms:g} ms"
        print(
            f"## bench_copy: {a.files} files x {a.size_kib} KiB, {a.folders} folders two levels deep, "
            f"fusevol C engine, read/write latency {rl}, attr/entry timeout {a.cache_timeout:g} s, "
            f"fresh mount per measurement, {a.reps} interleaved reps, medians"
        )
        print(
            "\nfiles/s = all files / median seconds (so a method that loses files is not credited for skipping "
            "them); x recipe / x pool = their median seconds / this method's median seconds."
        )
        print(report(bench.results, a, a.files))
        if a.json:
            Path(a.json).write_text(
                json.dumps({"args": dict(vars(a)), "results": [asdict(r) for r in bench.results]}, indent=1)
            )
        air_lost = sum(r.lost for r in bench.results if r.method.startswith("air-") or r.method == "rerun")
        return 1 if air_lost else 0
    finally:
        if unmount_leftover(work / "mnt") and not a.keep:  # never delete through a live mount
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
