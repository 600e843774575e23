"""Benchmark: torch.distributed.checkpoint save / load / async_save on a slow FUSE volume.

Compares, on a fusevol volume (benchmarks/harness/fusevol.py, C engine) with a fixed per-request latency,
these ways to write and read a DCP checkpoint (``--methods``):

  threads8  the ceiling: the state's tensor bytes split into 8 files, each written by its own plain
          thread (``open(...).write``) straight to the mount and read back with ``readinto`` into the
          target tensors: what the volume gives 8 parallel streams, with no format, checksum or commit
  plain   torch's own ``dcp.FileSystemWriter(MNT/main/bench/vol/ckpt/...)`` / ``FileSystemReader``
          pointed straight at the mount, torch defaults (one file per rank, thread_count=1, fsync on)
  ref     the reference ``databricks.air.data.UCVolumeWriter`` / ``UCVolumeReader`` on
          ``/Volumes/main/bench/vol/ckpt/...`` (run from its own venv, ``--ref-python``; skipped with a
          printed reason when that venv is not there)
  air     ``air_magics.data.UCVolumeWriter`` / ``UCVolumeReader`` on ``/Volumes/main/bench/vol/ckpt/...``
          (``AIR_VOLUMES_MOUNT=MNT``), defaults; its load is measured with a cold cache and again warm
  mgr     ``air_magics.data.CheckpointManager("/Volumes/main/bench/vol/mgr")``: ``save(1, state)``,
          ``load(state, 1)``, ``save(2, state, blocking=False)`` + ``wait()``

The state is a transformer-like dict of float32 tensors with hidden size 768 (see
``checkpoint_child.build_state``): 200 MB is 6 layers + a 9.8k-row embedding (76 tensors), 1000 MB 31
layers + 39.4k rows (376 tensors). Throughputs divide the exact tensor bytes, in MB of 10^6 bytes.

Each measurement (one method, one size, one rep) runs in its own subprocess
(``benchmarks.scenarios.checkpoint_child``) with a fresh backing directory and fusevol mount, a fresh
``AIR_HOME`` (air_magics's load cache is cold) and ``TMPDIR`` (the reference's staging and read cache).
It times save, load (air: also warm) and ``async_save`` (blocked part and total); every load and every
checkpoint on the backing disk is checked bit for bit. The reference writes real ``/Volumes/...``
paths: for its runs only, the harness links ``--volumes-link`` (default ``/Volumes``) to the mount,
after waiting until no ``/Volumes`` exists and no loader benchmark runs, and removes it right after.

Repetitions are interleaved (order rotated per rep), medians and ratios of medians reported. Before
each measurement the harness waits while another benchmark runs and until the CPUs are mostly idle;
a measurement during which other processes used more than ``--max-foreign`` cores is repeated.

    .venv/bin/python benchmarks/bench_checkpoint.py --quick            # 50 MB, 1 rep (~1-2 min)
    .venv/bin/python benchmarks/bench_checkpoint.py                    # 200 and 1000 MB, 3 reps
    .venv/bin/python benchmarks/bench_checkpoint.py --sizes-mb 200 --reps 1 --methods plain,air

Progress goes to stderr, the markdown report to stdout; ``--json FILE`` saves every measurement. The exit
status is 1 if any measurement failed or any load was not bit-exact. Needs root (or fuse access),
/dev/fuse, fuse3, and gcc + pkg-config + libfuse3-dev for fusevol's C engine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from benchmarks.harness.mounts import (
    VolumeError,
    fuse_unavailable,
    slow_volume,
    volumes_link,
)
from benchmarks.harness.reference import (
    DEFAULT_REF_PYTHON,
    INSTALL_HINT,
    reference_unavailable,
)
from benchmarks.harness.report import log, skipped
from benchmarks.harness.runner import (
    add_common_args,
    child_env,
    disturbance,
    interleaved,
    measure_with_retries,
    raise_on_sigterm,
    resolve_waits,
    run_child,
)
from benchmarks.harness.sampling import other_bench_pids, wait_for_benches, wait_quiet
from benchmarks.scenarios.checkpoint_report import METHODS, Result, report

__all__ = ["Bench", "main"]

VOLUME = ("main", "bench", "vol")  # catalog, schema, volume
OTHER_BENCHES = ("loader", "copy", "tables")


class Bench:
    def __init__(self, a: argparse.Namespace, work: Path) -> None:
        self.a, self.work = a, work
        self.results: list[Result] = []

    def measure(self, size: float, rep: int, method: str) -> Result:
        res = measure_with_retries(lambda attempt: self.measure_once(size, rep, method, attempt), self.a.retries)
        self.results.append(res)
        return res

    def _spec(self, size: float, method: str, run_dir: Path, mnt: Path, backing: Path) -> dict:
        rel = "/".join(VOLUME) + ("/mgr" if method == "mgr" else "/ckpt")
        base = {"plain": f"{mnt}/{rel}", "threads8": f"{mnt}/{rel}", "ref": f"{self.a.volumes_link}/{rel}"}.get(
            method, f"/Volumes/{rel}"
        )
        return {
            "method": method,
            "size_mb": size,
            "seed": 0,
            "base": base,
            "backing_ckpt": str(backing / rel),
            "stats": str(run_dir / "fusevol-stats.json"),
            "result_file": str(run_dir / "result.json"),
            "torch_threads": os.cpu_count() or 2,
        }

    def measure_once(self, size: float, rep: int, method: str, attempt: int = 1) -> Result:
        a = self.a
        run_dir = self.work / f"{method}-{size:g}MB-{rep}"
        shutil.rmtree(run_dir, ignore_errors=True)
        backing, mnt = run_dir / "backing", run_dir / "mnt"
        backing.joinpath(*VOLUME).mkdir(parents=True)
        mnt.mkdir()
        (run_dir / "tmp").mkdir()
        spec = self._spec(size, method, run_dir, mnt, backing)
        env = child_env(run_dir, AIR_VOLUMES_MOUNT=str(mnt))
        python = a.ref_python if method == "ref" else a.python
        argv = [python, "-m", "benchmarks.scenarios.checkpoint_child", json.dumps(spec)]
        res = Result(size, rep, method, attempt=attempt)
        os.sync()  # no writeback of the previous run during this one
        wait_for_benches(OTHER_BENCHES, a.bench_wait, poll=10)
        res.busy_before = wait_quiet(a.quiet_below, a.quiet_wait, interval=1.0)
        link = Path(a.volumes_link)
        link_cm = (
            volumes_link(
                link,
                mnt,
                wait_s=a.bench_wait,
                busy=(lambda: other_bench_pids(("loader",))) if str(link) == "/Volumes" else None,
            )
            if method == "ref"
            else contextlib.nullcontext()
        )
        try:
            with slow_volume(
                backing,
                mnt,
                Path(spec["stats"]),
                latency_ms=a.latency_ms,
                read_ms=a.rw_latency_ms,
                write_ms=a.rw_latency_ms,
                cache_timeout=a.cache_timeout,
            ) as mount:
                with link_cm:
                    run = run_child(
                        argv,
                        env=env,
                        cwd=run_dir,
                        log_path=run_dir / "child.log",
                        timeout=a.child_timeout,
                        server_pid=mount.server_pid,
                        watch=OTHER_BENCHES,
                    )
        except VolumeError as exc:
            res.error = f"fusevol: {exc}"
            return res
        res.error, res.wall_s, res.server_cpu_s = run.error, run.wall_s, run.server_cpu_s
        res.child_cpu_s, res.peak_rss_mib, res.foreign_cores = run.child_cpu_s, run.peak_rss_mib, run.foreign_cores
        res.disturbed = disturbance(run, a.max_foreign, count_others=False)
        res.others = run.others_seen
        self._read_child(res, run_dir, run.returncode)
        if not a.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        mb = res.bytes / 1e6 if res.bytes else size
        log(
            f"  [{size:g} MB rep {rep + 1}] {method:<5} save {mb / res.save_s:6.1f} MB/s  load {mb / res.load_s:6.1f} MB/s"
            + (f"  warm {mb / res.warm_s:6.1f} MB/s" if res.warm_s == res.warm_s else "")
            + f"  async blocked {res.async_blocked_s:6.2f} s of {res.async_total_s:6.2f} s"
            + (
                f"  staged blocked {res.staged_blocked_s:.3f} s (call {res.staged_call_s:.3f}), "
                f"again {res.staged_again_blocked_s:.3f} s"
                if res.staged_blocked_s == res.staged_blocked_s
                else ""
            )
            + f"  busy-before {res.busy_before:.0%}  "
            f"foreign {res.foreign_cores:.2f} cores" + ("" if res.ok else f"  FAILED: {res.error[:600]}")
        )
        return res

    def _read_child(self, res: Result, run_dir: Path, rc: int) -> None:
        rf = run_dir / "result.json"
        out = json.loads(rf.read_text()) if rf.exists() else {}
        res.phases, res.checks, res.info = out.get("phases", {}), out.get("checks", {}), out.get("info", {})
        res.bytes = res.info.get("bytes", 0)
        ph = res.phases
        res.save_s = ph.get("save", {}).get("s", float("nan"))
        res.load_s = ph.get("load", {}).get("s", float("nan"))
        res.warm_s = ph.get("warm", {}).get("s", float("nan"))
        res.async_blocked_s = ph.get("async", {}).get("blocked_s", float("nan"))
        res.async_total_s = ph.get("async", {}).get("s", float("nan"))
        res.staged_blocked_s = ph.get("staged", {}).get("blocked_s", float("nan"))
        res.staged_call_s = ph.get("staged", {}).get("call_s", float("nan"))
        res.staged_again_blocked_s = ph.get("staged_again", {}).get("blocked_s", float("nan"))
        if rc == 0 and out.get("ok"):
            res.ok = True
            return
        bad = {k: v for k, v in res.checks.items() if v != "ok"}
        tail = (run_dir / "child.log").read_bytes()[-3000:].decode(errors="replace")
        res.error = res.error or (f"not bit-exact: {bad}" if rc == 0 else f"exit {rc}: {tail}")
        keep = self.work.parent / f"{self.work.name}-failed"
        keep.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copy(run_dir / "child.log", keep / f"{run_dir.name}.log")

    def run(self, sizes: list[float], methods: list[str]) -> None:
        for size in sizes:
            for rep, m in interleaved(self.a.reps, methods):
                self.measure(size, rep, m)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench_checkpoint.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes-mb", help="comma-separated state sizes in MB (default 200,1000; --quick 50)")
    p.add_argument("--reps", type=int, help="interleaved repetitions (default 3; --quick 1)")
    p.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)} (default all)")
    p.add_argument("--latency-ms", type=float, default=2.0, help="fusevol op (metadata) latency in ms (default 2)")
    p.add_argument(
        "--rw-latency-ms", type=float, default=2.0, help="fusevol read and write latency per request (default 2)"
    )
    p.add_argument("--cache-timeout", type=float, default=1.0, help="fusevol attr/entry timeout in s (default 1)")
    p.add_argument(
        "--ref-python",
        default=DEFAULT_REF_PYTHON,
        help=f"interpreter of the venv holding databricks-sdk-air[data] (default {DEFAULT_REF_PYTHON}; "
        f"ref is skipped when it is missing: {INSTALL_HINT})",
    )
    p.add_argument(
        "--python", default=sys.executable, help="interpreter for air_magics and plain torch (default: this one)"
    )
    p.add_argument(
        "--volumes-link",
        default="/Volumes",
        help="symlink to the mount that the reference writes through, created per reference run; must start "
        "with /Volumes (default /Volumes: waits until it is free, removes it right after)",
    )
    p.add_argument("--child-timeout", type=float, default=1200.0, help="seconds before a measurement is killed")
    p.add_argument("--workdir", help="where backing dirs, mounts and caches go (default: a new temp dir on local disk)")
    p.add_argument("--keep", action="store_true", help="keep every run's folder (several GB at 1000 MB)")
    p.add_argument("--json", help="write every measurement as JSON here")
    add_common_args(p, quiet_wait=300.0, quiet_below=0.3, bench_wait=7200.0, max_foreign=0.4, retries=2)
    a = p.parse_args(argv)
    resolve_waits(a)
    a.sizes = [float(x) for x in (a.sizes_mb or ("50" if a.quick else "200,1000")).split(",")]
    a.reps = a.reps or (1 if a.quick else 3)
    a.method_list = [m.strip() for m in a.methods.split(",") if m.strip()]
    if unknown := set(a.method_list) - set(METHODS):
        raise SystemExit(f"--methods: unknown {sorted(unknown)}; choose from {','.join(METHODS)}")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    sizes, methods = a.sizes, a.method_list
    if reason := fuse_unavailable():
        print(skipped("bench_checkpoint", reason))
        return 0
    ref_note = ""
    if "ref" in methods:
        if not str(a.volumes_link).startswith("/Volumes"):
            raise SystemExit(
                f"--volumes-link {a.volumes_link}: the reference accepts only paths that start with /Volumes"
            )
        if why := reference_unavailable(a.ref_python):
            methods = [m for m in methods if m != "ref"]
            ref_note = skipped("reference rows (ref)", why)
            log(ref_note)
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="air-bench-ckpt-"))
    work.mkdir(parents=True, exist_ok=True)
    raise_on_sigterm()
    bench = Bench(a, work)
    try:
        t0 = time.perf_counter()
        log(
            f"sizes {sizes} MB, methods {methods}, {a.reps} rep(s), op latency {a.latency_ms:g} ms, "
            f"read/write latency {a.rw_latency_ms:g} ms, work dir {work}"
        )
        bench.run(sizes, methods)
        log(f"done in {time.perf_counter() - t0:.0f} s")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        if a.json:
            Path(a.json).write_text(
                json.dumps({"args": vars(a), "results": [asdict(r) for r in bench.results]}, indent=1, default=str)
            )
    print(
        f"## bench_checkpoint: DCP save / load / async_save on fusevol (C engine), op latency {a.latency_ms:g} ms, "
        f"read/write latency {a.rw_latency_ms:g} ms per request, attr/entry timeout {a.cache_timeout:g} s; fresh mount, "
        f"fresh AIR_HOME and TMPDIR per measurement; {os.cpu_count()} CPUs"
    )
    if ref_note:
        print(f"\n{ref_note}")
    print(report(bench.results, sizes, methods, a))
    return 0 if bench.results and all(r.ok for r in bench.results) else 1


if __name__ == "__main__":
    sys.exit(main())
