"""The FUSE volume tool the tests and benchmarks use (benchmarks/harness/fusevol.py), checked on real mounts.

Each behaviour is checked on both engines (the C one on libfuse3 and the mfusepy fallback) where that
engine can run here. Latency checks are lower bounds only: they prove the wait happens, not how fast.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks.harness import fusevol
from benchmarks.harness.fusevol_py import fault_hash

pytestmark = pytest.mark.fuse


@pytest.fixture(params=["c", "python"])
def engine(request):
    if why := fusevol.unavailable(request.param):
        pytest.skip(why)
    return request.param


@pytest.fixture
def backing(tmp_path):
    b = tmp_path / "backing"
    (b / "data").mkdir(parents=True)
    (b / "data" / "x.bin").write_bytes(b"x" * 1000)
    (b / "other.txt").write_text("other")
    return b


def _stats(path: Path) -> dict:
    return json.loads(path.read_text())


def test_every_request_waits_the_latency(engine, backing, tmp_path):
    mnt = tmp_path / "mnt"
    with fusevol.mounted(backing, mnt, op_latency_ms=100, attr_timeout=0, entry_timeout=0, engine=engine):
        t = time.perf_counter()
        os.stat(mnt / "other.txt")  # one lookup at least, nothing cached
        took = time.perf_counter() - t
    assert took >= 0.08, took


def test_concurrent_requests_overlap(engine, backing, tmp_path):
    mnt, stats = tmp_path / "mnt", tmp_path / "stats.json"
    for i in range(16):
        (backing / f"f{i}").write_bytes(b"y" * 100)
    opts = dict(op_latency_ms=0, read_latency_ms=300, direct_io=True, stats=stats)
    with fusevol.mounted(backing, mnt, engine=engine, **opts):
        fds = [os.open(mnt / f"f{i}", os.O_RDONLY) for i in range(16)]
        try:
            with ThreadPoolExecutor(16) as pool:
                assert list(pool.map(lambda fd: os.pread(fd, 100, 0), fds)) == [b"y" * 100] * 16
        finally:
            for fd in fds:
                os.close(fd)
    assert _stats(stats)["peak_inflight"] >= 8  # 16 reads, each waiting 0.3 s: they were served side by side


def test_faults_hit_matching_calls_at_most_fail_times_then_a_retry_gets_through(engine, backing, tmp_path):
    mnt, stats = tmp_path / "mnt", tmp_path / "stats.json"
    opts = dict(op_latency_ms=0, fail_rate=1, fail_ops="open", fail_paths="data/*", fail_times=2, stats=stats)
    with fusevol.mounted(backing, mnt, engine=engine, **opts):
        for _ in range(2):
            with pytest.raises(OSError) as exc:
                open(mnt / "data" / "x.bin", "rb")
            assert exc.value.errno == errno.EIO
        assert (mnt / "data" / "x.bin").read_bytes() == b"x" * 1000  # the third call gets through
        assert (mnt / "other.txt").read_text() == "other"  # outside fail_paths: never fails
    doc = _stats(stats)
    assert doc["faults"] == {"open": 2} and doc["ops"]["open"] == 4


def _expected_outcomes(seed: int, rate: float, times: int, calls: int) -> list[bool]:
    """Which of the first *calls* opens of data/x.bin fail, by the documented rule (computed here)."""
    out, fails = [], 0
    for k in range(calls):
        draw = (fault_hash(f"{seed}:open:data/x.bin:{k}".encode()) >> 11) / 2**53
        fail = fails < times and draw < rate
        fails += fail
        out.append(fail)
    return out


def _outcomes(mnt: Path, calls: int) -> list[bool]:
    out = []
    for _ in range(calls):
        try:
            open(mnt / "data" / "x.bin", "rb").close()
            out.append(False)
        except OSError as e:
            assert e.errno == errno.EIO
            out.append(True)
    return out


def test_fault_draws_are_deterministic_per_seed(engine, backing, tmp_path):
    opts = dict(op_latency_ms=0, fail_rate=0.5, fail_ops="open", fail_times=3, engine=engine)
    seen = {}
    for seed in (1, 2):
        with fusevol.mounted(backing, tmp_path / "mnt", fault_seed=seed, **opts):
            seen[seed] = _outcomes(tmp_path / "mnt", 12)
        assert seen[seed] == _expected_outcomes(seed, 0.5, 3, 12)  # the same calls fail on every run and engine
    assert seen[1] != seen[2] and all(sum(s) == 3 for s in seen.values())


def test_read_only_refuses_writes(engine, backing, tmp_path):
    mnt = tmp_path / "mnt"
    with fusevol.mounted(backing, mnt, op_latency_ms=0, read_only=True, engine=engine):
        assert (mnt / "other.txt").read_text() == "other"
        for attempt in (lambda: (mnt / "new.txt").write_text("no"), lambda: (mnt / "other.txt").unlink()):
            with pytest.raises(OSError) as exc:
                attempt()
            assert exc.value.errno == errno.EROFS
    assert sorted(p.name for p in backing.iterdir()) == ["data", "other.txt"]


def test_stats_count_requests_and_bytes(engine, backing, tmp_path):
    mnt, stats = tmp_path / "mnt", tmp_path / "stats.json"
    payload = os.urandom(300_000)
    with fusevol.mounted(backing, mnt, op_latency_ms=0, engine=engine, stats=stats):
        (mnt / "new.bin").write_bytes(payload)
        assert (mnt / "new.bin").read_bytes() == payload
        os.rename(mnt / "new.bin", mnt / "moved.bin")
    doc = _stats(stats)  # rewritten when the server exits
    assert doc["engine"] == engine and doc["bytes_written"] == len(payload) and doc["bytes_read"] == len(payload)
    assert doc["ops"]["create"] == 1 and doc["ops"]["rename"] == 1 and doc["ops"]["read"] >= 1
    assert doc["inflight"] == 0 and doc["peak_inflight"] >= 1 and (backing / "moved.bin").read_bytes() == payload


def test_the_mount_is_gone_after_the_block_even_when_busy_or_failing(engine, backing, tmp_path):
    mnt = tmp_path / "mnt"
    with pytest.raises(KeyError):
        with fusevol.mounted(backing, mnt, op_latency_ms=0, engine=engine) as pid:
            assert fusevol.fstype(mnt) == "fuse.fusevol"
            busy = open(mnt / "other.txt", "rb")  # still open at exit: the unmount has to be lazy
            raise KeyError("the block fails")
    busy.close()
    assert fusevol.fstype(mnt) is None and not os.path.exists(f"/proc/{pid}")  # unmounted and reaped


def test_a_mount_that_cannot_be_made_raises(backing, tmp_path):
    if why := fusevol.unavailable():
        pytest.skip(why)
    (tmp_path / "a-file").write_text("")
    cases = [
        (dict(backing=tmp_path / "missing", mnt=tmp_path / "m1"), "does not exist"),
        (dict(backing=backing, mnt=backing / "inside"), "must not contain"),
        (dict(backing=backing, mnt=tmp_path / "a-file" / "m"), "cannot create mount point"),
        (dict(backing=backing, mnt=tmp_path / "m2", colour="red"), "valid options"),
        (dict(backing=backing, mnt=tmp_path / "m3", fail_ops="open,teleport"), "teleport"),
    ]
    for kw, text in cases:
        with pytest.raises(fusevol.FuseVolError, match=text):
            with fusevol.mounted(kw.pop("backing"), kw.pop("mnt"), **kw):
                pass
    with fusevol.mounted(backing, tmp_path / "m4", op_latency_ms=0):
        with pytest.raises(fusevol.FuseVolError, match="already a mount point"):
            with fusevol.mounted(backing, tmp_path / "m4"):
                pass
    assert issubclass(fusevol.FuseVolError, RuntimeError)


def test_the_c_engine_is_built_once_per_source_even_by_concurrent_first_uses(tmp_path, monkeypatch):
    if why := fusevol.unavailable("c"):
        pytest.skip(why)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with ThreadPoolExecutor(2) as pool:
        built = list(pool.map(lambda _: fusevol.c_engine(), range(2)))
    assert built[0] == built[1] and built[0].parent.parent == tmp_path / "cache" / "air-fusevol"
    assert os.access(built[0], os.X_OK) and os.listdir(built[0].parent) == ["fusevol"]  # no temp files left
    (tmp_path / "b").mkdir()
    with fusevol.mounted(tmp_path / "b", tmp_path / "m", op_latency_ms=0, engine="c") as pid:
        assert Path(f"/proc/{pid}/exe").resolve() == built[0]  # the server is the binary just built


def test_command_line_mounts_detached_and_unmounts(backing, tmp_path):
    if why := fusevol.unavailable():
        pytest.skip(why)
    mnt = tmp_path / "mnt"
    cli = [sys.executable, "-m", "benchmarks.harness.fusevol"]
    repo = Path(fusevol.__file__).resolve().parents[2]
    up = subprocess.run(
        [*cli, str(backing), str(mnt), "--op-latency-ms", "1"], cwd=repo, capture_output=True, text=True
    )
    try:
        assert up.returncode == 0, up.stderr
        pid = int(up.stdout)
        assert fusevol.fstype(mnt) == "fuse.fusevol" and (mnt / "other.txt").read_text() == "other"
    finally:
        down = subprocess.run([*cli, "--unmount", str(mnt)], cwd=repo, capture_output=True, text=True)
    assert down.returncode == 0 and fusevol.fstype(mnt) is None
    for _ in range(200):  # the detached server exits once unmounted (it is not our child to reap)
        if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"server {pid} still runs after --unmount")
