#!/usr/bin/env python3
"""Benchmark: a training DataLoader streaming many small files from a slow FUSE volume.

Compares, on a slowfs volume (../shared/tools/slowfs.py, C engine; one flat folder of N files) with a
fixed per-request latency, these loaders (``--configs``):

  ref:default   the reference ``databricks.air.data``: ``DataLoader(UCVolumeDataset(path), batch_size=None)``
                with its default workers (48 outside torch.distributed; prefetch_factor 4, persistent workers)
  ref:8         the same with ``num_workers=8``
  torch:8       a plain ``torch.utils.data.DataLoader(ds, batch_size=None, num_workers=8)`` over a naive
                map-style dataset whose ``__getitem__`` returns ``open(path, "rb").read()`` (no cache)
  air:default   ``air_magics.data.DataLoader(UCVolumeDataset(path), batch_size=None)`` at its defaults
                (2 worker processes, 16 prefetch threads each)
  air:WxP       the same with ``num_workers=W`` and ``UCVolumeDataset(prefetch=P)``
  air:WxPxF     ... and ``DataLoader(prefetch_factor=F)`` (torch's default is 2)

Each measured configuration runs in its own subprocess (the reference from its own venv, ``--ref-python``),
against a fresh mount and a fresh, empty cache directory (``TMPDIR`` for the reference, ``AIR_HOME`` for
air_magics). In the subprocess: import (not timed), *setup* (build dataset and loader: the listing),
a *cold* epoch (``for item in loader``), then a *warm* epoch (a second ``for`` over the same loader: the
reference keeps its persistent workers and per-dataset temp cache; air_magics re-forks its workers and
reads its persistent FileCache; the naive loader simply reads the volume again). The consumer touches
every item: for a yielded local path it reads the file's bytes; the naive loader already returns bytes.
Every epoch is checked: N items, N distinct file names, N x size bytes.

Metrics: files/s per epoch (N / epoch seconds), time to the first item (from ``iter()``), setup seconds,
peak PSS of the subprocess and all its children (``psutil.memory_full_info().pss`` summed over the tree,
sampled every ``--sample-ms`` by the harness at nice 19), CPU seconds of the tree during setup + both
epochs, and FUSE requests per file (slowfs ``--stats``). Repetitions are interleaved (each rep runs every
configuration once, the order rotated per rep) and medians are reported, with ratios against the
reference's best configuration. The harness also counts the CPU the rest of the machine used while a
measurement ran (``/proc/stat`` minus the measured tree, the slowfs server and itself); a measurement
during which that exceeded ``--max-foreign`` cores, or during which a ``bench_copy.py`` ran, is repeated
(``--retries``).

Volume paths. air_magics maps ``/Volumes/c/s/v/...`` to ``$AIR_VOLUMES_MOUNT/c/s/v/...``. The reference
reads the ``/Volumes/...`` path it is given straight from the filesystem and only checks that the path
*string* starts with ``/Volumes``. So the harness creates one symlink ``--volumes-link`` (default
``/Volumes-air-bench-<pid>``) to the mount for the duration of the run and removes it at the end; the
reference gets ``<link>/main/bench/vol/flat``, air_magics ``AIR_VOLUMES_MOUNT=<link>`` and
``/Volumes/main/bench/vol/flat``, the naive loader ``<link>/main/bench/vol/flat``: all three read the same
mount through the same path. The real ``/Volumes`` is never created unless ``--volumes-link /Volumes`` is
given (then the script refuses to run if ``/Volumes`` already exists).

    .venv/bin/python benchmarks/bench_loader.py --quick          # 300 files, 2 ms, 1 rep (1-3 min)
    .venv/bin/python benchmarks/bench_loader.py --json r.json    # 3000 x 150 KiB, 2 and 10 ms, 3 reps (15-40 min)
    .venv/bin/python benchmarks/bench_loader.py --latencies 10 --reps 1 --configs air:default,air:2x32x32
    .venv/bin/python benchmarks/bench_loader.py --report r.json  # print the report of a saved run again

The reference lives in its own venv, never in this project's:
    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install torch==2.13.0 'databricks-sdk-air[data]' psutil

Prints progress on stderr and a markdown report on stdout; ``--json FILE`` saves every measurement.
Before each measurement it waits while another ``bench_copy.py`` runs and while the CPUs are busy.
Needs root (or fuse access), /dev/fuse, fuse3, and gcc + pkg-config + libfuse3-dev for the C engine.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from _common import cpu_busy, fmt, load_slowfs, machine_busy_seconds, med  # noqa: E402  (benchmarks/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
VOLUME = ("main", "bench", "vol")  # catalog, schema, volume
TOP = "flat"                       # one flat folder: /Volumes/main/bench/vol/flat/f00000.bin ...
DEFAULT_CONFIGS = "ref:default,ref:8,torch:8,air:default,air:4x32,air:2x32,air:1x32"


# =========================================================================== child (one measurement)
# Runs in its own interpreter (the reference's venv or this project's); imports only what it measures.

def _cpu_now() -> float:
    import resource

    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class _NaiveFiles:
    """A map-style dataset: item i is the bytes of file i, read with ``open().read()``."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> bytes:
        with open(self.paths[i], "rb") as f:
            return f.read()


