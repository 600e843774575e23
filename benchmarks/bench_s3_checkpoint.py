"""``python benchmarks/bench_s3_checkpoint.py [--quick] [--sizes-mb 64,1024] [--reps 3]``:
checkpoints on a real S3 server (SeaweedFS, benchmarks/harness/s3server.py) against the plain ways.

Rows, per state size (a dict of float32 tensors of 4 MiB, 16 MiB from 256 MiB up):

  ceiling    ``torch.save`` to a local file + s3fs ``put_file`` (its defaults: one PUT, or 50 MiB parts
             one after another) / ``get_file`` + ``torch.load``: what a user writes by hand
  multipart  the same with parallel multipart: ``put_file(chunksize=16 MiB, max_concurrency=16)`` /
             ``get_file(chunksize=16 MiB, max_concurrency=16)``: the store's parallel ceiling
  ours       ``CheckpointManager.save(1, state)`` / ``CheckpointManager(...).load(state)`` on a volume
             registered to the bucket (DCP files, ``_COMMITTED`` with the checksums, ``latest``); the
             save's clock stops when it returns (committed, ``latest`` written), before the pruning
             that follows it on a thread of its own

Each measurement runs in its own process (``--child``), straight to the server (a proxy's Python loop
would cap the throughput), and counts the requests its s3fs client sends (botocore's ``before-send``
events, by S3 operation), from the clock's start: ``requests`` is what that save or restore sent. Reps are
interleaved (the order of the rows rotated per rep); each process first saves (or restores) a 4 KiB
state the same way, off the clock (the first call's one-time costs: botocore's first PutObject,
DCP's first plan), so a row is what a training run's periodic save costs. Medians are reported, ``x ceiling`` is the
ceiling's median seconds over the row's (1.00: as fast; above 1: faster). Every restore is checked
bit for bit against the saved state. The markdown report goes to stdout, progress to stderr.
``--quick`` (what the tests run): 16 MiB, 1 rep. ``--no-wait`` is accepted (nothing here waits).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the repository root (for the benchmarks package)

from benchmarks.harness import s3server  # noqa: E402

ROWS = ("ceiling", "multipart", "ours")
PART = 16 << 20


def _state(mb: int):
    import torch

    each = (16 << 20) if mb >= 256 else (4 << 20)
    n = max(1, (mb << 20) // each)
    g = torch.Generator().manual_seed(mb)
    return {f"w{i:03d}": torch.rand(each // 4, generator=g) for i in range(n)}


def _same(a: dict, b: dict) -> bool:
    import torch

    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


_CALLS: Counter[str] = Counter()  # S3 operation -> requests sent (every HTTP attempt), from botocore's events


def _count(fs: Any) -> None:
    """Count every request *fs* (an s3fs instance, connected) sends, by S3 operation."""
    names: dict[int, str] = {}

    def call(model: Any, **_: Any) -> None:
        names[threading.get_ident()] = model.name

    def send(request: Any, **_: Any) -> None:
        _CALLS[names.get(threading.get_ident(), request.method)] += 1

    fs.s3.meta.events.register("before-call.s3", call)
    fs.s3.meta.events.register("before-send.s3", send)


def _ready() -> None:
    """The clock starts now: forget the set-up's requests."""
    _CALLS.clear()


def child(row: str, mb: int, bucket: str, phase: str, scratch: str) -> dict:
    """One save (``phase="save"``) or restore (``"load"``) of *row*; returns its seconds and whether the
    restore was exact, and the requests it sent."""
    import torch

    state = _state(mb)
    tiny = {"w000": torch.ones(1024)}  # the warm-up's: each row's first call in the process is off the clock
    key = f"{bucket}/{row}/state.pt"
    if row in ("ceiling", "multipart"):
        import s3fs

        fs = s3fs.S3FileSystem(skip_instance_cache=True)
        kw = {"chunksize": PART, "max_concurrency": 16} if row == "multipart" else {}
        local, warm = os.path.join(scratch, "state.pt"), os.path.join(scratch, "warm.pt")
        if phase == "save":
            torch.save(tiny, warm)
            fs.put_file(warm, f"{bucket}/{row}/warm.pt", **kw)
        else:
            fs.get_file(f"{bucket}/{row}/warm.pt", warm, **kw)
            torch.load(warm)
        _count(fs)
        _ready()
        t = time.perf_counter()
        if phase == "save":
            torch.save(state, local)
            fs.put_file(local, key, **kw)
            return {"s": time.perf_counter() - t, "exact": True, "ops": dict(_CALLS)}
        fs.get_file(key, local, **kw)
        back = torch.load(local)
        return {"s": time.perf_counter() - t, "exact": _same(back, state), "ops": dict(_CALLS)}
    from air_magics.data import CheckpointManager
    from air_magics.volumes import VolumeStore

    store = VolumeStore.shared()
    store.register("bench.s3.ck", f"s3://{bucket}/ours", check=False)
    warm_mgr = CheckpointManager("/Volumes/bench/s3/ck/warm", show=False)
    if phase == "save":
        warm_mgr.save(1, tiny)
        warm_mgr.wait()
    else:
        warm_mgr.load(tiny)
    _count(store.locate("/Volumes/bench/s3/ck").fs.instance)
    mgr = CheckpointManager("/Volumes/bench/s3/ck/run", show=False)
    if phase == "save":
        _ready()
        t = time.perf_counter()
        mgr.save(1, state)  # returns committed, `latest` written; its pruning runs on after (see .pruning)
        seconds, ops = time.perf_counter() - t, dict(_CALLS)
        mgr.wait()
        return {"s": seconds, "exact": True, "ops": ops}
    back = {k: torch.empty_like(v) for k, v in state.items()}
    _ready()
    t = time.perf_counter()
    mgr.load(back)
    return {"s": time.perf_counter() - t, "exact": _same(back, state), "ops": dict(_CALLS)}


