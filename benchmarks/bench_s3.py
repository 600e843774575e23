"""Reading a volume on object storage: the cold epoch and the copy against s3fs's own batch calls.

A real S3 server (SeaweedFS, ``benchmarks/harness/s3server.py``) holds ``--files`` objects of
``--size-kib``; every client reaches it through ``benchmarks/harness/delayproxy.py``, which adds
``--rtt-ms`` per round trip (half each way; 0: loopback) and counts the requests. Each measurement
runs in a fresh interpreter with a fresh ``AIR_HOME`` (empty cache), the volume registered to the
bucket through the proxy. Rows:

* ``s3fs cat 64`` (ceiling): ``fs.cat(keys, batch_size=64)``, 64 connections, bytes into memory;
* ``s3fs get 64`` (peer): ``fs.get(keys, dir, batch_size=64)``, the same files landed on local disk;
* ``DataLoader`` (ours): ``DataLoader(UCVolumeDataset(folder), batch_size=None)``, defaults, each yielded
  file opened and read;
* ``iter(dataset)`` (ours): the same without workers;
* ``air_magics.copy`` (ours): ``copy(folder, dir)``, defaults (vs ``s3fs get 64``).

A second table (``--table-files``, 8 by default, of ``--table-rows`` 250,000) reads Parquet files in the bucket:
s3fs ``cat`` of their bytes (ceiling), Hugging Face ``datasets`` streaming them
(``load_dataset("parquet", data_files=..., streaming=True).iter(batch_size=1000)``, its documented
batched form: the peer) and ``UCDataset(folder, batch_size=1000)`` on the S3 volume (ours); each
dataset is made before the clock starts.

CPU is the measured part's, in the child and its DataLoader workers (imports and setup left out; a
worker's own s3fs instance counted), not the server's. Reps are
interleaved in a rotated order; the table gives medians (min-max).

    .venv/bin/python benchmarks/bench_s3.py [--files 1200] [--size-kib 100] [--rtt-ms 0 20] [--reps 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.delayproxy import DelayProxy  # noqa: E402
from benchmarks.harness.mounts import REPO  # noqa: E402
from benchmarks.harness.report import table  # noqa: E402
from benchmarks.harness.runner import rotated  # noqa: E402

VOLUME = "main.s3.bench"
FOLDER = "/Volumes/main/s3/bench/train"
KINDS = ("cat", "get", "loader", "iter", "copy")
TABLE_KINDS = ("tcat", "hf", "ucdataset")  # the Parquet part: a ceiling, the peer, ours
TABLE_ROWS = 250_000  # rows per Parquet file (--table-rows)
LABEL = {
    "cat": "s3fs cat 64 (ceiling)",
    "get": "s3fs get 64 (peer)",
    "loader": "DataLoader (default)",
    "iter": "iter(UCVolumeDataset)",
    "copy": "air_magics.copy",
    "tcat": "s3fs cat 64 of the Parquet files (ceiling, bytes only)",
    "hf": "HF datasets streaming, `.iter(batch_size=1000)` (peer)",
    "ucdataset": "UCDataset(batch_size=1000) (ours)",
}


# -- the child: one measurement in a fresh interpreter ------------------------------------------------
def _cpu_now() -> float:
    """CPU seconds of this process and of its children reaped so far (DataLoader workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _table_child(kind: str, bucket: str) -> dict:
    """One pass over the Parquet files under ``tables/`` (rows counted); CPU from its start."""
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, config_kwargs={"max_pool_connections": 64})
    keys = sorted(k for k in fs.find(f"{bucket}/tables") if k.endswith(".parquet"))
    if kind == "tcat":
        c0, t0 = _cpu_now(), time.perf_counter()
        n = sum(len(b) for b in fs.cat(keys, batch_size=64).values())
        return {"s": time.perf_counter() - t0, "cpu": _cpu_now() - c0, "files": n}
    if kind == "hf":
        from datasets import load_dataset

        opts = {"client_kwargs": {"endpoint_url": os.environ["AWS_ENDPOINT_URL"]}}
        ds = load_dataset("parquet", data_files=[f"s3://{k}" for k in keys], streaming=True, storage_options=opts)
        c0, t0 = _cpu_now(), time.perf_counter()
        n = sum(len(b["id"]) for b in ds["train"].iter(batch_size=1000))
        return {"s": time.perf_counter() - t0, "cpu": _cpu_now() - c0, "files": n}
    from air_magics.data import UCDataset
    from air_magics.volumes import VolumeStore

    VolumeStore().register(VOLUME, f"s3://{bucket}", check=False)
    ds = UCDataset("/Volumes/main/s3/bench/tables", batch_size=1000)  # setup, as HF's load_dataset above
    c0, t0 = _cpu_now(), time.perf_counter()
    n = sum(len(b["id"]) for b in ds)
    return {"s": time.perf_counter() - t0, "cpu": _cpu_now() - c0, "files": n}


