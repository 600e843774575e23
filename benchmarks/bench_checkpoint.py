#!/usr/bin/env python3
"""Benchmark: torch.distributed.checkpoint save / load / async_save on a slow FUSE volume.

Compares, on a slowfs volume (../shared/tools/slowfs.py, C engine) with a fixed per-request latency,
these ways to write and read a DCP checkpoint (``--methods``):

  plain   torch's own ``dcp.FileSystemWriter(MNT/main/bench/vol/ckpt/...)`` / ``FileSystemReader``
          pointed straight at the mount, torch defaults (one file per rank, thread_count=1, fsync on)
  ref     the reference ``databricks.air.data.UCVolumeWriter`` / ``UCVolumeReader`` on
          ``/Volumes/main/bench/vol/ckpt/...`` (run from its own venv, ``--ref-python``)
  air     ``air_magics.data.UCVolumeWriter`` / ``UCVolumeReader`` on ``/Volumes/main/bench/vol/ckpt/...``
          (``AIR_VOLUMES_MOUNT=MNT``), defaults; its load is measured with a cold cache and again warm
  mgr     ``air_magics.data.CheckpointManager("/Volumes/main/bench/vol/mgr")``: ``save(1, state)``,
          ``load(state, 1)``, ``save(2, state, blocking=False)`` + ``wait()``

The state is ``{"model": {...}, "step": tensor}``, the model part float32 tensors shaped like a
transformer with hidden size 768: per layer four large matrices (2.4-9.4 MB) and eight small vectors
(3-12 KB), as many layers as fill 90% of the requested size, and an embedding (vocab x 768) sized to
make up the rest. 200 MB is 6 layers + a 9.8k-row embedding (76 tensors), 1000 MB 31 layers + 39.4k rows
(376 tensors). Throughputs divide the exact tensor bytes, in MB of 10^6 bytes.

Each measurement (one method, one size, one rep) runs in its own subprocess with its own environment:
a fresh, empty backing directory and a fresh slowfs mount, a fresh ``AIR_HOME`` (so air_magics's load
cache is cold) and a fresh ``TMPDIR`` (the reference's staging and read cache). In the subprocess, after
imports and an untimed warm-up (a tiny save + load to local disk, so lazy imports are not timed):

  save     ``dcp.save(state, storage_writer=W(dir))``, writer construction included
  load     ``dcp.load(zeros, storage_reader=R(dir))`` into zeroed tensors of the same shapes, then
           checked bit-exact against the saved state (untimed)
  warm     (air only) the same load again in the same process and AIR_HOME: the cache is warm
  async    ``fut = dcp.async_save(state, storage_writer=W(dir2))``: *blocked* = until it returns;
           the caller then zeroes one large tensor of the live state (to prove the save staged a copy),
           ``fut.result()``: *total*; the tensor is restored

Every checkpoint written (sync and async) is also read back untimed with plain ``FileSystemReader`` from
the backing directory (local disk, not through FUSE) and checked bit-exact, so what lands on the volume is
verified independently of each method's own reader. ``os.sync()`` runs (untimed) before each timed step.

The reference reads and writes real ``/Volumes/...`` paths. For its runs the harness creates the symlink
``--volumes-link`` (default ``/Volumes``) -> the mount, only for the life of that one subprocess, and
removes it right after (only if it is still our link). Before creating ``/Volumes`` it waits until no
``/Volumes`` exists and ``pgrep -f bench_loader.py`` finds nothing; it never deletes a ``/Volumes`` it did
not create. (The reference only checks that the path *string* starts with ``/Volumes``, so
``--volumes-link /Volumes-ckpt-bench`` works too and never touches ``/Volumes``.)

Repetitions are interleaved: each rep runs every method once per size, the order rotated per rep;
the report shows medians and ratios of medians. Before each measurement the harness waits while another
benchmark script runs and until the CPUs are mostly idle; a measurement during which other processes used
more than ``--max-foreign`` cores is repeated.

    .venv/bin/python benchmarks/bench_checkpoint.py --quick            # 50 MB, 1 rep (~1-2 min)
    .venv/bin/python benchmarks/bench_checkpoint.py                    # 200 and 1000 MB, 3 reps
    .venv/bin/python benchmarks/bench_checkpoint.py --sizes-mb 200 --reps 1 --methods plain,air

The reference lives in its own venv, never in this project's:
    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install torch==2.13.0 'databricks-sdk-air[data]'

Progress goes to stderr, the markdown report to stdout; ``--json FILE`` saves every measurement. The exit
status is 1 if any measurement failed or any load was not bit-exact. Needs root (or fuse access),
/dev/fuse, fuse3, and gcc + pkg-config + libfuse3-dev for slowfs's C engine.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from _common import cpu_busy, fmt, load_slowfs, machine_busy_seconds, med  # noqa: E402  (benchmarks/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
VOLUME = ("main", "bench", "vol")  # catalog, schema, volume
METHODS = ("plain", "ref", "air", "mgr")
LABELS = {
    "plain": "torch `FileSystemWriter`/`Reader` on the mount",
    "ref": "reference `databricks.air.data`",
    "air": "air_magics `UCVolumeWriter`/`Reader`",
    "air-warm": "air_magics, warm cache (load only)",
    "mgr": "air_magics `CheckpointManager`",
}
OTHER_BENCHES = ("bench_loader.py", "bench_copy.py", "bench_tables.py")
HIDDEN = 768


# =========================================================================== child (one measurement)
# Runs in its own interpreter (the reference's venv or this project's); imports only what it measures.

def _cpu_self() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build_state(target_mb: float, seed: int = 0):
    """A transformer-like dict of float32 tensors of about *target_mb* MB (10^6 bytes): an embedding of
    ``vocab`` x ``hidden`` (~10% of the bytes), then per layer four large matrices and eight small vectors."""
    import math

    import torch

    d = HIDDEN if target_mb >= 40 else 256
    per_layer = (12 * d * d + 13 * d) * 4  # qkv 3d x d, out d x d, fc1 4d x d, fc2 d x 4d + biases and norms
    layers = max(1, math.floor(0.9 * target_mb * 1e6 / per_layer))
    v = max(256, round((target_mb * 1e6 - layers * per_layer - 2 * d * 4) / (d * 4)))
    g = torch.Generator().manual_seed(seed)

    def t(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32)

    model = {"embed.weight": t(v, d)}
    for i in range(layers):
        p = f"layers.{i}."
        model.update({
            p + "norm1.weight": t(d), p + "norm1.bias": t(d),
            p + "attn.qkv.weight": t(3 * d, d), p + "attn.qkv.bias": t(3 * d),
            p + "attn.out.weight": t(d, d), p + "attn.out.bias": t(d),
            p + "norm2.weight": t(d), p + "norm2.bias": t(d),
            p + "mlp.fc1.weight": t(4 * d, d), p + "mlp.fc1.bias": t(4 * d),
            p + "mlp.fc2.weight": t(d, 4 * d), p + "mlp.fc2.bias": t(d),
        })
    model["final_norm.weight"], model["final_norm.bias"] = t(d), t(d)
    return {"model": model, "step": torch.tensor(1000, dtype=torch.int64)}


def _tensors(state, prefix=""):
    for k, v in state.items():
        if isinstance(v, dict):
            yield from _tensors(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def _zeros_like(state):
    import torch

    return {k: _zeros_like(v) if isinstance(v, dict) else torch.zeros_like(v) for k, v in state.items()}


def _zero(state) -> None:
    for _, v in _tensors(state):
        v.zero_()


def bit_exact(a, b) -> str:
    """'' if every tensor of *a* equals *b*'s bit for bit, else what differs."""
    import torch

    ta, tb = dict(_tensors(a)), dict(_tensors(b))
    if ta.keys() != tb.keys():
        return f"keys differ: {sorted(ta.keys() ^ tb.keys())[:5]}"
    bad = []
    for k, x in ta.items():
        y = tb[k]
        if x.dtype != y.dtype or x.shape != y.shape:
            bad.append(f"{k}: {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}")
        elif not torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)):
            bad.append(f"{k}: values differ")
    return "; ".join(bad[:5]) + (f" (+{len(bad) - 5} more)" if len(bad) > 5 else "")


