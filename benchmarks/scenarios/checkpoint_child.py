"""One checkpoint measurement, in its own interpreter: ``python -m benchmarks.scenarios.checkpoint_child SPEC_JSON``.

Runs in this project's venv (torch's own writer, air_magics) or in the reference's venv, so it imports
only the standard library, torch and the writer it measures. After an untimed warm-up it times a
save, a load (air: again with a warm cache) and an ``async_save`` (blocked part and total), checks
every load bit for bit, and reads every checkpoint back from the backing disk to check what landed.
Result: JSON at spec's ``result_file``, rewritten after every step.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

from benchmarks.harness.mounts import read_stats

__all__ = ["HIDDEN", "bit_exact", "build_state", "child_main"]

HIDDEN = 768


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build_state(target_mb: float, seed: int = 0):
    """A transformer-like dict of float32 tensors of about *target_mb* MB (10^6 bytes): an embedding of
    ``vocab`` x ``hidden`` (~10% of the bytes), then per layer four large matrices and eight small vectors."""
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
        model.update(
            {
                p + "norm1.weight": t(d),
                p + "norm1.bias": t(d),
                p + "attn.qkv.weight": t(3 * d, d),
                p + "attn.qkv.bias": t(3 * d),
                p + "attn.out.weight": t(d, d),
                p + "attn.out.bias": t(d),
                p + "norm2.weight": t(d),
                p + "norm2.bias": t(d),
                p + "mlp.fc1.weight": t(4 * d, d),
                p + "mlp.fc1.bias": t(4 * d),
                p + "mlp.fc2.weight": t(d, 4 * d),
                p + "mlp.fc2.bias": t(d),
            }
        )
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
    time.sleep(0.35)  # fusevol rewrites its stats file every 0.25 s while it changes
    return read_stats(path)


def _delta(a: dict, b: dict) -> dict:
    ops = {k: b["ops"].get(k, 0) - a["ops"].get(k, 0) for k in b["ops"]}
    return {
        "ops": {k: n for k, n in ops.items() if n},
        "bytes_read": b["bytes_read"] - a["bytes_read"],
        "bytes_written": b["bytes_written"] - a["bytes_written"],
    }


def _dir_files(path: Path) -> dict:
    files = [p for p in path.rglob("*") if p.is_file()]
    return {
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "largest": max((p.stat().st_size for p in files), default=0),
    }


class _Run:
    """The steps of one measurement, sharing the state, the result document and the stats file."""

    def __init__(self, spec: dict, dcp) -> None:
        self.spec, self.dcp = spec, dcp
        self.out: dict = {"method": spec["method"], "phases": {}, "checks": {}, "info": {}}
        self.state = build_state(spec["size_mb"], spec.get("seed", 0))
        flat = list(_tensors(self.state))
        self.out["info"].update(
            bytes=sum(v.nbytes for _, v in flat), tensors=len(flat), largest_tensor=max(v.nbytes for _, v in flat)
        )
        self.target = _zeros_like(self.state)
        self.backing = Path(spec["backing_ckpt"])  # the same folder on the backing disk (untimed verification)
        self.big_key = max(flat, key=lambda kv: kv[1].nbytes)[0]

    def dump(self) -> None:
        Path(self.spec["result_file"]).write_text(json.dumps(self.out, indent=1))

    def timed(self, name: str, fn) -> None:
        os.sync()
        s0 = _stats(self.spec["stats"])
        c0, t0 = _cpu_self(), time.perf_counter()
        fn()
        t1, c1 = time.perf_counter(), _cpu_self()
        self.out["phases"][name] = {"s": t1 - t0, "cpu_s": c1 - c0, **_delta(s0, _stats(self.spec["stats"]))}
        self.dump()

    def timed_async(self, start, wait) -> None:
        """*start()* returns when the async save lets the caller go on; the caller then changes the live
        state (a training step would) and *wait()*s for the save."""
        os.sync()
        s0 = _stats(self.spec["stats"])
        c0, t0 = _cpu_self(), time.perf_counter()
        handle = start()
        t1 = time.perf_counter()
        flat = dict(_tensors(self.state))
        keep = flat[self.big_key].clone()
        flat[self.big_key].zero_()
        try:
            wait(handle)
        finally:
            flat[self.big_key].copy_(keep)
        t2, c2 = time.perf_counter(), _cpu_self()
        self.out["phases"]["async"] = {
            "s": t2 - t0,
            "blocked_s": t1 - t0,
            "cpu_s": c2 - c0,
            **_delta(s0, _stats(self.spec["stats"])),
        }

    def timed_staged(self, start, wait_staged, wait, compute: float = 1.0, name: str = "staged") -> None:
        """A save with background staging, as a loop uses it: *start()* returns, the step computes
        for *compute* s, *wait_staged()* before the weights change, the change, then *wait()* for the
        save. Blocked = the call + the wait for the staging; the total leaves the compute out."""
        os.sync()
        s0 = _stats(self.spec["stats"])
        c0, t0 = _cpu_self(), time.perf_counter()
        start()
        t1 = time.perf_counter()
        time.sleep(compute)  # the step's forward and backward
        t2 = time.perf_counter()
        wait_staged()
        t3 = time.perf_counter()
        flat = dict(_tensors(self.state))
        keep = flat[self.big_key].clone()
        flat[self.big_key].zero_()  # the optimizer's step
        try:
            wait()
        finally:
            flat[self.big_key].copy_(keep)
        t4, c4 = time.perf_counter(), _cpu_self()
        self.out["phases"][name] = {
            "s": t4 - t0 - compute,
            "blocked_s": (t1 - t0) + (t3 - t2),
            "call_s": t1 - t0,
            "cpu_s": c4 - c0,
            **_delta(s0, _stats(self.spec["stats"])),
        }

    def verify_backing(self, name: str, rel: str) -> None:
        _zero(self.target)
        folder = self.backing / rel
        self.dcp.load(self.target, storage_reader=self.dcp.FileSystemReader(str(folder)))
        self.out["checks"][f"{name} on volume"] = bit_exact(self.state, self.target) or "ok"
        self.out["info"][f"{name}_files"] = _dir_files(folder)

    def check_loaded(self, name: str) -> None:
        self.out["checks"][name] = bit_exact(self.state, self.target) or "ok"

    def load(self, name: str, fn) -> None:
        _zero(self.target)
        self.timed(name, fn)
        self.check_loaded(name)


def _run_manager(r: _Run, base: str) -> None:
    from air_magics.data import CheckpointManager

    mgr = CheckpointManager(base, keep=5, show=False)
    r.timed("save", lambda: mgr.save(1, r.state))
    r.verify_backing("save", "step_1")
    r.load("load", lambda: mgr.load(r.target, 1))
    r.timed_async(lambda: mgr.save(2, r.state, blocking=False), lambda _h: mgr.wait())
    r.verify_backing("async", "step_2")
    if hasattr(mgr, "wait_staged"):  # (background staging: air_magics after 2026-12-05)
        r.timed_staged(lambda: mgr.save(3, r.state, blocking=False, background_staging=True), mgr.wait_staged, mgr.wait)
        r.verify_backing("staged", "step_3")
        # the loop's next staged save: the stager's buffers are there already (every save after a job's first)
        r.timed_staged(
            lambda: mgr.save(4, r.state, blocking=False, background_staging=True),
            mgr.wait_staged,
            mgr.wait,
            name="staged_again",
        )
        r.verify_backing("staged_again", "step_4")
    r.out["info"]["latest"] = mgr.latest()


def _run_writer(r: _Run, base: str, Writer, Reader, warm: bool) -> None:
    dcp = r.dcp
    sync_dir, async_dir = f"{base}/sync", f"{base}/async"
    r.timed("save", lambda: dcp.save(r.state, storage_writer=Writer(sync_dir)))
    r.verify_backing("save", "sync")
    r.load("load", lambda: dcp.load(r.target, storage_reader=Reader(sync_dir)))
    if warm:  # through the cache (direct=False): an untimed load fills it, the timed one finds it warm
        dcp.load(r.target, storage_reader=Reader(sync_dir, direct=False))
        r.load("warm", lambda: dcp.load(r.target, storage_reader=Reader(sync_dir, direct=False)))
    r.timed_async(lambda: dcp.async_save(r.state, storage_writer=Writer(async_dir)), lambda fut: fut.result())
    r.verify_backing("async", "async")


def _run_threads(r: _Run, base: str, n: int = 8) -> None:
    """The ceiling: the tensors' bytes in *n* files, one plain thread each, straight on the mount."""
    from concurrent.futures import ThreadPoolExecutor

    src = [t for _, t in _tensors(r.state)]
    dst = [t for _, t in _tensors(r.target)]
    groups: list[list[int]] = [[] for _ in range(n)]
    sizes = [0] * n
    for k in sorted(range(len(src)), key=lambda k: -src[k].nbytes):  # largest first, to the lightest file
        g = sizes.index(min(sizes))
        groups[g].append(k)
        sizes[g] += src[k].nbytes
    folder = Path(base) / "threads"
    folder.mkdir(parents=True, exist_ok=True)

    def write(g: int) -> None:
        with open(folder / f"part{g}", "wb") as f:
            for k in groups[g]:
                f.write(memoryview(src[k].contiguous().numpy()).cast("B"))

    def read(g: int) -> None:
        with open(folder / f"part{g}", "rb", buffering=0) as f:
            for k in groups[g]:
                view = memoryview(dst[k].numpy()).cast("B")
                while view:
                    view = view[f.readinto(view) :]

    with ThreadPoolExecutor(n) as pool:
        r.timed("save", lambda: list(pool.map(write, range(n))))
        r.load("load", lambda: list(pool.map(read, range(n))))