def child_main(spec: dict) -> int:
    marks = {"start": time.monotonic()}
    kind, workers, prefetch = spec["kind"], spec.get("workers"), spec.get("prefetch")
    pf = spec.get("prefetch_factor")
    if kind == "ref":
        from databricks.air.data import DataLoader, UCVolumeDataset
    elif kind == "air":
        import air_magics.data.loader  # noqa: F401  (imports torch now, not inside setup)
        from air_magics.data import DataLoader, UCVolumeDataset
    else:
        import torch.utils.data as tud
    marks["imported"] = time.monotonic()
    cpu0 = _cpu_now()

    # -- setup: dataset (listing) + loader
    info: dict = {}
    if kind == "ref":
        ds = UCVolumeDataset(spec["ref_path"])
        kw = {} if workers is None else {"num_workers": workers}
        if workers == 0:
            kw["prefetch_factor"] = None
        loader = DataLoader(ds, batch_size=None, **kw)
    elif kind == "air":
        ds = UCVolumeDataset(spec["air_path"], **({} if prefetch is None else {"prefetch": prefetch}))
        kw = {} if workers is None else {"num_workers": workers}
        if pf is not None:
            kw["prefetch_factor"] = pf
        loader = DataLoader(ds, batch_size=None, **kw)
        info["prefetch"] = ds.prefetch
    else:
        top = spec["naive_path"]
        with os.scandir(top) as it:
            paths = sorted(e.path for e in it if e.is_file(follow_symlinks=False))
        loader = tud.DataLoader(_NaiveFiles(paths), batch_size=None, shuffle=False, num_workers=workers or 0)
    info["num_workers"] = loader.num_workers
    info["prefetch_factor"] = loader.prefetch_factor
    info["persistent_workers"] = loader.persistent_workers
    marks["setup"] = time.monotonic()

    # -- two epochs; the consumer touches every item
    epochs = []
    for e in range(2):
        t0 = time.monotonic()
        first, n, nbytes, names, kinds = None, 0, 0, set(), set()
        for item in loader:
            if first is None:
                first = time.monotonic() - t0
            if isinstance(item, (bytes, bytearray, memoryview)):
                b = len(item)
            else:  # a local path (str); read it now: the reference only guarantees it until the next item
                with open(item, "rb") as f:
                    b = len(f.read())
                names.add(os.path.basename(str(item)))
            kinds.add(type(item).__name__)
            n += 1
            nbytes += b
        t1 = time.monotonic()
        marks[f"epoch{e}_start"], marks[f"epoch{e}_end"] = t0, t1
        epochs.append({"seconds": t1 - t0, "first_item": first, "items": n, "bytes": nbytes,
                       "distinct_names": len(names) if names else None, "item_types": sorted(kinds)})

    # persistent workers (the reference) stay alive until the iterator is shut down: join them so their
    # CPU time is counted (RUSAGE_CHILDREN only includes reaped children)
    it = getattr(loader, "_iterator", None)
    if it is not None and hasattr(it, "_shutdown_workers"):
        it._shutdown_workers()
    marks["done"] = time.monotonic()
    cpu = _cpu_now() - cpu0
    if kind == "air":
        ci = ds.cache.info()
        info["cache"] = {"hits": ci.hits, "misses": ci.misses, "entries": ci.entries, "root": ci.root}
        info["loader_timing"] = loader.timing.to_dict()
    out = {"marks": marks, "epochs": epochs, "cpu_s": cpu, "info": info}
    Path(spec["result_file"]).write_text(json.dumps(out))
    return 0


# =========================================================================== harness

