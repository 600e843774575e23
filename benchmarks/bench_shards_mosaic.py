"""Packed shards vs mosaicml-streaming on the same slow FUSE volume, side by side in one run.

The same files (``--files`` x ``--size-kib`` KiB in 4 class folders, sorted by class, as a labelled
image folder is) on one ``benchmarks/harness/fusevol.py`` mount at ``--latency-ms`` per request:

- **pack**: ``air_magics.shards.pack`` (``--shard-size``, default 16 MiB) vs ``streaming.MDSWriter``
  (same ``size_limit``, no compression) fed by 64 threads reading the source from the mount (one
  thread would pay a round trip per file), both writing onto the mount;
- **read ceiling**: every shard's bytes read through the mount into memory with 1 MiB ranges on 32
  threads, 3 shards at a time, nothing checked or kept: what any reader of those shards needs at least;
- **epochs**: a cold (empty cache) and a warm epoch, shuffled, over each packed folder:
  air_magics reading members by offset from the cached shard (``MemberRef.read_bytes``, 64 reads in
  flight on threads, ``ready_bytes`` for members already in; the shard-windowed epoch order of
  ``air_magics.datasets.epoch_order.epoch_order``, its shard sequence given to ``PackedFolder.plan_reads`` so
  fetches run ahead in that order), and ``streaming.StreamingDataset``
  (``remote`` = the folder on the mount, ``local`` = an empty cache, ``shuffle=True``), each iterated
  in one process. The class mix of each shuffled order is reported as the mean largest-class share
  per batch of 64 (a raw folder's full shuffle: about 0.31 for 4 classes).

Every measurement runs in its own interpreter on a fresh mount (an empty page cache); reps are
interleaved (the order rotated per rep) and the tables show medians. mosaicml-streaming runs in its
own venv (``--mosaic-python``): installed into the project's venv it replaces the pinned CPU torch
(see benchmarks/README.md); without it its rows are skipped and say so. Never creates ``/Volumes``.

    .venv/bin/python benchmarks/bench_shards_mosaic.py [--files 1200] [--size-kib 100] [--latency-ms 10] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SRC, CLASSES, BATCH = "main/bench/data/raw", 4, 64


# -- children (each measurement runs in its own interpreter) ---------------------------------------
def _share(labels: list[str]) -> float:
    """Mean largest-class share over the full batches of an epoch's labels."""
    shares = []
    for k in range(0, len(labels) - BATCH + 1, BATCH):
        b = labels[k : k + BATCH]
        shares.append(max(b.count(c) for c in set(b)) / BATCH)
    return sum(shares) / max(1, len(shares))


def _child_air(spec: dict) -> dict:
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from itertools import islice

    from air_magics.cache import FileCache
    from air_magics.shards import open_packed, pack
    from air_magics.volumes import VolumeStore

    store = VolumeStore()
    if spec["what"] == "pack":
        t = time.perf_counter()
        r = pack(spec["src"], spec["dest"], shard_size=spec["shard_size"], store=store)
        return {"seconds": time.perf_counter() - t, "shards": r.shards}
    from air_magics.datasets.epoch_order import epoch_order
    from air_magics.shards.shard_order import shard_sequence
    from air_magics.shards.shard_source import stream_shard

    folder = open_packed(store, spec["dest"])
    if spec["what"] == "ceiling":
        import mmap

        def read(i: int) -> None:  # into memory, nothing checked, nothing kept
            buf = mmap.mmap(-1, folder.source.shards[i].bytes)
            stream_shard(folder.source, i, lambda off, b: None, checksum=False, into=buf)

        t = time.perf_counter()
        with ThreadPoolExecutor(3) as pool:  # 3 shards at a time, 1 MiB ranges on 32 threads
            list(pool.map(read, range(len(folder.source.shards))))
        return {"seconds": time.perf_counter() - t, "bytes": sum(s.bytes for s in folder.manifest.shards)}
    cache = FileCache(root=spec["cache"], store=store)
    refs = folder.members
    epochs = []
    with ThreadPoolExecutor(64) as pool:
        for epoch in range(2):
            t0 = time.perf_counter()
            shard_of = [r.shard for r in refs]
            items = epoch_order(len(refs), seed=7, epoch=epoch, shuffle=True, groups=shard_of)
            folder.plan_reads(cache, shard_sequence(shard_of, items))  # fetches run ahead in the epoch's order
            order = iter(items)
            names, nbytes, first = [], 0, 0.0
            window: deque = deque()

            def submit(i: int, window: deque = window) -> None:  # a warm member needs no thread
                ready = refs[i].ready_bytes()
                window.append((i, ready if ready is not None else pool.submit(refs[i].read_bytes, cache)))

            for i in islice(order, 64):  # 64 reads in flight, yielded in order
                submit(i)
            while window:
                i, got = window.popleft()
                data = got if isinstance(got, bytes) else got.result()
                if not first:
                    first = time.perf_counter() - t0
                names.append(refs[i].name)
                nbytes += len(data)
                nxt = next(order, None)
                if nxt is not None:
                    submit(nxt)
            epochs.append(
                {
                    "seconds": time.perf_counter() - t0,
                    "first": first,
                    "items": len(names),
                    "bytes": nbytes,
                    "names": names,
                }
            )
    return {"epochs": epochs, "shards": len(folder.manifest.shards)}