def child_main(spec: dict) -> int:
    warnings.filterwarnings("ignore")  # DCP warns on every single-process save/load
    marks = {"start": time.monotonic()}
    import torch
    import torch.distributed.checkpoint as dcp

    method = spec["method"]
    if method == "ref":
        from databricks.air.data import UCVolumeReader as Reader
        from databricks.air.data import UCVolumeWriter as Writer
    elif method in ("air", "mgr"):
        from air_magics.data import CheckpointManager  # noqa: F401  (imported before the clock, used by _run_manager)
        from air_magics.data import UCVolumeReader as Reader
        from air_magics.data import UCVolumeWriter as Writer
    else:
        Writer, Reader = dcp.FileSystemWriter, dcp.FileSystemReader
    torch.set_num_threads(int(spec.get("torch_threads", 2)))
    marks["imported"] = time.monotonic()

    # warm-up (untimed): a tiny save and load to local disk through the same DCP code paths
    tiny = {"w": torch.randn(64, 64), "b": torch.randn(64)}
    with tempfile.TemporaryDirectory() as tmp:
        dcp.save(tiny, storage_writer=dcp.FileSystemWriter(tmp))
        dcp.load(_zeros_like(tiny), storage_reader=dcp.FileSystemReader(tmp))

    r = _Run(spec, dcp)
    base = spec["base"]  # the path the method is given: /Volumes/... or MNT/...
    if method == "mgr":
        _run_manager(r, base)
    elif method == "threads8":
        _run_threads(r, base)
    else:
        _run_writer(r, base, Writer, Reader, warm=method == "air")
    marks["end"] = time.monotonic()
    r.out["marks"] = marks
    r.out["ok"] = all(v == "ok" for v in r.out["checks"].values())
    r.dump()
    return 0


if __name__ == "__main__":
    sys.exit(child_main(json.loads(sys.argv[1])))