def _child(kind: str, bucket: str, out_dir: str) -> dict:
    """One measurement; its CPU is counted from its start (imports and setup left out)."""
    if kind in TABLE_KINDS:
        return _table_child(kind, bucket)
    import s3fs

    if kind in ("cat", "get"):
        fs = s3fs.S3FileSystem(skip_instance_cache=True, config_kwargs={"max_pool_connections": 64})
        keys = sorted(fs.find(f"{bucket}/train"))
        c0, t0 = _cpu_now(), time.perf_counter()
        if kind == "cat":
            got = fs.cat(keys, batch_size=64)
            n = len(got)
        else:
            fs.get(keys, out_dir + "/", batch_size=64)
            n = len(os.listdir(out_dir))
        return {"s": time.perf_counter() - t0, "cpu": _cpu_now() - c0, "files": n}
    import air_magics
    from air_magics.data import DataLoader, UCVolumeDataset
    from air_magics.volumes import VolumeStore

    VolumeStore().register(VOLUME, f"s3://{bucket}", check=False)
    c0, t0 = _cpu_now(), time.perf_counter()
    n = 0
    if kind == "copy":
        report = air_magics.copy(FOLDER, out_dir)
        n = report.copied
    else:
        ds = UCVolumeDataset(FOLDER)
        items = DataLoader(ds, batch_size=None) if kind == "loader" else ds
        for p in items:
            with open(p, "rb") as f:
                f.read()
            n += 1
        del items, ds  # the workers are reaped (their CPU counted) before the clock stops
    return {"s": time.perf_counter() - t0, "cpu": _cpu_now() - c0, "files": n}


