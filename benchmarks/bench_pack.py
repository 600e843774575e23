"""Packed shards on a slow FUSE volume, in one run: pack time vs ``tar -cf`` on the mount, the
unchanged re-pack, and cold/warm epochs through a DataLoader (its defaults) for the reference over
the raw folder, air_magics over the raw folder and air_magics over the packed folder.

Each epoch pair runs in its own interpreter (``benchmarks.scenarios.loader_child``, as in
``bench_loader.py``: the consumer opens and reads every yielded path) on a fresh mount of
``benchmarks/harness/fusevol.py`` (an empty page cache), with an empty cache. The reference runs in
its own venv (``--ref-python``) and reads through a ``/Volumes-air-bench-pack-<pid>`` symlink to
the mount; without that venv its row is skipped and says so. Never creates ``/Volumes``.

    .venv/bin/python benchmarks/bench_pack.py [--files 3000] [--size-kib 150] [--latency-ms 10] [--no-tar]
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

from benchmarks.harness import fusevol  # noqa: E402
from benchmarks.harness.mounts import REPO, fuse_unavailable, volumes_link  # noqa: E402
from benchmarks.harness.reference import reference_unavailable  # noqa: E402
from benchmarks.harness.runner import child_env  # noqa: E402

RAW, PACKED = "main/bench/data/raw", "main/bench/data/packed"


def _seed(root: Path, files: int, size: int) -> None:
    """One flat folder, as in bench_loader.py (the reference lists a folder's direct files only)."""
    rng = random.Random(0)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (root / f"f{i:06d}.bin").write_bytes(rng.randbytes(size))


def _mount(backing: Path, mnt: Path, lat: float):
    return fusevol.mounted(backing, mnt, op_latency_ms=lat, read_latency_ms=lat, write_latency_ms=lat)


def _loader(a, work: Path, link: Path, kind: str, rel: str, name: str, output: str | None = None) -> dict:
    """Cold and warm epoch of *kind*'s DataLoader (defaults) over *rel*, in a child on a fresh mount."""
    run = work / "runs" / name
    shutil.rmtree(run, ignore_errors=True)
    (run / "tmp").mkdir(parents=True)
    spec = {
        "kind": kind,
        "workers": None,
        "prefetch": None,
        "prefetch_factor": None,
        "ref_path": f"{link}/{rel}",
        "air_path": f"/Volumes/{rel}",
        "naive_path": f"{link}/{rel}",
        "result_file": str(run / "result.json"),
        "output": output,
    }
    env = child_env(run, AIR_VOLUMES_MOUNT=str(link))
    python = a.ref_python if kind == "ref" else sys.executable
    os.sync()
    with _mount(work / "backing", work / "mnt", a.latency_ms):
        p = subprocess.run(
            [python, "-m", "benchmarks.scenarios.loader_child", json.dumps(spec)],
            env=env,
            cwd=run,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    if p.returncode != 0:
        raise SystemExit(f"{name} failed: {p.stderr[-2000:]}")
    out = json.loads((run / "result.json").read_text())
    shutil.rmtree(run, ignore_errors=True)
    for ep in out["epochs"]:
        if ep["items"] != a.files or ep["bytes"] != a.files * a.size_kib * 1024:
            raise SystemExit(f"{name}: an epoch yielded {ep['items']} items, {ep['bytes']} bytes; expected {a.files}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--size-kib", type=int, default=150)
    ap.add_argument("--latency-ms", type=float, default=10.0)
    ap.add_argument("--shard-size", default="1GiB")
    ap.add_argument("--no-tar", action="store_true", help="skip `tar -cf` on the mount (1,000 files take ~60 s)")
    ap.add_argument("--ref-python", default="/tmp/refvenv/bin/python")
    a = ap.parse_args()
    if why := fuse_unavailable():
        print(f"bench_pack skipped: {why}")
        return 0
    ref_note = reference_unavailable(a.ref_python)
    work = Path(tempfile.mkdtemp(prefix="bench-pack-"))
    os.environ["AIR_HOME"] = str(work / "home")
    link = Path(f"/Volumes-air-bench-pack-{os.getpid()}")
    lat = a.latency_ms
    rows: list[tuple[str, str]] = []
    loaders: list[tuple[str, dict]] = []
    try:
        _seed(work / "backing" / RAW, a.files, a.size_kib << 10)
        (work / "mnt").mkdir()
        with volumes_link(link, work / "mnt"):
            os.environ["AIR_VOLUMES_MOUNT"] = str(link)
            from air_magics.shards import pack

            with _mount(work / "backing", work / "mnt", lat):
                data = work / "mnt" / "main" / "bench" / "data"
                if not a.no_tar:
                    t = time.perf_counter()
                    subprocess.run(
                        ["tar", "-b", "2048", "-cf", str(data / "baseline.tar"), "-C", str(data), "raw"], check=True
                    )
                    tar_s = time.perf_counter() - t
                    (data / "baseline.tar").unlink()
                    rows.append(("`tar -b 2048 -cf` on the mount (reads and writes the mount)", f"{tar_s:.1f} s"))
                r = pack(f"/Volumes/{RAW}", f"/Volumes/{PACKED}", shard_size=a.shard_size)
                again = pack(f"/Volumes/{RAW}", f"/Volumes/{PACKED}", shard_size=a.shard_size)
                assert again.unchanged
                speed = "" if a.no_tar else f" ({tar_s / r.seconds:.1f}x tar's speed)"
                rows += [(f"`pack` ({r.shards} shard(s))", f"{r.seconds:.1f} s{speed}")]
                rows += [("unchanged re-pack", f"{again.seconds:.2f} s")]
            runs = [
                ("air", RAW, "air_magics DataLoader, raw folder", None),
                ("air", PACKED, "air_magics DataLoader, packed", None),
                ("air", PACKED, "air_magics DataLoader, packed, `output='bytes'`", "bytes"),
            ]
            if not ref_note:
                runs.insert(0, ("ref", RAW, "reference DataLoader, raw folder", None))
            for kind, rel, label, output in runs:
                name = f"{kind}-{rel.rsplit('/', 1)[-1]}" + (f"-{output}" if output else "")
                loaders.append((label, _loader(a, work, link, kind, rel, name, output)))
    finally:
        os.environ.pop("AIR_VOLUMES_MOUNT", None)
        shutil.rmtree(work, ignore_errors=True)
    commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True)
    print(
        f"{a.files:,} files x {a.size_kib} KiB, fusevol at {lat:g} ms per request, air_magics {commit.stdout.strip()}"
    )
    if ref_note:
        print(f"reference rows skipped: {ref_note}")
    print("\n| measure | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    base = next((o for lbl, o in loaders if lbl.startswith("reference")), None)
    print("\n| loader (defaults) | first item s | cold files/s | cold x ref | warm files/s | warm x ref |")
    print("|---|---|---|---|---|---|")
    for label, o in loaders:
        cold, warm = (a.files / ep["seconds"] for ep in o["epochs"])
        if base is not None:
            bc, bw = (a.files / ep["seconds"] for ep in base["epochs"])
            xc, xw = f"{cold / bc:.2f}x", f"{warm / bw:.2f}x"
        else:
            xc = xw = "n/a"
        first = o["epochs"][0]["first_item"]
        print(f"| {label} | {first:.2f} | {cold:,.0f} | {xc} | {warm:,.0f} | {xw} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
