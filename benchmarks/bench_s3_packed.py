"""A packed folder on object storage: the first item and the cold epoch against the shards' raw read.

A real S3 server (SeaweedFS, ``benchmarks/harness/s3server.py``) holds one data set twice: a folder
packed by ``air_magics.shards.pack`` (``--shard-size``) and the same files written as MDS shards by
mosaicml-streaming's ``MDSWriter`` (same ``size_limit``, no compression). ``--files`` files of
``--size-kib`` KiB (random bytes). Every client reaches the server through
``benchmarks/harness/delayproxy.py``, ``--rtt-ms`` per round trip (0: loopback). Each measurement runs
in a fresh interpreter with a fresh ``AIR_HOME`` (an empty cache). Rows:

* ``s3fs cat 64`` (ceiling): ``fs.cat(shard objects, batch_size=64)``: every packed shard's bytes into
  memory on 64 connections, nothing checked or kept;
* ``iter(UCVolumeDataset(packed))``: the default output (a local file per member), each path opened and read;
* ``output="bytes"``: the members' bytes;
* ``DataLoader`` (defaults): ``DataLoader(UCVolumeDataset(packed), batch_size=None)``, paths read;
* ``StreamingDataset`` (mosaicml-streaming): ``remote`` the MDS folder on the same server, ``local`` an
  empty folder, unshuffled, iterated in one process. It runs in its own venv (``--mosaic-python``;
  installed into the project's venv it replaces the CPU torch, see benchmarks/README.md); without it
  its row says so.

"first item" counts from the dataset's construction (the manifest read included). Reps are
interleaved in a rotated order; the table gives medians (min-max of the epoch).

    .venv/bin/python benchmarks/bench_s3_packed.py [--files 1200] [--size-kib 100] [--shard-size 16MiB]
        [--rtt-ms 10] [--reps 3] [--quick]
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
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.delayproxy import DelayProxy  # noqa: E402
from benchmarks.harness.mounts import REPO  # noqa: E402
from benchmarks.harness.report import table  # noqa: E402
from benchmarks.harness.runner import rotated  # noqa: E402

VOLUME = "main.s3.bench"
FOLDER = "/Volumes/main/s3/bench/packed"
KINDS = ("cat", "paths", "bytes", "loader", "mosaic")
LABEL = {
    "cat": "s3fs cat 64 of the shard objects (ceiling)",
    "paths": "ours: `iter(UCVolumeDataset(packed))`, paths (default)",
    "bytes": 'ours: `output="bytes"`',
    "loader": "ours: `DataLoader` (defaults), paths",
    "mosaic": "mosaicml-streaming `StreamingDataset` (MDS)",
}
_MOSAIC_STUBS = """
import sys, types
for m in ("streaming.vision", "streaming.text", "streaming.multimodal"):  # they need torchvision
    sys.modules[m] = types.ModuleType(m)