def _measure(kind: str, bucket: str, env: dict, proxy: DelayProxy) -> dict:
    home = tempfile.mkdtemp(prefix="bench-s3-")
    out = os.path.join(home, "out")
    os.makedirs(out)
    proxy.reset()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--bucket", bucket, "--out", out],
        env={**env, "AIR_HOME": os.path.join(home, "air")},
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    shutil.rmtree(home, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stderr[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["requests"] = sum(proxy.counts().values())
    return res


def _seed(s3, files: int, size: int, table_files: int, table_rows: int = TABLE_ROWS) -> str:
    bucket = s3.make_bucket()
    block = os.urandom(size)
    s3.admin.pipe({f"{bucket}/train/d{i % 20:02d}/f{i:05d}.bin": block[i % 7 :] + block[: i % 7] for i in range(files)})
    if table_files:
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        for k in range(table_files):
            ids = np.arange(k * table_rows, (k + 1) * table_rows)
            t = pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"s{i % 97}" for i in range(len(ids))])})
            with s3.admin.open(f"{bucket}/tables/part-{k:03d}.parquet", "wb") as f:
                pq.write_table(t, f, row_group_size=50_000)
    return bucket


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1200)
    ap.add_argument("--size-kib", type=int, default=100)
    ap.add_argument("--rtt-ms", type=float, nargs="+", default=[0.0, 20.0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="200 files, one rep, loopback only")
    ap.add_argument("--no-wait", action="store_true", help="(accepted for the suite's smoke runs)")
    ap.add_argument("--table-files", type=int, default=8, help="Parquet files in the table part (0: none)")
    ap.add_argument("--table-rows", type=int, default=TABLE_ROWS, help="rows per Parquet file")
    ap.add_argument("--child", choices=KINDS + TABLE_KINDS, help=argparse.SUPPRESS)
    ap.add_argument("--bucket", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(_child(a.child, a.bucket, a.out)))
        return 0
    if a.quick:
        a.files, a.reps, a.rtt_ms, a.table_files, a.table_rows = 100, 1, [0.0], 1, 50_000
    from benchmarks.harness import s3server

    print(f"## bench_s3\n\n`{' '.join(['bench_s3.py', *sys.argv[1:]])}`\n")
    with s3server.running() as s3:
        bucket = _seed(s3, a.files, a.size_kib * 1024, a.table_files, a.table_rows)
        for rtt in a.rtt_ms:
            with DelayProxy(("127.0.0.1", s3.port), rtt / 2) as proxy:
                env = {**os.environ, **s3.env(), "AWS_ENDPOINT_URL": proxy.endpoint}
                runs: dict[str, list[dict]] = {k: [] for k in KINDS}
                for rep in range(a.reps):
                    for kind in rotated(KINDS, rep):
                        runs[kind].append(_measure(kind, bucket, env, proxy))
                print(_report(runs, a, rtt))
                if a.table_files:
                    truns: dict[str, list[dict]] = {k: [] for k in TABLE_KINDS}
                    for rep in range(a.reps):
                        for kind in rotated(TABLE_KINDS, rep):
                            truns[kind].append(_measure(kind, bucket, env, proxy))
                    print(_table_report(truns, a, rtt))
    return 0


def _table_report(runs: dict[str, list[dict]], a: argparse.Namespace, rtt: float) -> str:
    rows_total = a.table_files * a.table_rows
    cat_s = statistics.median(r["s"] for r in runs["tcat"])
    out = []
    for kind in TABLE_KINDS:
        s = statistics.median(r["s"] for r in runs[kind])
        cpu = statistics.median(r["cpu"] for r in runs[kind])
        rate = "-" if kind == "tcat" else f"{rows_total / s:,.0f}"
        if kind != "tcat":
            assert all(r["files"] == rows_total for r in runs[kind]), (kind, [r["files"] for r in runs[kind]])
        out.append(
            [
                LABEL[kind],
                f"{s:.2f}",
                f"{cat_s / s:.2f}x",
                rate,
                f"{cpu:.2f}",
                f"{statistics.median(r['requests'] for r in runs[kind]):.0f}",
            ]
        )
    hf = statistics.median(r["s"] for r in runs["hf"])
    ours = statistics.median(r["s"] for r in runs["ucdataset"])
    head = (
        f"### S3 Parquet: {a.table_files} files x {a.table_rows:,} rows, round trip {rtt:g} ms, "
        f"{a.reps} reps (medians)\n\n"
    )
    tail = f"\nUCDataset vs HF datasets streaming: {hf / ours:.2f}x the rows/s\n"
    return head + table(["method", "s", "x ceiling", "rows/s", "CPU s", "requests"], out) + tail


def _report(runs: dict[str, list[dict]], a: argparse.Namespace, rtt: float) -> str:
    def med(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[kind])

    def spread(kind: str) -> str:
        rates = [r["files"] / r["s"] for r in runs[kind]]
        return f"{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"

    cat_rate = a.files / med("cat", "s")
    get_rate = a.files / med("get", "s")
    cat_cpu = med("cat", "cpu") / a.files
    rows = []
    for kind in KINDS:
        rate = a.files / med(kind, "s")
        cpu = med(kind, "cpu") / a.files
        vs = get_rate if kind == "copy" else cat_rate
        rows.append(
            [
                LABEL[kind],
                spread(kind),
                f"{rate / vs:.2f}x {'get' if kind == 'copy' else 'cat'}",
                f"{cpu * 1e3:.2f}",
                f"{cpu / cat_cpu:.2f}x",
                f"{med(kind, 'requests') / a.files:.2f}",
            ]
        )
    head = (
        f"### S3 reads: {a.files:,} x {a.size_kib} KiB, round trip {rtt:g} ms, {a.reps} reps "
        f"(medians; SeaweedFS on the same 2 cores)\n\n"
    )
    return head + table(["method", "files/s", "x ceiling", "CPU ms/file", "CPU x cat", "requests/file"], rows) + "\n"


if __name__ == "__main__":
    sys.exit(main())