def _stats(path: str) -> dict:
    time.sleep(0.35)  # slowfs rewrites its stats file every 0.25 s while it changes
    try:
        s = json.loads(Path(path).read_text())
        return {"ops": s.get("ops", {}), "bytes_read": s.get("bytes_read", 0), "bytes_written": s.get("bytes_written", 0),
                "peak_inflight": s.get("peak_inflight", 0)}
    except (OSError, ValueError):
        return {"ops": {}, "bytes_read": 0, "bytes_written": 0, "peak_inflight": 0}


def _delta(a: dict, b: dict) -> dict:
    ops = {k: b["ops"].get(k, 0) - a["ops"].get(k, 0) for k in b["ops"]}
    return {"ops": {k: n for k, n in ops.items() if n}, "bytes_read": b["bytes_read"] - a["bytes_read"],
            "bytes_written": b["bytes_written"] - a["bytes_written"]}


def _dir_files(path: Path) -> dict:
    files = [p for p in path.rglob("*") if p.is_file()]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files),
            "largest": max((p.stat().st_size for p in files), default=0)}


def child_main(spec: dict) -> int:
    import warnings

    warnings.filterwarnings("ignore")  # DCP warns on every single-process save/load
    marks = {"start": time.monotonic()}
    import torch
    import torch.distributed.checkpoint as dcp

    method = spec["method"]
    if method == "ref":
        from databricks.air.data import UCVolumeReader as Reader, UCVolumeWriter as Writer
    elif method in ("air", "mgr"):
        from air_magics.data import CheckpointManager, UCVolumeReader as Reader, UCVolumeWriter as Writer
    else:
        Writer, Reader = dcp.FileSystemWriter, dcp.FileSystemReader
    torch.set_num_threads(int(spec.get("torch_threads", 2)))
    marks["imported"] = time.monotonic()

    out: dict = {"method": method, "phases": {}, "checks": {}, "info": {}}
    result_file = Path(spec["result_file"])

    def dump():
        result_file.write_text(json.dumps(out, indent=1))

    # -- warm-up (untimed): a tiny save and load to local disk through the same DCP code paths
    tiny = {"w": torch.randn(64, 64), "b": torch.randn(64)}
    with tempfile.TemporaryDirectory() as tmp:
        dcp.save(tiny, storage_writer=dcp.FileSystemWriter(tmp))
        dcp.load(_zeros_like(tiny), storage_reader=dcp.FileSystemReader(tmp))

    state = build_state(spec["size_mb"], spec.get("seed", 0))
    nbytes = sum(v.nbytes for _, v in _tensors(state))
    out["info"].update(bytes=nbytes, tensors=sum(1 for _ in _tensors(state)),
                       largest_tensor=max(v.nbytes for _, v in _tensors(state)))
    target = _zeros_like(state)
    base = spec["base"]            # the path the method is given: /Volumes/... or MNT/...
    backing = Path(spec["backing_ckpt"])  # the same folder on the backing disk (for untimed verification)
    stats_file = spec["stats"]

    def timed(name: str, fn):
        os.sync()
        s0 = _stats(stats_file)
        c0, t0 = _cpu_self(), time.perf_counter()
        fn()
        t1, c1 = time.perf_counter(), _cpu_self()
        out["phases"][name] = {"s": t1 - t0, "cpu_s": c1 - c0, **_delta(s0, _stats(stats_file))}
        dump()
        return t1 - t0

    def verify_backing(name: str, rel: str) -> None:
        _zero(target)
        folder = backing / rel
        dcp.load(target, storage_reader=dcp.FileSystemReader(str(folder)))
        out["checks"][f"{name} on volume"] = bit_exact(state, target) or "ok"
        out["info"][f"{name}_files"] = _dir_files(folder)

    def check_loaded(name: str) -> None:
        out["checks"][name] = bit_exact(state, target) or "ok"

    big_key = max(_tensors(state), key=lambda kv: kv[1].nbytes)[0]

    def scribble_then_wait(wait) -> None:
        """After the async call returned: change the live state (a training step would), then wait."""
        flat = dict(_tensors(state))
        keep = flat[big_key].clone()
        flat[big_key].zero_()
        try:
            wait()
        finally:
            flat[big_key].copy_(keep)

    if method == "mgr":
        mgr = CheckpointManager(base, keep=5, show=False)
        timed("save", lambda: mgr.save(1, state))
        verify_backing("save", "step_1")
        _zero(target)
        timed("load", lambda: mgr.load(target, 1))
        check_loaded("load")
        os.sync()
        s0 = _stats(stats_file)
        c0, t0 = _cpu_self(), time.perf_counter()
        mgr.save(2, state, blocking=False)
        t1 = time.perf_counter()
        scribble_then_wait(mgr.wait)
        t2, c2 = time.perf_counter(), _cpu_self()
        out["phases"]["async"] = {"s": t2 - t0, "blocked_s": t1 - t0, "cpu_s": c2 - c0, **_delta(s0, _stats(stats_file))}
        out["info"]["latest"] = mgr.latest()
        verify_backing("async", "step_2")
    else:
        sync_dir, async_dir = f"{base}/sync", f"{base}/async"
        timed("save", lambda: dcp.save(state, storage_writer=Writer(sync_dir)))
        verify_backing("save", "sync")
        _zero(target)
        timed("load", lambda: dcp.load(target, storage_reader=Reader(sync_dir)))
        check_loaded("load")
        if method == "air":
            _zero(target)
            timed("warm", lambda: dcp.load(target, storage_reader=Reader(sync_dir)))
            check_loaded("warm")
        os.sync()
        s0 = _stats(stats_file)
        c0, t0 = _cpu_self(), time.perf_counter()
        fut = dcp.async_save(state, storage_writer=Writer(async_dir))
        t1 = time.perf_counter()
        scribble_then_wait(fut.result)
        t2, c2 = time.perf_counter(), _cpu_self()
        out["phases"]["async"] = {"s": t2 - t0, "blocked_s": t1 - t0, "cpu_s": c2 - c0, **_delta(s0, _stats(stats_file))}
        verify_backing("async", "async")
    marks["end"] = time.monotonic()
    out["marks"] = marks
    out["ok"] = all(v == "ok" for v in out["checks"].values())
    dump()
    return 0