def _measure(s3: Any, row: str, mb: int, home: Path) -> dict:
    """A save then a restore of *row*, each in its own process, on a fresh bucket."""
    bucket = s3.make_bucket()
    env = {**os.environ, **s3.env(), "AIR_HOME": str(home / uuid.uuid4().hex)}
    env.pop("PYTHONPATH", None)
    out: dict = {"exact": True}
    with tempfile.TemporaryDirectory(prefix="s3ck-") as scratch:
        for phase in ("save", "load"):
            argv = [sys.executable, __file__, "--child", row, str(mb), bucket, phase, scratch]
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                raise RuntimeError(f"{row} {phase} {mb} MiB failed:\n{p.stderr[-3000:]}")
            got = json.loads(p.stdout.strip().splitlines()[-1])
            out[phase] = got["s"]
            out[f"{phase}_ops"] = got["ops"]
            out[f"{phase}_requests"] = sum(got["ops"].values())
            out["exact"] = out["exact"] and got["exact"]
    s3.admin.rm(bucket, recursive=True)
    return out


def report(results: dict, sizes: list[int], reps: int) -> str:
    lines = [
        "## bench_s3_checkpoint",
        "",
        f"`python benchmarks/bench_s3_checkpoint.py --sizes-mb {','.join(map(str, sizes))} --reps {reps}`;"
        f" SeaweedFS on loopback (the same 2 cores); medians of {reps} interleaved"
        f" rep(s); x ceiling = the ceiling's median s / the row's (1.00: as fast).",
        "",
        "| MiB | row | save s | x ceiling | save requests | restore s | x ceiling | restore requests | exact |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mb in sizes:
        med = {r: {k: statistics.median(m[k] for m in results[(r, mb)]) for k in ("save", "load")} for r in ROWS}
        ceiling = "multipart" if mb >= 1024 else "ceiling"
        for r in ROWS:
            last = results[(r, mb)][-1]
            xs = med[ceiling]["save"] / med[r]["save"]
            xl = med[ceiling]["load"] / med[r]["load"]
            exact = all(m["exact"] for m in results[(r, mb)])
            name = {"ceiling": "`torch.save`+`put_file` / `get_file`+`torch.load`", "multipart": "parallel multipart"}
            label = name.get(r, "ours: `CheckpointManager.save` / `.load`")
            lines.append(
                f"| {mb} | {label} | {med[r]['save']:.3f} | {xs:.2f} | {last['save_requests']} | "
                f"{med[r]['load']:.3f} | {xl:.2f} | {last['load_requests']} | {'yes' if exact else 'NO'} |"
            )
        lines.append(
            f"| {mb} | (x ceiling against: {'parallel multipart' if ceiling == 'multipart' else 'torch.save + put_file'})"
            " | | | | | | | |"
        )
    ours = {mb: results[("ours", mb)][-1] for mb in sizes}
    lines += [
        "",
        "Requests of our saves, by S3 operation: " + "; ".join(f"{mb} MiB {ours[mb]['save_ops']}" for mb in sizes),
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="16 MiB, 1 rep")
    ap.add_argument("--sizes-mb", default="64,1024")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-wait", action="store_true", help="accepted for the suite (nothing here waits)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        row, mb, bucket, phase, scratch = a.child
        print(json.dumps(child(row, int(mb), bucket, phase, scratch)))
        return 0
    sizes = [16] if a.quick else [int(x) for x in a.sizes_mb.split(",")]
    reps = 1 if a.quick else a.reps
    results: dict = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="s3ck-home-") as home, s3server.running() as s3:
        for mb in sizes:
            for rep in range(reps):
                order = ROWS[rep % len(ROWS) :] + ROWS[: rep % len(ROWS)]
                for row in order:
                    m = _measure(s3, row, mb, Path(home))
                    ok = ok and m["exact"]
                    results.setdefault((row, mb), []).append(m)
                    print(
                        f"{mb} MiB rep {rep} {row}: save {m['save']:.3f}s ({m['save_requests']} req), "
                        f"load {m['load']:.3f}s ({m['load_requests']} req)",
                        file=sys.stderr,
                        flush=True,
                    )
    print(report(results, sizes, reps))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
