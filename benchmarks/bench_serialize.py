"""What a DCP save costs before any volume: the same state written into RAM (``/dev/shm``).

Why: ``bench_checkpoint``'s ceiling (8 plain threads writing the tensors' raw bytes to the mount)
has no format, no checksum and no commit. This measures, with no volume at all, what torch's own
format and our checksums cost on this machine, so the gap to that ceiling can be split into
"serializing" and "the volume":

- ``plain8``: the tensors' bytes in 8 files, 8 plain threads (the ceiling's work, in RAM);
- ``torch8``: torch's ``FileSystemWriter(thread_count=8)`` (its format: ``torch.save`` per item);
- ``direct8``: air_magics' writer path (``DirectVolumeFS``: torch's threads, chunked writes, xxh3-128
  computed in the stream, no zip CRC32), as ``UCVolumeWriter`` uses it on a mounted volume.

Run: ``.venv/bin/python benchmarks/bench_serialize.py [--size-mb 256] [--reps 5]``; prints a
markdown table (medians; CPU = user + system seconds of this process).
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import sys
import tempfile
import threading
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _state(size_mb: int, n: int = 100) -> dict:
    import torch

    g = torch.Generator().manual_seed(0)
    return {f"t{i}": torch.randn(size_mb * (1 << 20) // 4 // n, generator=g) for i in range(n)}


def _plain8(state: dict, folder: Path) -> None:
    tensors = list(state.values())
    groups = [tensors[g::8] for g in range(8)]

    def write(g: int) -> None:
        with open(folder / f"part{g}", "wb", buffering=0) as f:
            for t in groups[g]:
                f.write(memoryview(t.numpy()).cast("B"))

    threads = [threading.Thread(target=write, args=(g,)) for g in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _dcp(state: dict, folder: Path, direct: bool) -> None:
    import torch.distributed.checkpoint as dcp

    writer = dcp.FileSystemWriter(folder, thread_count=8, sync_files=False)
    if direct:
        from air_magics.checkpoints.direct_write import DirectVolumeFS

        writer.fs = DirectVolumeFS(None)
        writer.path = str(folder)
    dcp.save(state, storage_writer=writer)


class _Discard(io.RawIOBase):
    """A stream that keeps nothing: what ``torch.save`` costs without any write."""

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        return memoryview(b).nbytes


def _torch_save_each(state: dict, crc32: bool) -> None:
    import torch
    import torch.serialization as ts

    before = ts.get_crc32_options()
    ts.set_crc32_options(crc32)
    try:
        for t in state.values():
            torch.save(t, _Discard())
    finally:
        ts.set_crc32_options(before)


def _hash_each(state: dict) -> None:
    from air_magics.checkpoints.digests import new_hasher

    for t in state.values():
        new_hasher().update(memoryview(t.numpy()).cast("B"))


PARTS = {  # one thread each: what DCP's path adds to the raw bytes' writing, measured apart
    "`torch.save` of each tensor into a stream that keeps nothing, with zip CRC32 (torch's default)": partial(
        _torch_save_each, crc32=True
    ),
    "... without zip CRC32 (as `DirectVolumeFS` writes)": partial(_torch_save_each, crc32=False),
    "xxh3-128 of every tensor's bytes (the checksums `DirectVolumeFS` computes in the stream)": _hash_each,
}


def _loads_back(state: dict, folder: Path) -> bool:
    """Whether plain torch loads the checkpoint in *folder* back as *state*, bit for bit."""
    import torch
    import torch.distributed.checkpoint as dcp

    out = {k: torch.zeros_like(v) for k, v in state.items()}
    dcp.load(out, storage_reader=dcp.FileSystemReader(folder))
    return all(torch.equal(out[k], v) for k, v in state.items())


METHODS = {
    "plain8": ("8 plain threads, the tensors' bytes (the ceiling's work)", lambda s, d: _plain8(s, d)),
    "torch8": ("torch `FileSystemWriter(thread_count=8)`", lambda s, d: _dcp(s, d, direct=False)),
    "direct8": (
        "air_magics `DirectVolumeFS` (torch's threads + xxh3-128 in the stream, no zip CRC32)",
        lambda s, d: _dcp(s, d, True),
    ),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None, help="a RAM folder")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 8 MB, one rep")
    ap.add_argument("--no-wait", action="store_true", help="accepted for the suite's runner (never waits anyway)")
    a = ap.parse_args(argv)
    if a.quick:
        a.size_mb, a.reps = 8, 1
    warnings.filterwarnings("ignore")  # DCP warns on every single-process save
    state = _state(a.size_mb)
    _dcp(_state(1, 4), Path(tempfile.mkdtemp(dir=a.dir)), direct=True)  # warm-up: imports, first DCP call
    times: dict[str, list[tuple[float, float]]] = {m: [] for m in METHODS}
    parts: dict[str, list[float]] = {}
    for rep in range(a.reps):  # interleaved
        for method, (_, fn) in METHODS.items():
            folder = Path(tempfile.mkdtemp(prefix=f"air-ser-{method}-", dir=a.dir))
            t, c = time.perf_counter(), time.process_time()
            fn(state, folder)
            times[method].append((time.perf_counter() - t, time.process_time() - c))
            if method == "direct8" and rep == 0 and not _loads_back(state, folder):
                print(f"**bench_serialize**: the direct8 checkpoint in {folder} does not load back bit for bit")
                return 1
            shutil.rmtree(folder, ignore_errors=True)
        for part, fn in PARTS.items():
            c = time.process_time()
            fn(state)
            parts.setdefault(part, []).append(time.process_time() - c)
        print(f"rep {rep + 1}/{a.reps} done", file=sys.stderr)
    ceiling = statistics.median(w for w, _ in times["plain8"])
    print(f"## bench_serialize: a {a.size_mb} MB DCP state (100 float32 tensors) written into {a.dir}, no volume\n")
    print(f"{a.reps} interleaved reps, medians; the direct8 checkpoint loads back bit for bit with plain torch\n")
    print("| method | s (min-max) | MB/s | x plain8 | CPU s |")
    print("|---|---|---|---|---|")
    for method, (label, _) in METHODS.items():
        walls = [w for w, _ in times[method]]
        wall = statistics.median(walls)
        cpu = statistics.median(c for _, c in times[method])
        print(
            f"| {label} | {wall:.3f} ({min(walls):.3f}-{max(walls):.3f}) | {a.size_mb / wall:,.0f} | "
            f"{ceiling / wall:.2f}x | {cpu:.2f} |"
        )
    print(f"\nWhere the CPU goes, each part alone on one thread over the same {a.size_mb} MB (medians):\n")
    print("| part | CPU s (min-max) |")
    print("|---|---|")
    for part, cpus in parts.items():
        print(f"| {part} | {statistics.median(cpus):.3f} ({min(cpus):.3f}-{max(cpus):.3f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
