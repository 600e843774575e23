"""Benchmark: a training DataLoader streaming many small files from a slow FUSE volume.

Compares, on a fusevol volume (benchmarks/harness/fusevol.py, C engine; one flat folder of N files) with a
fixed per-request latency, these loaders (``--configs``):

  ref:default   the reference ``databricks.air.data``: ``DataLoader(UCVolumeDataset(path), batch_size=None)``
                with its default workers (48 outside torch.distributed; prefetch_factor 4, persistent workers)
  ref:8         the same with ``num_workers=8``
  torch:8       a plain ``torch.utils.data.DataLoader(ds, batch_size=None, num_workers=8)`` over a naive
                map-style dataset whose ``__getitem__`` returns ``open(path, "rb").read()`` (no cache)
  air:default   ``air_magics.data.DataLoader(UCVolumeDataset(path), batch_size=None)`` at its defaults
  air:WxP       the same with ``num_workers=W`` and ``UCVolumeDataset(prefetch=P)``
  air:WxPxF     ... and ``DataLoader(prefetch_factor=F)``
  copy          the ceilings: the copy engine (``air_magics.copy``) copying the folder to local disk (its
                "cold" row), then a bare single-thread read loop over the copies (its "warm" row)
  pool          the plain yardstick of a cold epoch: ``ThreadPoolExecutor(64)`` running ``shutil.copyfile`` of
                each file to local disk, the consumer reading each copy as it lands; warm: the bare read loop
  spdl          SPDL's thread pipeline (``spdl.pipeline``, 64 concurrent ``open().read()`` into memory, no
                cache); skipped with a printed reason where ``spdl`` is not installed
  +step         (suffix, e.g. ``ref:default+step``) a simulated training step: the consumer sleeps 5 ms per
                32 items; the report gives the share of each epoch spent waiting for data
  +half         (suffix, air only) air_magics' cache limited to half the data: the report gives epoch 2's hit rate
  +pil          (suffix) the image-training pattern: a wrapper ``IterableDataset`` opens each yielded path with
                PIL and the loader batches by 32 (the files are PNG images padded to the file size)

Each measured configuration runs in its own subprocess (``benchmarks.scenarios.loader_child``; the
reference from its own venv, ``--ref-python``, or skipped with a printed reason when that venv is not
there), against a fresh mount and a fresh, empty cache directory (``TMPDIR`` for the reference,
``AIR_HOME`` for air_magics): setup (the listing), a cold epoch, a warm epoch over the same loader. The
consumer touches every item; every epoch is checked (N items, N distinct names, N x size bytes).

Metrics: files/s per epoch, time to the first item (from ``iter()``), setup seconds, peak PSS of the
subprocess tree (sampled every ``--sample-ms`` at nice 19), CPU seconds of the tree, FUSE requests per
file. Repetitions are interleaved with a rotating order, medians reported, ratios against the
reference's best configuration. A measurement during which the rest of the machine used more than
``--max-foreign`` cores, or a copy benchmark ran, is repeated (``--retries``).

Volume paths: the harness creates one symlink ``--volumes-link`` (default ``/Volumes-air-bench-<pid>``)
to the mount for the run; the reference and the naive loader read ``<link>/main/bench/vol/flat``,
air_magics ``/Volumes/main/bench/vol/flat`` with ``AIR_VOLUMES_MOUNT=<link>``. ``/Volumes`` itself is
never created unless ``--volumes-link /Volumes`` is given (refused if it exists).

    .venv/bin/python benchmarks/bench_loader.py --quick          # 300 files, 2 ms, 1 rep (1-3 min)
    .venv/bin/python benchmarks/bench_loader.py --json r.json    # 3000 x 150 KiB, 2 and 10 ms, 3 reps (15-40 min)
    .venv/bin/python benchmarks/bench_loader.py --latencies 10 --reps 1 --configs air:default,air:2x32x32
    .venv/bin/python benchmarks/bench_loader.py --report r.json  # print the report of a saved run again

Prints progress on stderr and a markdown report on stdout; the exit status is 1 if an air_magics loader
or the copy engine failed or delivered a wrong set of items. A peer's failure (``ref:*``, ``torch:*``) is
shown in its row and in a note under the report, not in the exit status: it is the peer's own finding
(the reference's cached copy of a yielded file can be gone before the loop opens it: seen with its 48
default workers over 96 files, ``FileNotFoundError`` in the loop). Needs root (or fuse access), /dev/fuse, fuse3, gcc + pkg-config + libfuse3-dev.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from benchmarks.harness.mounts import (
    REPO,
    fuse_unavailable,
    requests,
    slow_volume,
    volumes_link,
)
from benchmarks.harness.reference import (
    DEFAULT_REF_PYTHON,
    INSTALL_HINT,
    reference_unavailable,
)
from benchmarks.harness.report import git_describe, log, skipped
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
from benchmarks.harness.sampling import wait_for_benches, wait_quiet
from benchmarks.scenarios.loader_report import (
    Config,
    Result,
    header,
    parse_configs,
    report,
    report_from_json,
)

__all__ = ["Bench", "main", "make_dataset"]

VOLUME = ("main", "bench", "vol")  # catalog, schema, volume
TOP = "flat"  # one flat folder: /Volumes/main/bench/vol/flat/f00000.bin ...
DEFAULT_CONFIGS = "ref:default,ref:8,torch:8,copy,pool,spdl,air:default,air:4x32,air:2x32,air:1x32,ref:default+step,air:default+step,air:default+half"


def _pngs(rng: random.Random, size: int, count: int = 16) -> list[bytes]:
    """A few noise PNGs (same pixel size, so batches stack) that fit in *size* bytes; [] without PIL."""
    try:
        import io

        from PIL import Image
    except ImportError:
        return []
    side = int((size * 0.8 / 3) ** 0.5)  # noise does not compress: about 3 bytes a pixel
    out = []
    for _ in range(count):
        buf = io.BytesIO()
        Image.frombytes("RGB", (side, side), rng.randbytes(side * side * 3)).save(buf, "PNG", compress_level=0)
        out.append(buf.getvalue())
    return out if all(len(p) <= size for p in out) else []


def make_dataset(backing: Path, files: int, size: int, seed: int = 0) -> None:
    """*files* files of exactly *size* bytes: noise PNGs padded with random bytes after their end
    (PIL reads to the IEND chunk), so byte loaders and decoding loaders read the same folder."""
    top = backing.joinpath(*VOLUME, TOP)
    top.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    pngs = _pngs(rng, size)
    for i in range(files):
        head = pngs[i % len(pngs)] if pngs else b""
        (top / f"f{i:05d}.bin").write_bytes(head + rng.randbytes(size - len(head)))


class Bench:
    def __init__(self, a: argparse.Namespace, work: Path, link: Path) -> None:
        self.a, self.work, self.link = a, work, link
        self.backing, self.mnt = work / "backing", work / "mnt"
        self.results: list[Result] = []

    def spec(self, cfg: Config, run_dir: Path) -> dict:
        rel = "/".join((*VOLUME, TOP))
        return {
            "kind": cfg.kind,
            "workers": cfg.workers,
            "prefetch": cfg.prefetch,
            "prefetch_factor": cfg.prefetch_factor,
            "ref_path": f"{self.link}/{rel}",
            "air_path": f"/Volumes/{rel}",
            "naive_path": f"{self.link}/{rel}",
            "result_file": str(run_dir / "result.json"),
            "step_ms": cfg.step_ms,
            "pil": cfg.pil,
        }

    def measure(self, latency: float, rep: int, cfg: Config) -> Result:
        """One measurement; repeated (up to --retries times) when something else used the CPUs meanwhile."""
        res = measure_with_retries(lambda attempt: self.measure_once(latency, rep, cfg, attempt), self.a.retries)
        self.results.append(res)
        if self.a.json:  # keep what we have even if the run is interrupted later
            Path(self.a.json).write_text(
                json.dumps({"args": vars(self.a), "results": [asdict(r) for r in self.results]}, indent=1, default=str)
            )
        return res

    def measure_once(self, latency: float, rep: int, cfg: Config, attempt: int = 1) -> Result:
        a = self.a
        run_dir = self.work / "runs" / f"{cfg.name.replace(':', '-')}-{latency:g}ms-{rep}"
        shutil.rmtree(run_dir, ignore_errors=True)
        (run_dir / "tmp").mkdir(parents=True)
        limit = {"AIR_CACHE_LIMIT": str(int(a.files * a.size_kib * 1024 * cfg.limit_frac))} if cfg.limit_frac else {}
        env = child_env(run_dir, AIR_VOLUMES_MOUNT=str(self.link), **limit)
        python = a.ref_python if cfg.kind == "ref" else a.python  # copy: this venv (air_magics)
        argv = [python, "-m", "benchmarks.scenarios.loader_child", json.dumps(self.spec(cfg, run_dir))]
        os.sync()  # no writeback of the previous run's cache during this one
        wait_for_benches(("copy",), a.bench_wait)
        busy = wait_quiet(a.quiet_below, a.quiet_wait)
        res = Result(latency, rep, cfg.name, ok=False, busy_before=busy, attempt=attempt)
        with slow_volume(
            self.backing,
            self.mnt,
            run_dir / "fusevol-stats.json",
            latency_ms=latency,
            read_ms=latency,
            cache_timeout=a.cache_timeout,
            engine=a.engine,
        ) as mount:
            run = run_child(
                argv,
                env=env,
                cwd=run_dir,
                log_path=run_dir / "child.log",
                timeout=a.child_timeout,
                server_pid=mount.server_pid,
                pss_interval=a.sample_ms / 1000,
                watch=("copy",),
            )
        res.error = run.error
        res.server_cpu_s, res.wall_s = run.server_cpu_s, run.wall_s
        res.child_cpu_s, res.foreign_cores = run.child_cpu_s, run.foreign_cores
        res.disturbed = disturbance(run, a.max_foreign)
        res.requests = mount.stats()["ops"]
        samples = run.samples
        res.samples = len(samples)
        if len(samples) > 1:
            res.sample_period_ms = (samples[-1][0] - samples[0][0]) / (len(samples) - 1) * 1000
        res.peak_pss = max((s[1] for s in samples), default=0)
        res.max_procs = max((s[2] for s in samples), default=0)
        rf = run_dir / "result.json"
        if run.returncode == 0 and rf.exists():
            self._read_child(res, json.loads(rf.read_text()), samples)
        else:
            tail = (run_dir / "child.log").read_bytes()[-2000:].decode(errors="replace")
            res.error = res.error or f"exit {run.returncode}: {tail}"
        if not res.ok or a.keep_logs:
            keep = self.work / "failed" if not res.ok else self.work / "logs"
            keep.mkdir(exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy(run_dir / "child.log", keep / f"{run_dir.name}.log")
        shutil.rmtree(run_dir, ignore_errors=True)  # the cache: hundreds of MB per run
        f = a.files
        log(
            f"  [{latency:g} ms rep {rep + 1}] {cfg.name:<12} setup {res.setup_s:5.2f} s  first {res.cold_first_s:5.2f} s  "
            f"cold {f / res.cold_s:7.0f} files/s  warm {f / res.warm_s:7.0f} files/s  peak PSS {res.peak_pss / 2**20:6.0f} MiB "
            f"({res.max_procs} procs)  CPU {res.cpu_s:5.1f} s  req/file {requests(res.requests) / f:.1f}  "
            f"busy-before {busy:.0%}  foreign {res.foreign_cores:.2f} cores"
            + ("" if res.ok else f"  FAILED: {res.error[:400]}")
        )
        return res

    def _read_child(self, res: Result, out: dict, samples: list) -> None:
        a = self.a
        m, ep = out["marks"], out["epochs"]
        res.setup_s = m["setup"] - m["imported"]
        res.cold_s, res.warm_s = ep[0]["seconds"], ep[1]["seconds"]
        res.cold_first_s, res.warm_first_s = ep[0]["first_item"] or float("nan"), ep[1]["first_item"] or float("nan")
        res.cpu_s, res.info = out["cpu_s"], out["info"]
        res.checks["wait"] = [e.get("wait_s", 0.0) / e["seconds"] if e["seconds"] else float("nan") for e in ep]

        def peak(t0: float, t1: float) -> int:
            return max((s[1] for s in samples if t0 <= s[0] <= t1), default=0)

        res.peak_pss_cold = peak(m["epoch0_start"], m["epoch0_end"])
        res.peak_pss_warm = peak(m["epoch1_start"], m["epoch1_end"])
        before = [s[1] for s in samples if s[0] <= m["setup"]]
        res.base_pss = before[-1] if before else 0
        want_bytes = a.files * a.size_kib * 1024
        res.checks = {
            "wait": res.checks.get("wait", []),
            **{
                f"epoch{i}": {
                    "items": e["items"],
                    "bytes_ok": e["bytes"] == want_bytes,
                    "distinct": e["distinct_names"],
                    "types": e["item_types"],
                }
                for i, e in enumerate(ep)
            },
        }
        res.ok = all(
            e["items"] == a.files
            and e["bytes"] == want_bytes
            and (e["distinct_names"] is None or e["distinct_names"] == a.files)
            for e in ep
        )
        if not res.ok:
            res.error = f"wrong items: {res.checks}"

    def run(self, configs: list[Config]) -> None:
        for latency in self.a.latencies:
            for rep, cfg in interleaved(self.a.reps, configs):
                self.measure(latency, rep, cfg)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench_loader.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--files", type=int, help="number of files (default 3000; --quick 300)")
    p.add_argument("--size-kib", type=int, default=150, help="file size in KiB (default 150)")
    p.add_argument("--reps", type=int, help="interleaved repetitions (default 3; --quick 1)")
    p.add_argument("--latencies", help="comma-separated op (= read) latencies in ms (default 2,10; --quick 2)")
    p.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help=f"comma-separated loaders: ref:default|ref:N, torch:N, air:default|air:WxP|air:WxPxF, copy, pool, spdl (default {DEFAULT_CONFIGS})",
    )
    p.add_argument(
        "--ref-python",
        default=DEFAULT_REF_PYTHON,
        help=f"interpreter of the venv holding databricks-sdk-air[data] (default {DEFAULT_REF_PYTHON}; "
        f"its rows are skipped when it is missing: {INSTALL_HINT})",
    )
    p.add_argument(
        "--python", default=sys.executable, help="interpreter for air_magics and plain torch (default: this one)"
    )
    p.add_argument(
        "--volumes-link",
        help="symlink to the mount that the reference reads through; its path must start "
        "with /Volumes (default /Volumes-air-bench-<pid>; removed at the end)",
    )
    p.add_argument(
        "--engine",
        choices=("c", "python"),
        default="c",
        help="fusevol's server: c (cheap) or python (as costly as a FUSE daemon in Python, on the same cores)",
    )
    p.add_argument("--sample-ms", type=float, default=50.0, help="PSS sampling interval in ms (default 50)")
    p.add_argument("--cache-timeout", type=float, default=1.0, help="fusevol attr/entry timeout in s (default 1)")
    p.add_argument(
        "--child-timeout", type=float, default=900.0, help="seconds before a measurement is killed (default 900)"
    )
    p.add_argument("--workdir", help="where to put data, mount and caches (default: a new temp dir; local disk)")
    p.add_argument("--keep", action="store_true", help="keep the work dir")
    p.add_argument(
        "--keep-logs", action="store_true", help="keep every child's log under WORKDIR/logs (implies --keep)"
    )
    p.add_argument("--json", help="write every measurement as JSON here")
    p.add_argument("--report", metavar="JSON", help="only print the report of a saved --json file")
    add_common_args(p, quiet_wait=120.0, quiet_below=0.15, bench_wait=7200.0, max_foreign=0.3, retries=3)
    a = p.parse_args(argv)
    resolve_waits(a)
    q = a.quick
    a.files = a.files or (300 if q else 3000)
    a.reps = a.reps or (1 if q else 3)
    a.latencies = [float(x) for x in (a.latencies or ("2" if q else "2,10")).split(",")]
    a.keep = a.keep or a.keep_logs
    return a


PEER_KINDS = ("ref", "torch", "spdl")  # the loaders compared against, not air_magics' own


def _spdl_unavailable(python: str) -> str:
    """Why *python* cannot run the SPDL row, or ''."""
    import subprocess

    r = subprocess.run([python, "-c", "import spdl.pipeline"], capture_output=True, text=True)
    if r.returncode == 0:
        return ""
    return f"`import spdl.pipeline` failed in {python}: install it with `pip install spdl` (the `bench` extra)"


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.report:
        return report_from_json(a.report)
    configs = parse_configs(a.configs)
    if reason := fuse_unavailable():
        print(skipped("bench_loader", reason))
        return 0
    ref_note = ""
    if any(c.kind == "ref" for c in configs) and (why := reference_unavailable(a.ref_python)):
        configs = [c for c in configs if c.kind != "ref"]
        a.configs = ",".join(c.name for c in configs)
        ref_note = skipped("reference rows (ref:*)", why)
        log(ref_note)
    if any(c.kind == "spdl" for c in configs) and (why := _spdl_unavailable(a.python)):
        configs = [c for c in configs if c.kind != "spdl"]
        a.configs = ",".join(c.name for c in configs)
        note = skipped("SPDL row (spdl)", why)
        ref_note = f"{ref_note}\n{note}" if ref_note else note
        log(note)
    link = Path(a.volumes_link or f"/Volumes-air-bench-{os.getpid()}")
    if not str(link).startswith("/Volumes"):
        raise SystemExit(f"--volumes-link {link}: the reference accepts only paths that start with /Volumes")

    a.commit = git_describe(REPO)
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="air-bench-loader-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "mnt").mkdir(exist_ok=True)
    raise_on_sigterm()
    try:
        log(f"writing {a.files} files x {a.size_kib} KiB into {work / 'backing'} ...")
        shutil.rmtree(work / "backing", ignore_errors=True)
        make_dataset(work / "backing", a.files, a.size_kib * 1024)
        os.sync()
        bench = Bench(a, work, link)
        t0 = time.perf_counter()
        with volumes_link(link, work / "mnt"):
            bench.run(configs)
        log(f"done in {time.perf_counter() - t0:.0f} s")
        print(header(a))
        if ref_note:
            print(f"\n{ref_note}")
        print(report(bench.results, configs, a))
        if a.json:
            Path(a.json).write_text(
                json.dumps({"args": vars(a), "results": [asdict(r) for r in bench.results]}, indent=1, default=str)
            )
        peers = [r for r in bench.results if not r.ok and r.config.split(":")[0] in PEER_KINDS]
        for r in peers:  # a peer's own failure is the finding, reported; it does not fail the run
            errors = [ln.strip() for ln in r.error.splitlines() if "Error:" in ln]
            why = errors[0] if errors else r.error[-400:]
            print(f"\nnote: {r.config} failed on its own (rep {r.rep}, {r.latency_ms:g} ms): {why}")
        return 0 if all(r.ok for r in bench.results if r not in peers) else 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