@dataclass(frozen=True)
class Config:
    name: str            # e.g. "air:4x32"
    kind: str            # ref | torch | air
    workers: int | None  # None = the library's default
    prefetch: int | None  # air only: UCVolumeDataset(prefetch=...); None = default
    prefetch_factor: int | None = None  # air only: DataLoader(prefetch_factor=...); None = default

    @property
    def label(self) -> str:
        if self.kind == "ref":
            return "reference `databricks.air.data`, " + ("default workers" if self.workers is None else f"num_workers={self.workers}")
        if self.kind == "torch":
            return f"plain torch DataLoader, naive `open().read()` dataset, num_workers={self.workers}"
        if self.workers is None and self.prefetch is None:
            return "**air_magics defaults**"
        return (f"air_magics num_workers={self.workers if self.workers is not None else 'default'}, "
                f"prefetch={self.prefetch or 'default'}" + (f", prefetch_factor={self.prefetch_factor}" if self.prefetch_factor else ""))


def parse_configs(text: str) -> list[Config]:
    out = []
    for tok in [t.strip() for t in text.split(",") if t.strip()]:
        kind, _, arg = tok.partition(":")
        if kind not in ("ref", "torch", "air"):
            raise SystemExit(f"--configs: unknown kind in {tok!r}: use ref:N|ref:default, torch:N, air:WxP[xF]|air:default")
        workers = prefetch = pf = None
        try:
            if kind == "air" and arg and arg != "default":
                w, _, rest = arg.partition("x")
                p, _, f = rest.partition("x")
                workers, prefetch, pf = int(w), (int(p) if p else None), (int(f) if f else None)
            elif kind != "air" and arg and arg != "default":
                workers = int(arg)
            elif kind == "torch":
                workers = 8
        except ValueError:
            raise SystemExit(f"--configs: cannot parse {tok!r}") from None
        out.append(Config(tok if arg else f"{kind}:default", kind, workers, prefetch, pf))
    return out


def make_dataset(backing: Path, files: int, size: int, seed: int = 0) -> None:
    top = backing.joinpath(*VOLUME, TOP)
    top.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for i in range(files):
        (top / f"f{i:05d}.bin").write_bytes(rng.randbytes(size))




def _proc_cpu(pid: int) -> float:
    import psutil

    try:
        p = psutil.Process(pid)
        ct = p.cpu_times()
        return ct.user + ct.system + ct.children_user + ct.children_system
    except psutil.Error:
        return float("nan")


def _own_lineage() -> set[int]:
    import psutil

    pids, p = {os.getpid()}, psutil.Process()
    for a in p.parents():
        pids.add(a.pid)
    return pids


def other_bench_pids(pattern: str = "bench_copy.py") -> list[int]:
    """PIDs that ``pgrep -f bench_copy.py`` finds, minus this process and its ancestors."""
    try:
        out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return []
    mine = _own_lineage()
    return [int(x) for x in out.split() if x.strip().isdigit() and int(x) not in mine]


def wait_turn(quiet_below: float, quiet_wait: float, bench_wait: float) -> float:
    """Wait while another bench_copy.py runs, then (up to quiet_wait s) until the CPUs are mostly idle."""
    deadline = time.monotonic() + bench_wait
    said = False
    while (pids := other_bench_pids()) and time.monotonic() < deadline:
        if not said:
            print(f"  (bench_copy.py running: pids {pids}; waiting for it to finish)", file=sys.stderr, flush=True)
            said = True
        time.sleep(5)
    if pids:
        print(f"  (bench_copy.py still running after {bench_wait:.0f} s; measuring anyway)", file=sys.stderr, flush=True)
    busy = cpu_busy()
    deadline = time.monotonic() + quiet_wait
    while quiet_wait > 0 and busy > quiet_below and time.monotonic() < deadline:
        print(f"  (machine {busy:.0%} busy; waiting for it to calm down)", file=sys.stderr, flush=True)
        time.sleep(2)
        busy = cpu_busy()
    return busy


@contextlib.contextmanager
def volumes_link(link: Path, target: Path):
    """Create symlink *link* -> *target* for the with-block and always remove it (only if it is ours)."""
    if os.path.lexists(link):
        raise SystemExit(f"{link} already exists; pass another --volumes-link (the script never replaces an existing path)")
    os.symlink(target, link)
    try:
        yield link
    finally:
        with contextlib.suppress(OSError):
            if os.path.islink(link) and os.readlink(link) == str(target):
                os.unlink(link)