# =========================================================================== harness


def _proc_cpu(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
    except (OSError, ValueError, IndexError):
        return float("nan")


def _own_lineage() -> set[int]:
    pids, pid = {os.getpid()}, os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        pids.add(pid)
    return pids


def other_pids(pattern: str) -> list[int]:
    """PIDs that ``pgrep -f PATTERN`` finds, minus this process and its ancestors."""
    try:
        out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return []
    mine = _own_lineage()
    return [int(x) for x in out.split() if x.strip().isdigit() and int(x) not in mine]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def wait_turn(a) -> float:
    """Wait while another benchmark script runs (up to --bench-wait), then until the CPUs are idle."""
    deadline, said = time.monotonic() + a.bench_wait, False
    while time.monotonic() < deadline:
        running = {p: other_pids(p) for p in OTHER_BENCHES}
        running = {p: v for p, v in running.items() if v}
        if not running:
            break
        if not said:
            log(f"  (waiting: {', '.join(f'{p} pids {v}' for p, v in running.items())} running)")
            said = True
        time.sleep(10)
    busy = cpu_busy(1.0)
    deadline = time.monotonic() + a.quiet_wait
    said = False
    while a.quiet_wait > 0 and busy > a.quiet_below and time.monotonic() < deadline:
        if not said:
            log(f"  (machine {busy:.0%} busy; waiting for it to calm down)")
            said = True
        time.sleep(2)
        busy = cpu_busy(1.0)
    return busy


@contextlib.contextmanager
def volumes_link(link: Path, target: Path, a):
    """Symlink *link* -> *target* for the with-block; removed afterwards only if it is still ours.

    For ``/Volumes``: first wait until it does not exist and ``bench_loader.py`` is not running (the
    loader benchmark may create it too); never replace or delete someone else's path."""
    deadline, said = time.monotonic() + a.bench_wait, False
    while True:
        busy_with = other_pids("bench_loader.py") if str(link) == "/Volumes" else []
        if not os.path.lexists(link) and not busy_with:
            try:
                os.symlink(target, link)
                break
            except FileExistsError:
                pass
        if time.monotonic() > deadline:
            raise SystemExit(f"{link} still exists (or bench_loader.py still runs) after {a.bench_wait:.0f} s; "
                             f"pass another --volumes-link")
        if not said:
            log(f"  (waiting for {link} to be free" + (f"; bench_loader.py pids {busy_with}" if busy_with else "") + ")")
            said = True
        time.sleep(5)
    try:
        yield link
    finally:
        with contextlib.suppress(OSError):
            if os.path.islink(link) and os.readlink(link) == str(target):
                os.unlink(link)


@dataclass
class Result:
    size_mb: float
    rep: int
    method: str
    ok: bool = False
    error: str = ""
    bytes: int = 0
    save_s: float = float("nan")
    load_s: float = float("nan")
    warm_s: float = float("nan")
    async_blocked_s: float = float("nan")
    async_total_s: float = float("nan")
    phases: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    busy_before: float = 0.0
    wall_s: float = float("nan")
    child_cpu_s: float = float("nan")
    server_cpu_s: float = float("nan")
    peak_rss_mib: float = float("nan")
    foreign_cores: float = float("nan")
    disturbed: str = ""
    others: list = field(default_factory=list)  # other benchmark scripts alive meanwhile (maybe idle: see foreign_cores)
    attempt: int = 1


class Bench:
    def __init__(self, a, slowfs, work: Path):
        self.a, self.slowfs, self.work = a, slowfs, work
        self.results: list[Result] = []

    def measure(self, size: float, rep: int, method: str) -> Result:
        res = None
        for attempt in range(1, self.a.retries + 2):
            res = self.measure_once(size, rep, method)
            res.attempt = attempt
            if res.ok and not res.disturbed:
                break
            if res.ok and attempt <= self.a.retries:
                log(f"    disturbed ({res.disturbed}); measuring again")
            elif not res.ok:
                break
        self.results.append(res)
        return res

    def measure_once(self, size: float, rep: int, method: str) -> Result:
        a = self.a
        run_dir = self.work / f"{method}-{size:g}MB-{rep}"
        shutil.rmtree(run_dir, ignore_errors=True)
        backing, mnt = run_dir / "backing", run_dir / "mnt"
        backing.joinpath(*VOLUME).mkdir(parents=True)
        mnt.mkdir()
        (run_dir / "tmp").mkdir()
        link = Path(a.volumes_link)
        rel = "/".join(VOLUME) + ("/mgr" if method == "mgr" else "/ckpt")
        base = {"plain": f"{mnt}/{rel}", "ref": f"{link}/{rel}"}.get(method, f"/Volumes/{rel}")
        stats = run_dir / "slowfs-stats.json"
        spec = {"method": method, "size_mb": size, "seed": 0, "base": base, "backing_ckpt": str(backing / rel),
                "stats": str(stats), "result_file": str(run_dir / "result.json"), "torch_threads": os.cpu_count() or 2}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "SGC_")) and k != "PYTHONPATH"}
        env.update(TMPDIR=str(run_dir / "tmp"), AIR_HOME=str(run_dir / "air_home"), AIR_VOLUMES_MOUNT=str(mnt),
                   PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        if method in ("air", "mgr"):
            env["PYTHONPATH"] = str(REPO)  # the working tree, even if the venv has another install
        python = a.ref_python if method == "ref" else a.python
        res = Result(size, rep, method)
        os.sync()  # no writeback of the previous run during this one
        res.busy_before = wait_turn(a)
        link_cm = volumes_link(link, mnt, a) if method == "ref" else contextlib.nullcontext()
        try:
            with self.slowfs.mounted(backing, mnt, stats=stats, engine="c", op_latency_ms=a.latency_ms,
                                     read_latency_ms=a.rw_latency_ms, write_latency_ms=a.rw_latency_ms,
                                     attr_timeout=a.cache_timeout, entry_timeout=a.cache_timeout) as server_pid:
                with link_cm:
                    logf = open(run_dir / "child.log", "wb")
                    t0, busy0, srv0 = time.monotonic(), machine_busy_seconds(), _proc_cpu(server_pid)
                    self0 = _cpu_self()
                    proc = subprocess.Popen([python, str(Path(__file__).resolve()), "--_child", json.dumps(spec)],
                                            env=env, cwd=str(run_dir), stdin=subprocess.DEVNULL, stdout=logf,
                                            stderr=subprocess.STDOUT, start_new_session=True)
                    status = rusage = None
                    deadline = time.monotonic() + a.child_timeout
                    others: set[int] = set()
                    next_look = 0.0
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
                            if time.monotonic() > next_look:
                                for p in OTHER_BENCHES:
                                    others.update(other_pids(p))
                                next_look = time.monotonic() + 5
                            time.sleep(0.05)
                    except BaseException:
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(proc.pid, signal.SIGKILL)
                        with contextlib.suppress(ChildProcessError):
                            os.waitpid(proc.pid, 0)
                        raise
                    finally:
                        wall, busy1, srv1 = time.monotonic() - t0, machine_busy_seconds(), _proc_cpu(server_pid)
                        self1 = _cpu_self()
                        logf.close()
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the child's session
        except self.slowfs.SlowFSError as exc:
            res.error = f"slowfs: {exc}"
            return res
        res.wall_s = wall
        res.server_cpu_s = srv1 - srv0
        if rusage is not None:
            res.child_cpu_s = rusage.ru_utime + rusage.ru_stime
            res.peak_rss_mib = rusage.ru_maxrss / 1024
            ours = res.child_cpu_s + res.server_cpu_s + (self1 - self0)
            res.foreign_cores = max(0.0, (busy1 - busy0) - ours) / max(wall, 1e-3)
        why = []
        if res.foreign_cores == res.foreign_cores and res.foreign_cores > a.max_foreign:
            why.append(f"{res.foreign_cores:.2f} cores used by other processes")
        res.disturbed = "; ".join(why)
        res.others = sorted(others)
        rc = os.waitstatus_to_exitcode(status) if status is not None else -9
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
        if rc == 0 and out.get("ok"):
            res.ok = True
        else:
            bad = {k: v for k, v in res.checks.items() if v != "ok"}
            tail = (run_dir / "child.log").read_bytes()[-3000:].decode(errors="replace")
            res.error = res.error or (f"not bit-exact: {bad}" if rc == 0 else f"exit {rc}: {tail}")
            keep = self.work.parent / f"{self.work.name}-failed"
            keep.mkdir(exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copy(run_dir / "child.log", keep / f"{run_dir.name}.log")
        if not a.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        mb = res.bytes / 1e6 if res.bytes else size
        log(f"  [{size:g} MB rep {rep + 1}] {method:<5} save {mb / res.save_s:6.1f} MB/s  load {mb / res.load_s:6.1f} MB/s"
            + (f"  warm {mb / res.warm_s:6.1f} MB/s" if res.warm_s == res.warm_s else "")
            + f"  async blocked {res.async_blocked_s:6.2f} s of {res.async_total_s:6.2f} s  busy-before {res.busy_before:.0%}  "
            f"foreign {res.foreign_cores:.2f} cores" + ("" if res.ok else f"  FAILED: {res.error[:600]}"))
        return res

    def run(self, sizes: list[float], methods: list[str]) -> None:
        for size in sizes:
            for rep in range(self.a.reps):
                k = rep % len(methods)
                for m in methods[k:] + methods[:k]:  # rotate the order per rep
                    self.measure(size, rep, m)


# =========================================================================== report

def ratio(x: float, y: float) -> str:
    return "-" if x != x or y != y or y == 0 else f"{x / y:.2f}x"


def summarize(results: list[Result], sizes: list[float], methods: list[str]) -> dict:
    """Per size and row: medians of seconds and the MB/s they give (size / median seconds)."""
    out: dict = {}
    for size in sizes:
        rows = {}
        for m in methods:
            rs = [r for r in results if r.size_mb == size and r.method == m]
            good = [r for r in rs if r.ok]
            if not rs:
                continue
            nbytes = good[0].bytes if good else 0
            mb = nbytes / 1e6
            row = {"n": len(rs), "failed": len(rs) - len(good), "mb": mb}
            for key in ("save_s", "load_s", "warm_s", "async_blocked_s", "async_total_s"):
                xs = [getattr(r, key) for r in good]
                row[key] = med(xs)
                row[key + "_range"] = (min(xs, default=float("nan")), max(xs, default=float("nan")))
            row["save"] = mb / row["save_s"] if good else float("nan")
            row["load"] = mb / row["load_s"] if good else float("nan")
            row["warm"] = mb / row["warm_s"] if good and row["warm_s"] == row["warm_s"] else float("nan")
            row["blocked_frac"] = row["async_blocked_s"] / row["save_s"] if good else float("nan")
            for ph in ("save", "load", "warm", "async"):
                row[f"{ph}_cpu"] = med([r.phases.get(ph, {}).get("cpu_s", float("nan")) for r in good])
                row[f"{ph}_ops"] = {op: med([r.phases.get(ph, {}).get("ops", {}).get(op, 0) for r in good])
                                    for op in sorted({op for r in good for op in r.phases.get(ph, {}).get("ops", {})})}
                row[f"{ph}_wbytes"] = med([r.phases.get(ph, {}).get("bytes_written", float("nan")) for r in good])
                row[f"{ph}_rbytes"] = med([r.phases.get(ph, {}).get("bytes_read", float("nan")) for r in good])
            row["files"] = good[0].info.get("save_files", {}) if good else {}
            row["server_cpu"] = med([r.server_cpu_s for r in good])
            row["rss"] = med([r.peak_rss_mib for r in good])
            row["tensors"] = good[0].info.get("tensors") if good else None
            rows[m] = row
        out[size] = rows
    return out


def report(results: list[Result], sizes: list[float], methods: list[str], a) -> str:
    summ = summarize(results, sizes, methods)
    L = []
    for size, rows in summ.items():
        if not rows:
            continue
        mb = next((r["mb"] for r in rows.values() if r["mb"]), size)
        ntens = next((r["tensors"] for r in rows.values() if r["tensors"]), "?")
        L.append(f"\n### {size:g} MB state ({mb:.1f} MB in {ntens} float32 tensors), op latency {a.latency_ms:g} ms, "
                 f"read/write latency {a.rw_latency_ms:g} ms, {a.reps} interleaved rep(s), medians\n")
        p, r = rows.get("plain"), rows.get("ref")
        L.append("| method | save MB/s | load MB/s | async blocked s (of total s) | blocked / sync save | "
                 "save x plain | save x ref | load x plain | load x ref |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        order = [m for m in METHODS if m in rows]
        for m in order:
            v = rows[m]
            fail = f" ({v['failed']}/{v['n']} runs FAILED)" if v["failed"] else ""
            L.append(f"| {LABELS[m]}{fail} | {fmt(v['save'], '.1f')} | {fmt(v['load'], '.1f')} | "
                     f"{fmt(v['async_blocked_s'])} ({fmt(v['async_total_s'], '.1f')}) | {fmt(v['blocked_frac'] * 100, '.0f')}% | "
                     f"{ratio(v['save'], p['save']) if p else '-'} | {ratio(v['save'], r['save']) if r else '-'} | "
                     f"{ratio(v['load'], p['load']) if p else '-'} | {ratio(v['load'], r['load']) if r else '-'} |")
            if m == "air" and v["warm"] == v["warm"]:
                L.append(f"| {LABELS['air-warm']} | - | {fmt(v['warm'], '.1f')} | - | - | - | - | "
                         f"{ratio(v['warm'], p['load']) if p else '-'} | {ratio(v['warm'], r['load']) if r else '-'} |")
        # detail
        L.append("\nDetail (median seconds, min-max over reps; CPU = user + system seconds of the measured process "
                 "in that step, slowfs server not included; FUSE = requests the step sent to slowfs):\n")
        L.append("| method | save s | load s | async blocked s | async total s | CPU s save / load / async | "
                 "files on volume (largest MB) | FUSE save: writes (avg KiB), other | FUSE load: reads (avg KiB), other | peak RSS MiB |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")

        def rng(v, k):
            lo, hi = v[k + "_range"]
            return f"{fmt(v[k])} ({fmt(lo)}-{fmt(hi)})"

        def fuse(v, ph, op, nb):
            ops = v[f"{ph}_ops"]
            n = ops.get(op, 0)
            other = sum(x for o, x in ops.items() if o not in (op, "release", "read", "write"))
            avg = v[f"{ph}_{nb}"] / n / 1024 if n else float("nan")
            return f"{n:,.0f} ({fmt(avg, ',.0f')}), {other:,.0f}"

        for m in order:
            v = rows[m]
            f = v["files"]
            L.append(f"| {LABELS[m]} | {rng(v, 'save_s')} | {rng(v, 'load_s')}"
                     + (f"; warm {rng(v, 'warm_s')}" if v["warm_s"] == v["warm_s"] else "")
                     + f" | {rng(v, 'async_blocked_s')} | {rng(v, 'async_total_s')} | "
                     f"{fmt(v['save_cpu'], '.1f')} / {fmt(v['load_cpu'], '.1f')} / {fmt(v['async_cpu'], '.1f')} | "
                     f"{f.get('files', '-')} ({fmt(f.get('largest', float('nan')) / 1e6, '.0f')}) | "
                     f"{fuse(v, 'save', 'write', 'wbytes')} | {fuse(v, 'load', 'read', 'rbytes')} | {fmt(v['rss'], ',.0f')} |")
        # targets
        air = rows.get("air")
        if air:
            L.append("\nTargets (air_magics `UCVolumeWriter`/`Reader`):\n")

            def verdict(ok):
                return "**met**" if ok else "**not met**"

            if p:
                x = air["save"] / p["save"]
                L.append(f"- save >= plain writer on the mount: {air['save']:.1f} vs {p['save']:.1f} MB/s = {x:.2f}x: {verdict(x >= 1)}")
            if r:
                x = air["save"] / r["save"]
                L.append(f"- save >= 5x the reference: {air['save']:.1f} vs {r['save']:.1f} MB/s = {x:.2f}x: {verdict(x >= 5)}")
                x = air["load"] / r["load"]
                L.append(f"- load >= 3x the reference: {air['load']:.1f} vs {r['load']:.1f} MB/s = {x:.2f}x: {verdict(x >= 3)}")
            x = air["blocked_frac"]
            L.append(f"- async blocked <= 20% of a synchronous save: {air['async_blocked_s']:.2f} s of {air['save_s']:.2f} s = "
                     f"{x:.0%}: {verdict(x <= 0.2)}")
            if "mgr" in rows:
                g = rows["mgr"]
                L.append(f"- (CheckpointManager: blocked {g['async_blocked_s']:.2f} s of a {g['save_s']:.2f} s synchronous "
                         f"save = {g['blocked_frac']:.0%})")
    bad = [r for r in results if not r.ok]
    L.append(f"\nVerification: {sum(r.ok for r in results)} of {len(results)} measurements ok; every load and every "
             f"checkpoint on the volume compared bit for bit with the saved state"
             + ("; FAILED: " + "; ".join(f"{r.method} {r.size_mb:g} MB rep {r.rep + 1}: {r.error[:200]}" for r in bad)
                if bad else "") + ".")
    dist = [r for r in results if r.disturbed]
    if dist:
        L.append("Kept although disturbed (retries used up): " + "; ".join(
            f"{r.method} {r.size_mb:g} MB rep {r.rep + 1} ({r.disturbed})" for r in dist))
    return "\n".join(L)


# =========================================================================== main

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes-mb", help="comma-separated state sizes in MB (default 200,1000; --quick 50)")
    p.add_argument("--reps", type=int, help="interleaved repetitions (default 3; --quick 1)")
    p.add_argument("--quick", action="store_true", help="smoke run: 50 MB, 1 rep")
    p.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)} (default all)")
    p.add_argument("--latency-ms", type=float, default=2.0, help="slowfs op (metadata) latency in ms (default 2)")
    p.add_argument("--rw-latency-ms", type=float, default=2.0, help="slowfs read and write latency per request (default 2)")
    p.add_argument("--cache-timeout", type=float, default=1.0, help="slowfs attr/entry timeout in s (default 1)")
    p.add_argument("--ref-python", default="/tmp/refvenv/bin/python",
                   help="interpreter of the venv holding databricks-sdk-air[data] (default /tmp/refvenv/bin/python)")
    p.add_argument("--python", default=sys.executable, help="interpreter for air_magics and plain torch (default: this one)")
    p.add_argument("--volumes-link", default="/Volumes",
                   help="symlink to the mount that the reference writes through, created per reference run; must start "
                   "with /Volumes (default /Volumes: waits until it is free, removes it right after)")
    p.add_argument("--quiet-wait", type=float, default=300.0,
                   help="before each measurement wait up to this many seconds for the CPUs to be idle (0 = don't)")
    p.add_argument("--quiet-below", type=float, default=0.3, help="busy fraction (over 1 s) counted as idle (default 0.3)")
    p.add_argument("--bench-wait", type=float, default=7200.0,
                   help="wait up to this many seconds while another benchmark script runs or /Volumes is taken")
    p.add_argument("--max-foreign", type=float, default=0.4,
                   help="repeat a measurement during which other processes used more than this many cores (default 0.4)")
    p.add_argument("--retries", type=int, default=2, help="how often a disturbed measurement is repeated (default 2)")
    p.add_argument("--child-timeout", type=float, default=1200.0, help="seconds before a measurement is killed")
    p.add_argument("--workdir", help="where backing dirs, mounts and caches go (default: a new temp dir on local disk)")
    p.add_argument("--keep", action="store_true", help="keep every run's folder (several GB at 1000 MB)")
    p.add_argument("--json", help="write every measurement as JSON here")
    p.add_argument("--slowfs", default=str(REPO.parent / "shared" / "tools" / "slowfs.py"),
                   help="path of slowfs.py (default ../shared/tools/slowfs.py)")
    p.add_argument("--_child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a._child:
        return child_main(json.loads(a._child))

    sizes = [float(x) for x in (a.sizes_mb or ("50" if a.quick else "200,1000")).split(",")]
    a.reps = a.reps or (1 if a.quick else 3)
    methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    if unknown := set(methods) - set(METHODS):
        raise SystemExit(f"--methods: unknown {sorted(unknown)}; choose from {','.join(METHODS)}")
    if "ref" in methods:
        if not str(a.volumes_link).startswith("/Volumes"):
            raise SystemExit(f"--volumes-link {a.volumes_link}: the reference accepts only paths that start with /Volumes")
        if subprocess.run([a.ref_python, "-c", "import databricks.air.data"], capture_output=True).returncode != 0:
            raise SystemExit(f"--ref-python {a.ref_python} cannot import databricks.air.data; create it (see --help) "
                             f"or drop ref from --methods")
    slowfs = load_slowfs(Path(a.slowfs))
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="air-bench-ckpt-"))
    work.mkdir(parents=True, exist_ok=True)

    def on_term(signum, _frame):  # run the finally blocks: unmount, remove the link
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    bench = Bench(a, slowfs, work)
    try:
        t0 = time.perf_counter()
        log(f"sizes {sizes} MB, methods {methods}, {a.reps} rep(s), op latency {a.latency_ms:g} ms, "
            f"read/write latency {a.rw_latency_ms:g} ms, work dir {work}")
        bench.run(sizes, methods)
        log(f"done in {time.perf_counter() - t0:.0f} s")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        if a.json:
            Path(a.json).write_text(json.dumps({"args": vars(a), "results": [asdict(r) for r in bench.results]},
                                               indent=1, default=str))
    print(f"## bench_checkpoint: DCP save / load / async_save on slowfs (C engine), op latency {a.latency_ms:g} ms, "
          f"read/write latency {a.rw_latency_ms:g} ms per request, attr/entry timeout {a.cache_timeout:g} s; fresh mount, "
          f"fresh AIR_HOME and TMPDIR per measurement; {os.cpu_count()} CPUs")
    print(report(bench.results, sizes, methods, a))
    return 0 if bench.results and all(r.ok for r in bench.results) else 1


if __name__ == "__main__":
    sys.exit(main())