def _child_mosaic(spec: dict) -> dict:
    import types

    for m in ("streaming.vision", "streaming.text", "streaming.multimodal"):  # they need torchvision/transformers
        sys.modules[m] = types.ModuleType(m)
    from streaming import MDSWriter, StreamingDataset
    from streaming.base.util import clean_stale_shared_memory

    if spec["what"] == "pack":
        from concurrent.futures import ThreadPoolExecutor

        src = Path(spec["src"])
        t = time.perf_counter()
        names = sorted(p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file())
        with (
            ThreadPoolExecutor(64) as pool,
            MDSWriter(
                out=spec["dest"],
                columns={"name": "str", "data": "bytes"},
                size_limit=spec["size_limit"],
                compression=None,
            ) as w,
        ):
            for name, data in zip(names, pool.map(lambda n: (src / n).read_bytes(), names), strict=True):
                w.write({"name": name, "data": data})
        shards = len(list(Path(spec["dest"]).glob("shard.*.mds")))
        return {"seconds": time.perf_counter() - t, "shards": shards}
    clean_stale_shared_memory()
    ds = StreamingDataset(remote=spec["dest"], local=spec["cache"], shuffle=True, shuffle_seed=7, batch_size=BATCH)
    epochs = []
    for _ in range(2):
        t0 = time.perf_counter()
        names, nbytes, first = [], 0, 0.0
        for sample in ds:
            if not first:
                first = time.perf_counter() - t0
            names.append(sample["name"])
            nbytes += len(sample["data"])
        epochs.append(
            {"seconds": time.perf_counter() - t0, "first": first, "items": len(names), "bytes": nbytes, "names": names}
        )
    return {"epochs": epochs}


# -- the parent ------------------------------------------------------------------------------------
def _seed(root: Path, files: int, size: int) -> None:
    rng = random.Random(0)
    for i in range(files):
        p = root / f"class{i * CLASSES // files}" / f"{i:06d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rng.randbytes(size))