def resource_self() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def tree_pss(root_pid: int) -> tuple[int, int]:
    """Sum of PSS over *root_pid* and all its descendants, and how many processes were read."""
    import psutil

    try:
        root = psutil.Process(root_pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0, 0
    total = n = 0
    for p in procs:
        try:
            total += p.memory_full_info().pss
            n += 1
        except psutil.Error:
            pass
    return total, n


class PssSampler(threading.Thread):
    """Samples ``tree_pss`` every *interval* s from a thread at nice 19, so the measured processes keep the CPUs.

    Reading one process's PSS costs the kernel a page-table walk (about 2.4 ms for a process that imported
    torch), so a sweep over 49 processes takes about 0.1 s; the sampler then simply runs less often.
    """

    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(name="pss-sampler", daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, int, int]] = []
        self.others_seen: set[int] = set()  # bench_copy.py processes seen while measuring
        self._halt = threading.Event()

    def run(self) -> None:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # this thread only (Linux)
        next_check = 0.0
        while not self._halt.is_set():
            t = time.monotonic()
            if t >= next_check:
                self.others_seen.update(other_bench_pids())
                next_check = t + 2.0
            pss, n = tree_pss(self.pid)
            if n:
                self.samples.append((t, pss, n))
            self._halt.wait(max(0.0, self.interval - (time.monotonic() - t)))

    def finish(self) -> list[tuple[float, int, int]]:
        self._halt.set()
        self.join()
        return self.samples


@dataclass
class Result:
    latency_ms: float
    rep: int
    config: str
    ok: bool
    error: str = ""
    setup_s: float = float("nan")
    cold_s: float = float("nan")
    warm_s: float = float("nan")
    cold_first_s: float = float("nan")
    warm_first_s: float = float("nan")
    peak_pss: int = 0          # whole subprocess lifetime (import .. exit)
    peak_pss_cold: int = 0
    peak_pss_warm: int = 0
    base_pss: int = 0          # after imports, before setup
    max_procs: int = 0
    samples: int = 0
    sample_period_ms: float = 0.0
    cpu_s: float = float("nan")
    server_cpu_s: float = float("nan")
    requests: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    busy_before: float = 0.0
    wall_s: float = float("nan")          # the child's whole life (import .. exit)
    child_cpu_s: float = float("nan")     # the child's whole tree, whole life (wait4 rusage)
    foreign_cores: float = float("nan")   # CPU used meanwhile by anything else, in cores (see --max-foreign)
    disturbed: str = ""
    attempt: int = 1