t = types.ModuleType("transformers"); t.__path__ = []  # streaming.base.dataloader imports two names of it
f = types.ModuleType("transformers.feature_extraction_utils"); f.BatchFeature = type("BatchFeature", (dict,), {})
b = types.ModuleType("transformers.tokenization_utils_base"); b.BatchEncoding = type("BatchEncoding", (dict,), {})
sys.modules.update({"transformers": t, f.__name__: f, b.__name__: b})
"""


# -- the child: one measurement in a fresh interpreter ------------------------------------------------
def _child(kind: str, bucket: str, work: str) -> dict:
    if kind == "mosaic":
        exec(_MOSAIC_STUBS)  # noqa: S102 - fixed text above
        from streaming import StreamingDataset

        t0 = time.perf_counter()
        ds = StreamingDataset(remote=f"s3://{bucket}/mds", local=os.path.join(work, "mds"), shuffle=False, batch_size=1)
        n, first = 0, 0.0
        for sample in ds:
            len(sample["data"])
            n += 1
            if n == 1:
                first = time.perf_counter() - t0
        return {"s": time.perf_counter() - t0, "first": first, "files": n}
    if kind == "cat":
        import s3fs

        fs = s3fs.S3FileSystem(skip_instance_cache=True, config_kwargs={"max_pool_connections": 64})
        keys = sorted(k for k in fs.find(f"{bucket}/packed") if k.endswith(".tar"))
        t0 = time.perf_counter()
        got = fs.cat(keys, batch_size=64)
        return {"s": time.perf_counter() - t0, "first": float("nan"), "files": 0, "bytes": sum(map(len, got.values()))}
    from air_magics.data import DataLoader, UCVolumeDataset
    from air_magics.volumes import VolumeStore

    VolumeStore().register(VOLUME, f"s3://{bucket}", check=False)
    t0 = time.perf_counter()
    ds = UCVolumeDataset(FOLDER, output="bytes" if kind == "bytes" else "path")
    items = DataLoader(ds, batch_size=None) if kind == "loader" else ds
    n, first = 0, 0.0
    for item in items:
        if kind == "bytes":
            len(item)
        else:
            with open(item, "rb") as f:
                f.read()
        n += 1
        if n == 1:
            first = time.perf_counter() - t0
    del items, ds
    return {"s": time.perf_counter() - t0, "first": first, "files": n}


def _measure(kind: str, python: str, bucket: str, env: dict) -> dict:
    home = tempfile.mkdtemp(prefix="bench-s3-packed-")
    try:
        proc = subprocess.run(
            [python, __file__, "--child", kind, "--bucket", bucket, "--work", home],
            env={**env, "AIR_HOME": os.path.join(home, "air")},
            capture_output=True,
            text=True,
            cwd=REPO,
            check=False,
            timeout=1800,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mosaic_missing(python: str) -> str:
    if not Path(python).exists():
        return (
            f"{python} not found (make it: python -m venv DIR && DIR/bin/pip install -c <(echo torch==2.13.0) "
            "mosaicml-streaming)"
        )
    p = subprocess.run([python, "-c", _MOSAIC_STUBS + "import streaming, boto3"], capture_output=True, text=True)
    return "" if p.returncode == 0 else f"{python} cannot import streaming and boto3: {p.stderr.strip()[-200:]}"


def _write_mds(python: str, src: Path, dest: Path, size_limit: int) -> None:
    code = _MOSAIC_STUBS + (
        "import sys\nfrom pathlib import Path\nfrom streaming import MDSWriter\n"
        "src = Path(sys.argv[1])\n"
        "names = sorted(p.relative_to(src).as_posix() for p in src.rglob('*') if p.is_file())\n"
        "with MDSWriter(out=sys.argv[2], columns={'name': 'str', 'data': 'bytes'}, size_limit=int(sys.argv[3]),"
        " compression=None) as w:\n"
        "    for n in names:\n"
        "        w.write({'name': n, 'data': (src / n).read_bytes()})\n"
    )
    subprocess.run([python, "-c", code, str(src), str(dest), str(size_limit)], check=True)


def _seed(s3, a: argparse.Namespace, work: Path, mosaic: bool) -> str:
    """The files packed locally and uploaded to a fresh bucket (``packed/``), and as MDS (``mds/``)."""
    from air_magics.io.units import parse_size
    from air_magics.shards import pack
    from air_magics.volumes import VolumeStore

    os.environ["AIR_HOME"] = str(work / "seed-home")
    store = VolumeStore()
    store.create("main.seed.src")
    src = Path(store.locate("/Volumes/main/seed/src").path)
    block = os.urandom(a.size_kib * 1024)
    for i in range(a.files):
        p = src / f"c{i % 4}" / f"{i:06d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(block[i % 97 :] + block[: i % 97])
    store.create("main.seed.packed")
    pack("/Volumes/main/seed/src", "/Volumes/main/seed/packed/data", shard_size=a.shard_size)
    bucket = s3.make_bucket()
    s3.admin.put(
        str(Path(store.locate("/Volumes/main/seed/packed/data").path)) + "/", f"{bucket}/packed/", recursive=True
    )
    if mosaic:
        _write_mds(a.mosaic_python, src, work / "mds", parse_size(a.shard_size))
        s3.admin.put(str(work / "mds") + "/", f"{bucket}/mds/", recursive=True)
    return bucket


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1200)
    ap.add_argument("--size-kib", type=int, default=100)
    ap.add_argument("--shard-size", default="16MiB")
    ap.add_argument("--rtt-ms", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mosaic-python", default="/tmp/venv-mosaic/bin/python")
    ap.add_argument("--quick", action="store_true", help="96 files x 32 KiB in 1 MiB shards, one rep, loopback")
    ap.add_argument("--no-wait", action="store_true", help="(accepted for the suite's smoke runs)")
    ap.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    ap.add_argument("--bucket", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(_child(a.child, a.bucket, a.work)))
        return 0
    if a.quick:
        a.files, a.size_kib, a.shard_size, a.reps, a.rtt_ms = 96, 32, "1MiB", 1, 0.0
    from benchmarks.harness import s3server

    missing = _mosaic_missing(a.mosaic_python)
    kinds = [k for k in KINDS if k != "mosaic" or not missing]
    work = Path(tempfile.mkdtemp(prefix="bench-s3-packed-"))
    try:
        with s3server.running() as s3:
            bucket = _seed(s3, a, work, not missing)
            with DelayProxy(("127.0.0.1", s3.port), a.rtt_ms / 2) as proxy:
                env = {**os.environ, **s3.env(), "AWS_ENDPOINT_URL": proxy.endpoint, "S3_ENDPOINT_URL": proxy.endpoint}
                runs: dict[str, list[dict]] = {k: [] for k in kinds}
                for rep in range(a.reps):
                    for kind in rotated(kinds, rep):
                        python = a.mosaic_python if kind == "mosaic" else sys.executable
                        runs[kind].append(_measure(kind, python, bucket, env))
        print(_report(runs, a, missing))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _report(runs: dict[str, list[dict]], a: argparse.Namespace, missing: str) -> str:
    def med(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[kind])

    ceiling = med("cat", "s")
    rows = []
    for kind in runs:
        s = med(kind, "s")
        secs = [r["s"] for r in runs[kind]]
        first = "-" if kind == "cat" else f"{med(kind, 'first'):.2f}"
        rows.append(
            [
                LABEL[kind],
                first,
                f"{s:.2f} ({min(secs):.2f}-{max(secs):.2f})",
                f"{s / ceiling:.2f}x",
                f"{a.files / s:,.0f}",
            ]
        )
    head = (
        f"## bench_s3_packed\n\n{a.files:,} files x {a.size_kib} KiB packed in {a.shard_size} shards, S3 (SeaweedFS) "
        f"at {a.rtt_ms:g} ms round trip, {a.reps} reps (medians; server and clients on the same cores)\n\n"
    )
    out = head + table(["method", "first item s", "epoch s (min-max)", "x ceiling", "items/s"], rows) + "\n"
    if missing:
        out += f"\nmosaicml-streaming row skipped: {missing}\n"
    elif "mosaic" in runs:
        out += f"\nitems/s vs mosaicml-streaming: paths {med('mosaic', 's') / med('paths', 's'):.2f}x, "
        out += f"bytes {med('mosaic', 's') / med('bytes', 's'):.2f}x\n"
    return out


if __name__ == "__main__":
    sys.exit(main())