def _run(a, work: Path, python: str, spec: dict, link: Path) -> dict:
    from benchmarks.harness import fusevol
    from benchmarks.harness.runner import child_env

    run = work / "runs" / f"{spec['kind']}-{spec['what']}-{time.monotonic_ns()}"
    (run / "tmp").mkdir(parents=True)
    out = run / "result.json"
    env = child_env(run, AIR_VOLUMES_MOUNT=str(link))
    os.sync()
    lat = a.latency_ms
    with fusevol.mounted(work / "backing", work / "mnt", op_latency_ms=lat, read_latency_ms=lat, write_latency_ms=lat):
        p = subprocess.run(
            [python, str(Path(__file__).resolve()), "--child", json.dumps({**spec, "out": str(out)})],
            env=env,
            cwd=run,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    if p.returncode != 0:
        raise SystemExit(f"{spec['kind']} {spec['what']} failed: {p.stderr[-3000:]}")
    res = json.loads(out.read_text())
    shutil.rmtree(run, ignore_errors=True)
    return res


def _mosaic_missing(python: str) -> str:
    if not Path(python).exists():
        return f"{python} not found (make it: python -m venv DIR && DIR/bin/pip install -c <(echo torch==2.13.0) mosaicml-streaming)"
    probe = "import sys,types\nfor m in ('streaming.vision','streaming.text','streaming.multimodal'): sys.modules[m]=types.ModuleType(m)\nimport streaming"
    p = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120)
    return "" if p.returncode == 0 else f"{python} cannot import streaming: {p.stderr.strip().splitlines()[-1:]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1200)
    ap.add_argument("--size-kib", type=int, default=100)
    ap.add_argument("--latency-ms", type=float, default=10.0)
    ap.add_argument("--shard-size", default="16MiB")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mosaic-python", default="/tmp/venv-mosaic/bin/python")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 64 files x 8 KiB, 1 rep, 1 ms")
    ap.add_argument("--no-wait", action="store_true", help="accepted for the suite's smoke runs (nothing waits)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        spec = json.loads(a.child)
        res = (_child_air if spec["kind"] == "air" else _child_mosaic)(spec)
        Path(spec["out"]).write_text(json.dumps(res))
        return 0
    if a.quick:
        a.files, a.size_kib, a.reps, a.latency_ms, a.shard_size = 64, 8, 1, 1.0, "128KiB"
    from air_magics.io.units import parse_size
    from benchmarks.harness.mounts import REPO, fuse_unavailable, volumes_link
    from benchmarks.harness.runner import med, rotated

    if why := fuse_unavailable():
        print(f"bench_shards_mosaic skipped: {why}")
        return 0
    mosaic_note = _mosaic_missing(a.mosaic_python)
    work = Path(tempfile.mkdtemp(prefix="bench-shards-mosaic-"))
    link = Path(f"/Volumes-air-bench-mosaic-{os.getpid()}")
    mnt_data = work / "mnt" / "main" / "bench" / "data"
    size_limit = parse_size(a.shard_size) or 0
    packs: dict[str, list[dict]] = {"air": [], "mosaic": []}
    epochs: dict[str, list[dict]] = {"ceiling": [], "air": [], "mosaic": []}
    kinds = ["air"] + ([] if mosaic_note else ["mosaic"])
    try:
        _seed(work / "backing" / SRC, a.files, a.size_kib << 10)
        (work / "mnt").mkdir()
        with volumes_link(link, work / "mnt"):
            for rep in range(a.reps):  # pack: each rep into a fresh folder on the mount
                for kind in rotated(kinds, rep):
                    dest = f"packed-{kind}-{rep}"
                    spec = {"kind": kind, "what": "pack", "shard_size": a.shard_size, "size_limit": size_limit}
                    if kind == "air":
                        spec.update(src=f"/Volumes/{SRC}", dest=f"/Volumes/main/bench/data/{dest}")
                    else:
                        spec.update(src=str(mnt_data / "raw"), dest=str(mnt_data / dest))
                    python = sys.executable if kind == "air" else a.mosaic_python
                    packs[kind].append(_run(a, work, python, spec, link))
            for rep in range(a.reps):  # epochs over the first rep's folders, each on a fresh mount
                for what in rotated(["ceiling", *kinds], rep):
                    kind = "air" if what == "ceiling" else what
                    cache = work / "caches" / f"{what}-{rep}"
                    spec = {"kind": kind, "what": what, "cache": str(cache)}
                    if kind == "air":
                        spec["dest"] = "/Volumes/main/bench/data/packed-air-0"
                    else:
                        spec["dest"] = str(mnt_data / "packed-mosaic-0")
                    python = sys.executable if kind == "air" else a.mosaic_python
                    epochs[what].append(_run(a, work, python, spec, link))
                    shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = a.files * (a.size_kib << 10)
    for kind in kinds:
        for res in epochs[kind]:
            for ep in res["epochs"]:
                if ep["items"] != a.files or ep["bytes"] != total:
                    raise SystemExit(
                        f"{kind}: an epoch yielded {ep['items']} items, {ep['bytes']} bytes; expected {a.files}"
                    )
    commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True)
    print(
        f"## bench_shards_mosaic\n\n{a.files:,} files x {a.size_kib} KiB in {CLASSES} class folders, fusevol at "
        f"{a.latency_ms:g} ms per request, shards of {a.shard_size}, medians of {a.reps} interleaved reps, "
        f"air_magics {commit.stdout.strip()}"
    )
    if mosaic_note:
        print(f"\nmosaicml-streaming rows skipped: {mosaic_note}")
    print("\n| pack | shards | median s | MB/s |\n|---|---|---|---|")
    for kind, label in (("air", "air_magics `pack`"), ("mosaic", "mosaicml-streaming `MDSWriter` (64 reader threads)")):
        if packs[kind]:
            s = med(r["seconds"] for r in packs[kind])
            print(f"| {label} | {packs[kind][0]['shards']} | {s:.2f} | {total / s / 1e6:.1f} |")
    ceiling = med(r["seconds"] for r in epochs["ceiling"])
    print(
        f"\nread ceiling (the air shards' {epochs['ceiling'][0]['bytes'] / 1e6:.0f} MB through the mount): {ceiling:.2f} s"
    )
    print(
        "\n| epoch (shuffled) | cold s | cold x ceiling | first item s | warm s | warm items/s | largest-class share / batch |"
    )
    print("|---|---|---|---|---|---|---|")
    for kind, label in (("air", "air_magics, members by offset"), ("mosaic", "mosaicml-streaming `StreamingDataset`")):
        if not epochs[kind]:
            continue
        cold = med(r["epochs"][0]["seconds"] for r in epochs[kind])
        first = med(r["epochs"][0]["first"] for r in epochs[kind])
        warm = med(r["epochs"][1]["seconds"] for r in epochs[kind])
        share = med(_share([n.split("/")[0] for n in r["epochs"][0]["names"]]) for r in epochs[kind])
        print(
            f"| {label} | {cold:.2f} | {cold / ceiling:.2f}x | {first:.3f} | {warm:.3f} | {a.files / warm:,.0f} | {share:.3f} |"
        )
    rng = random.Random(7)
    raw = [f"class{i * CLASSES // a.files}" for i in range(a.files)]
    print(f"\nraw folder, full shuffle: largest-class share / batch {_share(rng.sample(raw, len(raw))):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
