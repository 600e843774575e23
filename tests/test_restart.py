"""Warm after a restart (issue 24): a new process over a warm cache, in real processes.

Each "process" is a fresh interpreter (tests/restart_worker.py) sharing this test's AIR_HOME; over
FUSE each one runs on a fresh mount of the project's volume tool (nothing in the kernel's attribute
cache), as after a kernel restart. A file rewritten between two processes, keeping its size (new
mtime) or its mtime (new size), must be read with its new bytes; every other file is served from the
cache after one source request each, and the cache view says how many files were revalidated.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from air_magics.status import read_status
from air_magics.widgets.cache_view import cache_text

FOLDER = "/Volumes/main/raw/img/d"
WORKER = Path(__file__).with_name("restart_worker.py")


class Volume:
    """Where the test writes the files, and how it runs a new process over them."""

    def __init__(self, root: Path, slowfs=None, tmp: Path | None = None) -> None:
        self.root, self._fs, self._tmp = root, slowfs, tmp
        self.requests: int | None = None  # FUSE requests of the last process (every kind but release)

    def process(self) -> dict:
        if self._fs is None:
            return _run()
        stats = self._tmp / "stats.json"
        stats.unlink(missing_ok=True)
        with self._fs.mounted(self._tmp / "backing", self._tmp / "mnt", op_latency_ms=1, stats=stats):
            out = _run()
        ops = json.loads(stats.read_text())["ops"]  # written at the server's exit: this process's total
        self.requests = sum(n for op, n in ops.items() if op != "release")
        return out


def _run() -> dict:
    p = subprocess.run([sys.executable, str(WORKER), FOLDER], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(params=["embedded", "fuse"])
def volume(request, tmp_path, monkeypatch) -> Volume:
    if request.param == "embedded":
        from air_magics.volumes.store import VolumeStore

        store = VolumeStore()
        store.create("main.raw.img")
        root = Path(store.locate(FOLDER).path)
        root.mkdir(parents=True)
        return Volume(root)
    slowfs = request.getfixturevalue("slowfs")
    root = tmp_path / "backing" / "main" / "raw" / "img" / "d"
    root.mkdir(parents=True)
    (tmp_path / "mnt").mkdir()
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
    return Volume(root, slowfs, tmp_path)


def _write(root: Path, n: int, size: int = 3000) -> dict[str, str]:
    out = {}
    for i in range(n):
        data = i.to_bytes(4, "big") * (size // 4)
        (root / f"f{i:04d}.bin").write_bytes(data)
        out[f"f{i:04d}.bin"] = hashlib.sha1(data).hexdigest()
    return out


def test_a_new_process_never_serves_a_rewritten_file_stale(volume):
    n = 40
    want = _write(volume.root, n)
    first = volume.process()
    assert first["files"] == want and first["misses"] == n
    # same size, new bytes, a later mtime
    same_size = volume.root / "f0003.bin"
    old = same_size.stat()
    data = b"\xff" * old.st_size
    same_size.write_bytes(data)
    os.utime(same_size, ns=(old.st_atime_ns, old.st_mtime_ns + 5_000_000_000))
    want[same_size.name] = hashlib.sha1(data).hexdigest()
    # same mtime (to the nanosecond), a new size
    same_mtime = volume.root / "f0017.bin"
    old = same_mtime.stat()
    data = b"\xee" * (old.st_size + 8)
    same_mtime.write_bytes(data)
    os.utime(same_mtime, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert same_mtime.stat().st_mtime_ns == old.st_mtime_ns
    want[same_mtime.name] = hashlib.sha1(data).hexdigest()

    second = volume.process()
    assert second["files"] == want  # the new bytes of both, the cached bytes of the rest
    assert second["hits"] == n - 2 and second["misses"] == 2
    v = second["validation"]
    assert v["revalidated"] == n and v["requests"] == n and v["valid"] == n - 2


def test_a_new_process_over_a_warm_cache_asks_the_volume_once_per_file(volume):
    n = 200
    want = _write(volume.root, n)
    assert volume.process()["files"] == want  # fills the cache
    warm = volume.process()
    assert warm["files"] == want
    assert warm["hits"] == n and warm["misses"] == 0  # every file served from the cache
    v = warm["validation"]
    assert v["revalidated"] == n and v["requests"] == n and v["valid"] == n and v["seconds"] > 0
    if volume.requests is not None:  # FUSE: the listing plus one request per file
        assert volume.requests <= 1.1 * n, volume.requests
    # the validation is visible: in the process's CacheInfo and, through its status document, the cache view
    assert warm["info"]["revalidated"] == n and warm["info"]["revalidation_seconds"] > 0
    doc = read_status("cache")
    assert doc is not None and doc["revalidated"] == n
    assert f"revalidated: {n:,} files against the volume in " in cache_text(doc, {})


def test_the_cache_view_says_how_many_files_were_revalidated_and_how_long_it_took():
    doc = {"hits": 1200, "misses": 0, "hit_rate": 1.0, "revalidated": 1200, "revalidation_seconds": 0.19}
    assert "revalidated: 1,200 files against the volume in 0.19 s (new process)" in cache_text(doc, {})
    assert "revalidated" not in cache_text({**doc, "revalidated": 0}, {})  # a warm epoch in one process asks nothing


def test_bench_restart_runs_and_prints_its_table(slowfs):
    """A smoke run of benchmarks/bench_restart.py (no figure asserted; the loader row needs torch: left out)."""
    p = subprocess.run(
        [sys.executable, "benchmarks/bench_restart.py", "--files", "30", "--size-kib", "4", "--latency-ms", "1"]
        + ["--reps", "1", "--modes", "bare,dataset"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "| iter(UCVolumeDataset) |" in p.stdout and "| floor: listdir" in p.stdout, p.stdout