class Bench:
    def __init__(self, a, slowfs, work: Path, link: Path):
        self.a, self.slowfs, self.work, self.link = a, slowfs, work, link
        self.backing, self.mnt = work / "backing", work / "mnt"
        self.results: list[Result] = []

    def spec(self, cfg: Config, run_dir: Path) -> dict:
        rel = "/".join((*VOLUME, TOP))
        return {"kind": cfg.kind, "workers": cfg.workers, "prefetch": cfg.prefetch, "prefetch_factor": cfg.prefetch_factor,
                "ref_path": f"{self.link}/{rel}", "air_path": f"/Volumes/{rel}", "naive_path": f"{self.link}/{rel}",
                "result_file": str(run_dir / "result.json")}

    def measure(self, latency: float, rep: int, cfg: Config) -> Result:
        """One measurement; repeated (up to --retries times) when something else used the CPUs meanwhile."""
        for attempt in range(1, self.a.retries + 2):
            res = self.measure_once(latency, rep, cfg)
            res.attempt = attempt
            if not res.disturbed or attempt > self.a.retries:
                break
            print(f"  (disturbed: {res.disturbed}; measuring again)", file=sys.stderr, flush=True)
        self.results.append(res)
        if self.a.json:  # keep what we have even if the run is interrupted later
            Path(self.a.json).write_text(json.dumps({"args": vars(self.a), "results": [asdict(r) for r in self.results]},
                                                    indent=1, default=str))
        return res

    def measure_once(self, latency: float, rep: int, cfg: Config) -> Result:
        a = self.a
        run_dir = self.work / "runs" / f"{cfg.name.replace(':', '-')}-{latency:g}ms-{rep}"
        shutil.rmtree(run_dir, ignore_errors=True)
        (run_dir / "tmp").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AIR_", "MLFLOW_", "SGC_")) and k not in ("PYTHONPATH",)}
        env.update(TMPDIR=str(run_dir / "tmp"), AIR_HOME=str(run_dir / "air_home"), AIR_VOLUMES_MOUNT=str(self.link),
                   PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        if cfg.kind == "air":
            env["PYTHONPATH"] = str(REPO)  # the working tree, even if the venv has another install
        python = a.ref_python if cfg.kind == "ref" else a.python
        spec = self.spec(cfg, run_dir)
        os.sync()  # no writeback of the previous run's cache during this one
        busy = wait_turn(a.quiet_below, a.quiet_wait, a.bench_wait)
        stats = run_dir / "slowfs-stats.json"
        res = Result(latency, rep, cfg.name, ok=False, busy_before=busy)
        with self.slowfs.mounted(self.backing, self.mnt, stats=stats, op_latency_ms=latency, read_latency_ms=latency,
                                 engine="c", attr_timeout=a.cache_timeout, entry_timeout=a.cache_timeout) as server_pid:
            log = open(run_dir / "child.log", "wb")
            t_start, busy0, srv0 = time.monotonic(), machine_busy_seconds(), _proc_cpu(server_pid)
            self0 = resource_self()
            proc = subprocess.Popen([python, str(Path(__file__).resolve()), "--_child", json.dumps(spec)],
                                    env=env, cwd=str(run_dir), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            sampler = PssSampler(proc.pid, a.sample_ms / 1000)
            sampler.start()
            status, rusage = None, None
            deadline = time.monotonic() + a.child_timeout
            try:
                while True:
                    pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        status, rusage = st, ru
                        break
                    if time.monotonic() > deadline:
                        os.killpg(proc.pid, signal.SIGKILL)
                        _, status, rusage = os.wait4(proc.pid, 0)
                        res.error = f"timed out after {a.child_timeout:.0f} s"
                        break
                    time.sleep(0.05)
            except BaseException:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(proc.pid, 0)
                raise
            finally:
                wall, busy1, srv1 = time.monotonic() - t_start, machine_busy_seconds(), _proc_cpu(server_pid)
                self1 = resource_self()
                samples = sampler.finish()
                proc.returncode = os.waitstatus_to_exitcode(status) if status is not None else -9
                log.close()
                # reap stragglers of the child's session (a crashed child may leave workers behind)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        res.server_cpu_s = srv1
        res.wall_s = wall
        if rusage is not None:
            res.child_cpu_s = rusage.ru_utime + rusage.ru_stime
            ours = res.child_cpu_s + (srv1 - srv0) + (self1 - self0)
            res.foreign_cores = max(0.0, (busy1 - busy0) - ours) / max(wall, 1e-3)
        why = []
        if res.foreign_cores == res.foreign_cores and res.foreign_cores > a.max_foreign:
            why.append(f"{res.foreign_cores:.2f} cores used by other processes")
        if sampler.others_seen:
            why.append(f"bench_copy.py ran meanwhile (pids {sorted(sampler.others_seen)})")
        res.disturbed = "; ".join(why)
        try:
            res.requests = json.loads(stats.read_text()).get("ops", {})
        except (OSError, ValueError):
            pass
        res.samples = len(samples)
        if len(samples) > 1:
            res.sample_period_ms = (samples[-1][0] - samples[0][0]) / (len(samples) - 1) * 1000
        res.peak_pss = max((s[1] for s in samples), default=0)
        res.max_procs = max((s[2] for s in samples), default=0)
        rf = run_dir / "result.json"
        if proc.returncode == 0 and rf.exists():
            out = json.loads(rf.read_text())
            m, ep = out["marks"], out["epochs"]
            res.setup_s = m["setup"] - m["imported"]
            res.cold_s, res.warm_s = ep[0]["seconds"], ep[1]["seconds"]
            res.cold_first_s, res.warm_first_s = ep[0]["first_item"] or float("nan"), ep[1]["first_item"] or float("nan")
            res.cpu_s = out["cpu_s"]
            res.info = out["info"]

            def peak(t0, t1):
                return max((s[1] for s in samples if t0 <= s[0] <= t1), default=0)

            res.peak_pss_cold = peak(m["epoch0_start"], m["epoch0_end"])
            res.peak_pss_warm = peak(m["epoch1_start"], m["epoch1_end"])
            before = [s[1] for s in samples if s[0] <= m["setup"]]
            res.base_pss = before[-1] if before else 0
            want_bytes = a.files * a.size_kib * 1024
            res.checks = {f"epoch{i}": {"items": e["items"], "bytes_ok": e["bytes"] == want_bytes,
                                        "distinct": e["distinct_names"], "types": e["item_types"]} for i, e in enumerate(ep)}
            res.ok = all(e["items"] == a.files and e["bytes"] == want_bytes
                         and (e["distinct_names"] is None or e["distinct_names"] == a.files) for e in ep)
            if not res.ok:
                res.error = f"wrong items: {res.checks}"
        else:
            tail = (run_dir / "child.log").read_bytes()[-2000:].decode(errors="replace")
            res.error = res.error or f"exit {proc.returncode}: {tail}"
        if not res.ok or a.keep_logs:
            keep = self.work / "failed" if not res.ok else self.work / "logs"
            keep.mkdir(exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy(run_dir / "child.log", keep / f"{run_dir.name}.log")
        shutil.rmtree(run_dir, ignore_errors=True)  # the cache: hundreds of MB per run
        req = sum(n for op, n in res.requests.items() if op != "release") / a.files
        f = a.files
        print(f"  [{latency:g} ms rep {rep + 1}] {cfg.name:<12} setup {res.setup_s:5.2f} s  first {res.cold_first_s:5.2f} s  "
              f"cold {f / res.cold_s:7.0f} files/s  warm {f / res.warm_s:7.0f} files/s  peak PSS {res.peak_pss / 2**20:6.0f} MiB "
              f"({res.max_procs} procs)  CPU {res.cpu_s:5.1f} s  req/file {req:.1f}  busy-before {busy:.0%}  "
              f"foreign {res.foreign_cores:.2f} cores"
              + ("" if res.ok else f"  FAILED: {res.error[:400]}"), file=sys.stderr, flush=True)
        return res

    def run(self, configs: list[Config]) -> None:
        for latency in self.a.latencies:
            for rep in range(self.a.reps):
                k = rep % len(configs)
                for cfg in configs[k:] + configs[:k]:  # rotate the order per rep
                    self.measure(latency, rep, cfg)


# =========================================================================== report

def report(results: list[Result], configs: list[Config], a) -> str:
    files = a.files
    mib = 2 ** 20
    out = []
    summary = {}
    for lat in sorted({r.latency_ms for r in results}):
        rows = {}
        for cfg in configs:
            rs = [r for r in results if r.latency_ms == lat and r.config == cfg.name]
            good = [r for r in rs if r.ok]
            if not rs:
                continue
            rows[cfg.name] = {
                "cfg": cfg, "n": len(rs), "failed": len(rs) - len(good),
                "setup": med([r.setup_s for r in good]),
                "first": med([r.cold_first_s for r in good]), "first_max": max((r.cold_first_s for r in good), default=float("nan")),
                "cold": files / med([r.cold_s for r in good]) if good else float("nan"),
                "warm": files / med([r.warm_s for r in good]) if good else float("nan"),
                "warm_first": med([r.warm_first_s for r in good]),
                "pss": med([r.peak_pss for r in good]) / mib if good else float("nan"),
                "pss_cold": med([r.peak_pss_cold for r in good]) / mib if good else float("nan"),
                "base": med([r.base_pss for r in good]) / mib if good else float("nan"),
                "procs": max((r.max_procs for r in good), default=0),
                "cpu": med([r.cpu_s for r in good]),
                "srv": med([r.server_cpu_s for r in good]),
                "req": med([sum(n for op, n in r.requests.items() if op != "release") / files for r in good]),
                "foreign": med([r.foreign_cores for r in good]),
                "retried": sum(1 for r in rs if getattr(r, "attempt", 1) > 1),
                "cold_range": (files / max((r.cold_s for r in good), default=float("nan")) if good else float("nan"),
                               files / min((r.cold_s for r in good), default=float("nan")) if good else float("nan")),
            }
        refs = [n for n, v in rows.items() if v["cfg"].kind == "ref" and v["cold"] == v["cold"]]
        best_cold = max(refs, key=lambda n: rows[n]["cold"]) if refs else None
        best_warm = max(refs, key=lambda n: rows[n]["warm"]) if refs else None
        summary[lat] = {"rows": rows, "best_cold": best_cold, "best_warm": best_warm}
        out.append(f"\n### op and read latency {lat:g} ms ({files} files x {a.size_kib} KiB in one folder, "
                   f"{a.reps} interleaved rep(s), medians)\n")
        if best_cold:
            out.append(f"Reference's best: cold `{best_cold}`, warm `{best_warm}`. x ref = this files/s / the reference's "
                       f"best files/s; PSS / ref = this peak PSS / the peak PSS of `{best_cold}`.\n")
        out.append("| loader | setup s | first item s | cold files/s (min-max) | cold x ref | warm files/s | warm x ref | "
                   "warm first item s | peak PSS MiB (during cold) | PSS / ref | procs | CPU s | FUSE req/file | other CPU |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, v in rows.items():
            xc = v["cold"] / rows[best_cold]["cold"] if best_cold else float("nan")
            xw = v["warm"] / rows[best_warm]["warm"] if best_warm else float("nan")
            xp = v["pss"] / rows[best_cold]["pss"] if best_cold else float("nan")
            fail = f" ({v['failed']}/{v['n']} runs FAILED)" if v["failed"] else ""
            warm_note = " (no cache: reads the volume again)" if v["cfg"].kind == "torch" else ""
            out.append(f"| {v['cfg'].label} `{name}`{fail} | {fmt(v['setup'])} | {fmt(v['first'])} | "
                       f"{fmt(v['cold'], ',.0f')} ({fmt(v['cold_range'][0], ',.0f')}-{fmt(v['cold_range'][1], ',.0f')}) | "
                       f"{fmt(xc)}x | {fmt(v['warm'], ',.0f')}{warm_note} | {fmt(xw)}x | {fmt(v['warm_first'])} | "
                       f"{fmt(v['pss'], ',.0f')} ({fmt(v['pss_cold'], ',.0f')}) | {fmt(xp)} | {v['procs']} | "
                       f"{fmt(v['cpu'], '.1f')} | {fmt(v['req'], '.1f')} | {fmt(v['foreign'])} |")
        # targets, per air_magics configuration
        if best_cold:
            out.append("")
            rb = rows[best_cold]
            for name, v in rows.items():
                if v["cfg"].kind != "air":
                    continue
                xc, xw = v["cold"] / rb["cold"], v["warm"] / rows[best_warm]["warm"]
                xp = v["pss"] / rb["pss"]
                min_ref_pss = min(rows[n]["pss"] for n in refs)
                t = [f"cold {xc:.2f}x ({'MET' if xc >= 2 else 'MISSED'} >= 2x)",
                     f"peak PSS {xp:.2f} of `{best_cold}`'s ({'MET' if xp <= 0.25 else 'MISSED'} <= 1/4; "
                     f"{v['pss'] / min_ref_pss:.2f} of the leaner reference's)",
                     f"warm {xw:.2f}x ({'MET' if xw >= 1.5 else 'MISSED'} >= 1.5x)",
                     f"first item {v['first']:.2f} s, worst rep {v['first_max']:.2f} s "
                     f"({'MET' if v['first_max'] < 0.5 else 'MISSED'} < 0.5 s)"]
                out.append(f"- `{name}`: " + "; ".join(t))
    out.append("\nsetup = building the dataset and loader (the listing); first item = from `iter(loader)` to the first "
               "item of the cold epoch; files/s = files / epoch seconds (from `iter()` to the last item, worker start "
               "included); peak PSS = the largest sum of PSS over the measured process and all its children, over its "
               "whole life (import, setup, both epochs), in parentheses during the cold epoch; procs = most processes "
               "in that tree; CPU s = user + system seconds of the tree for setup and both epochs; FUSE req/file = "
               "slowfs requests (release excluded) per file over setup and both epochs; other CPU = median cores "
               "busy outside the measured tree, the slowfs server and the harness while it ran (other users of the "
               "machine, and kernel threads such as writeback of the cache files); a measurement above "
               "--max-foreign is repeated up to --retries times and the last attempt kept.")
    return "\n".join(out)


def git_describe() -> str:
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "air_magics"],
                               capture_output=True, text=True).stdout.strip()
        return head + (" with uncommitted changes in air_magics/" if dirty else "")
    except OSError:
        return "unknown"


def header(a) -> str:
    return (f"## bench_loader: {a.files} files x {a.size_kib} KiB in one folder, slowfs C engine (op latency = read "
            f"latency), attr/entry timeout {a.cache_timeout:g} s, fresh mount and empty cache per measurement, "
            f"{a.reps} interleaved rep(s), medians; {os.cpu_count()} CPUs; air_magics at {getattr(a, 'commit', 'unknown')}")


def report_from_json(path: str) -> int:
    d = json.loads(Path(path).read_text())
    a = argparse.Namespace(**d["args"])
    names = set(Result.__dataclass_fields__)
    results = [Result(**{k: v for k, v in r.items() if k in names}) for r in d["results"]]
    print(header(a))
    print(report(results, parse_configs(a.configs), a))
    return 0


# =========================================================================== main

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, help="number of files (default 3000; --quick 300)")
    p.add_argument("--size-kib", type=int, default=150, help="file size in KiB (default 150)")
    p.add_argument("--reps", type=int, help="interleaved repetitions (default 3; --quick 1)")
    p.add_argument("--latencies", help="comma-separated op (= read) latencies in ms (default 2,10; --quick 2)")
    p.add_argument("--configs", default=DEFAULT_CONFIGS,
                   help=f"comma-separated loaders: ref:default|ref:N, torch:N, air:default|air:WxP|air:WxPxF (default {DEFAULT_CONFIGS})")
    p.add_argument("--quick", action="store_true", help="small smoke run: 300 files, 2 ms, 1 rep")
    p.add_argument("--ref-python", default="/tmp/refvenv/bin/python",
                   help="interpreter of the venv holding databricks-sdk-air[data] (default /tmp/refvenv/bin/python)")
    p.add_argument("--python", default=sys.executable, help="interpreter for air_magics and plain torch (default: this one)")
    p.add_argument("--volumes-link", help="symlink to the mount that the reference reads through; its path must start "
                   "with /Volumes (default /Volumes-air-bench-<pid>; removed at the end)")
    p.add_argument("--sample-ms", type=float, default=50.0, help="PSS sampling interval in ms (default 50)")
    p.add_argument("--cache-timeout", type=float, default=1.0, help="slowfs attr/entry timeout in s (default 1)")
    p.add_argument("--max-foreign", type=float, default=0.3,
                   help="a measurement during which other processes used more than this many cores on average (or "
                   "during which bench_copy.py ran) is repeated (default 0.3)")
    p.add_argument("--retries", type=int, default=3, help="how often a disturbed measurement is repeated (default 3)")
    p.add_argument("--child-timeout", type=float, default=900.0, help="seconds before a measurement is killed (default 900)")
    p.add_argument("--quiet-wait", type=float, default=120.0,
                   help="before each measurement wait up to this many seconds for the CPUs to be idle (0 = don't)")
    p.add_argument("--quiet-below", type=float, default=0.15, help="busy fraction counted as idle (default 0.15)")
    p.add_argument("--bench-wait", type=float, default=7200.0,
                   help="wait up to this many seconds while another bench_copy.py runs (default 7200)")
    p.add_argument("--workdir", help="where to put data, mount and caches (default: a new temp dir; local disk)")
    p.add_argument("--keep", action="store_true", help="keep the work dir")
    p.add_argument("--keep-logs", action="store_true", help="keep every child's log under WORKDIR/logs (implies --keep)")
    p.add_argument("--json", help="write every measurement as JSON here")
    p.add_argument("--slowfs", default=str(REPO.parent / "shared" / "tools" / "slowfs.py"),
                   help="path of slowfs.py (default ../shared/tools/slowfs.py)")
    p.add_argument("--report", metavar="JSON", help="only print the report of a saved --json file")
    p.add_argument("--_child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._child:
        return child_main(json.loads(a._child))
    if a.report:
        return report_from_json(a.report)

    q = a.quick
    a.files = a.files or (300 if q else 3000)
    a.reps = a.reps or (1 if q else 3)
    a.latencies = [float(x) for x in (a.latencies or ("2" if q else "2,10")).split(",")]
    a.keep = a.keep or a.keep_logs
    configs = parse_configs(a.configs)
    if any(c.kind == "ref" for c in configs) and not os.access(a.ref_python, os.X_OK):
        raise SystemExit(f"--ref-python {a.ref_python} not found; create it (see --help) or drop the ref:* configs")
    link = Path(a.volumes_link or f"/Volumes-air-bench-{os.getpid()}")
    if not str(link).startswith("/Volumes"):
        raise SystemExit(f"--volumes-link {link}: the reference accepts only paths that start with /Volumes")

    a.commit = git_describe()
    slowfs = load_slowfs(Path(a.slowfs))
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="air-bench-loader-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "mnt").mkdir(exist_ok=True)

    def on_term(signum, _frame):  # run the finally blocks: unmount, remove the link
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    try:
        print(f"writing {a.files} files x {a.size_kib} KiB into {work / 'backing'} ...", file=sys.stderr, flush=True)
        shutil.rmtree(work / "backing", ignore_errors=True)
        make_dataset(work / "backing", a.files, a.size_kib * 1024)
        os.sync()
        bench = Bench(a, slowfs, work, link)
        t0 = time.perf_counter()
        with volumes_link(link, work / "mnt"):
            bench.run(configs)
        print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        print(header(a))
        print(report(bench.results, configs, a))
        if a.json:
            Path(a.json).write_text(json.dumps({"args": vars(a), "results": [asdict(r) for r in bench.results]},
                                               indent=1, default=str))
        return 0 if all(r.ok for r in bench.results) else 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
