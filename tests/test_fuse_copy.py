"""Integration tests on a real FUSE volume (slowfs): latency, transient and permanent faults, kills."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import pytest
from conftest import make_tree, sha

import air_magics
from air_magics.errors import DestinationError
from air_magics.transfer import DESTINATION, SOURCE, TEMP_MARK, copy_files, plan_copy
from air_magics.volumes import VolumeStore
from air_magics.volumes.location import Location

pytestmark = pytest.mark.fuse


@pytest.fixture
def backing(tmp_path):
    b = tmp_path / "backing"
    hashes = make_tree(b / "main" / "raw" / "img" / "data", n_dirs=8, per_dir=25, size=8192)
    return b, hashes


def mount(slowfs, backing, mnt, monkeypatch, **opts):
    """Mount and make it *the* /Volumes mount the store resolves to."""
    cm = slowfs.mounted(backing, mnt, **opts)
    cm.__enter__()
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(mnt))
    return cm


def tree_hashes(dest):
    return {
        os.path.relpath(os.path.join(d, f), dest): sha(os.path.join(d, f)) for d, _, fs in os.walk(dest) for f in fs
    }


def expected(hashes):
    return {f"data/{k}": v for k, v in hashes.items()}


def test_copy_from_slow_mount_is_complete(slowfs, backing, tmp_path, monkeypatch):
    b, hashes = backing
    with slowfs.mounted(b, tmp_path / "mnt", op_latency_ms=5, read_latency_ms=2):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        store = VolumeStore()
        assert store.kind == "mount"
        r = air_magics.copy(["/Volumes/main/raw/img/data"], str(tmp_path / "out"), store=store, workers=32)
        assert r.ok and r.copied == 200
        assert tree_hashes(tmp_path / "out") == expected(hashes)
        again = air_magics.copy(["/Volumes/main/raw/img/data"], str(tmp_path / "out"), store=store)
        assert again.skipped == 200 and again.copied == 0


def test_transient_read_faults_are_retried(slowfs, backing, tmp_path, monkeypatch):
    b, hashes = backing
    stats = tmp_path / "stats.json"
    with slowfs.mounted(
        b,
        tmp_path / "mnt",
        op_latency_ms=2,
        fail_rate=0.3,
        fail_ops="open,read",
        fail_times=2,
        direct_io=True,
        stats=stats,
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        r = air_magics.copy(["/Volumes/main/raw/img/data"], str(tmp_path / "out"), workers=16, backoff=0.01)
    assert r.ok, str(r)
    assert tree_hashes(tmp_path / "out") == expected(hashes)
    faults = json.loads(stats.read_text())["faults"]
    assert sum(faults.values()) > 20, faults  # faults really happened and were survived


def test_permanent_fault_reported_by_name_others_land(slowfs, backing, tmp_path, monkeypatch):
    b, hashes = backing
    bad = "main/raw/img/data/part0/d1/f0003.bin"
    with slowfs.mounted(
        b, tmp_path / "mnt", op_latency_ms=2, fail_rate=1, fail_ops="open", fail_paths=bad, fail_times=1000
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        r = air_magics.copy(["/Volumes/main/raw/img/data"], str(tmp_path / "out"), backoff=0.01)
    assert r.copied == 199 and len(r.failed) == 1
    f = r.failed[0]
    assert f.src.endswith(bad) and "Errno 5" in f.reason and f.attempts == 5
    want = expected(hashes)
    del want["data/part0/d1/f0003.bin"]
    assert tree_hashes(tmp_path / "out") == want


def test_a_failure_carries_the_side_that_failed(slowfs, backing, tmp_path, monkeypatch):
    """The side is data set where the failure happens (CopyFailure.side), not guessed afterwards: a
    source the volume cannot open (EIO on every open) fails reading the source; a read-only
    destination (a read-only mount, met at copy time, past the planner's check) writing it."""
    b, _ = backing
    bad = "main/raw/img/data/part0/d1/f0003.bin"
    with slowfs.mounted(
        b, tmp_path / "mnt", op_latency_ms=1, fail_rate=1, fail_ops="open", fail_paths=bad, fail_times=1000
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        plan = plan_copy(["/Volumes/main/raw/img/data/part0/d1"], str(tmp_path / "out"))
        r = copy_files(plan.tasks, dest=plan.dest, retries=0)
    [f] = r.failed
    assert f.src.endswith(bad) and f.side == SOURCE, f
    assert f.reason.startswith("reading the source: OSError: [Errno 5]"), f.reason
    assert r.copied == len(plan.tasks) - 1

    (tmp_path / "ro-backing").mkdir()
    local = b / "main" / "raw" / "img" / "data" / "part0" / "d1"
    plan = plan_copy([str(local)], str(tmp_path / "planned"))
    with slowfs.mounted(tmp_path / "ro-backing", tmp_path / "ro", op_latency_ms=1, read_only=True):
        ro = str(tmp_path / "ro" / "new")
        tasks = [replace(t, dst=Location(t.dst.path.replace(plan.dest, ro, 1), root=ro)) for t in plan.tasks]
        r = copy_files(tasks, dest=ro, retries=0)
    assert r.copied == 0 and len(r.failed) == len(tasks) and {f.side for f in r.failed} == {DESTINATION}
    assert all(f.reason.startswith("writing the destination: OSError: [Errno 30]") for f in r.failed), r.failed[0]


def test_upload_to_slow_volume_with_write_faults(slowfs, backing, tmp_path, monkeypatch):
    b, hashes = backing
    local = tmp_path / "local"
    (b / "main" / "raw" / "up").mkdir(parents=True)
    make_tree(local / "data", n_dirs=4, per_dir=10, size=4096, seed=3)
    with slowfs.mounted(
        b, tmp_path / "mnt", op_latency_ms=2, fail_rate=0.2, fail_ops="create,write,rename", fail_times=1
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        r = air_magics.copy([str(local / "data")], "/Volumes/main/raw/up/in", backoff=0.01)
        assert r.ok, str(r)
    assert tree_hashes(b / "main/raw/up/in") == tree_hashes(local)


def test_read_only_destination_is_refused_before_writing(slowfs, backing, tmp_path, monkeypatch):
    b, _ = backing
    with slowfs.mounted(b, tmp_path / "mnt", op_latency_ms=1, read_only=True):
        with pytest.raises(DestinationError, match="not writable"):
            air_magics.copy([str(tmp_path / "backing" / "main")], str(tmp_path / "mnt" / "new"))
        assert not (tmp_path / "mnt" / "new").exists()


KILL_SCRIPT = textwrap.dedent("""
    import sys, air_magics
    air_magics.copy([sys.argv[1]], sys.argv[2], workers=8)
""")


def test_kill_mid_copy_leaves_no_partial_file(slowfs, tmp_path, monkeypatch):
    b = tmp_path / "backing"
    big = b / "main" / "raw" / "img" / "big"
    big.mkdir(parents=True)
    for i in range(40):
        (big / f"blob{i:02d}.bin").write_bytes(os.urandom(2 << 20))
    dest = tmp_path / "out"
    with slowfs.mounted(b, tmp_path / "mnt", op_latency_ms=2, mbps=40):  # ~80 MB at 40 MB/s: ~2 s
        env = dict(os.environ, AIR_VOLUMES_MOUNT=str(tmp_path / "mnt"))
        proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, "/Volumes/main/raw/img/big", str(dest)], env=env)
        deadline = time.time() + 30
        while time.time() < deadline and len(list(dest.rglob("blob*.bin"))) < 3:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finals = [p for p in dest.rglob("*") if p.is_file() and TEMP_MARK not in p.name]
    assert 3 <= len(finals) < 40, "the kill should land mid-copy"
    for p in finals:  # every file under its final name is complete
        assert sha(p) == sha(big / p.name), p


def test_interrupt_stops_early_and_leaves_no_partial_files(slowfs, backing, tmp_path, monkeypatch):
    """Ctrl-C (KeyboardInterrupt in the calling thread) stops handing out files; no partial file."""
    from air_magics.transfer import copy_files, plan_copy

    b, hashes = backing
    with slowfs.mounted(b, tmp_path / "mnt", op_latency_ms=5, read_latency_ms=5):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        plan = plan_copy(["/Volumes/main/raw/img/data"], str(tmp_path / "out"))

        def ctrl_c(event):
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            copy_files(plan.tasks, workers=2, listeners=[ctrl_c], progress_interval=0.0, dest=plan.dest)
    landed = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert len(landed) < 200
    for p in landed:
        assert TEMP_MARK not in p.name
        assert sha(p) == hashes[str(p.relative_to(tmp_path / "out" / "data"))]


def test_a_create_fault_on_every_new_name_is_retried_through_the_write_probe(slowfs, backing, tmp_path, monkeypatch):
    """Issue 36 item 6: every name's first create fails once (fail_rate=1, fail_times=1): a retry on
    the same name gets through. The destination's write probe took a fresh random name per try, so
    it met a fresh fault every time and refused the copy ("not writable", nothing copied); whether
    a run failed depended on which names it drew. Now the probe retries one name, like the copy."""
    b, _ = backing
    local = tmp_path / "local"
    (b / "main" / "raw" / "up").mkdir(parents=True)
    make_tree(local / "data", n_dirs=2, per_dir=5, size=1024, seed=4)
    with slowfs.mounted(b, tmp_path / "mnt", op_latency_ms=1, fail_rate=1.0, fail_ops="create", fail_times=1):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        r = air_magics.copy([str(local / "data")], "/Volumes/main/raw/up/in", backoff=0.01)
        assert r.ok, str(r)
    assert tree_hashes(b / "main/raw/up/in") == tree_hashes(local)


def test_a_flush_fault_on_every_new_name_neither_aborts_the_copy_nor_escapes_the_probe(
    slowfs, backing, tmp_path, monkeypatch
):
    """Issue 49 item 3: the write probe's close is a FUSE flush; a fault there escaped the probe as a
    traceback and aborted the copy with nothing landed. Every name's first flush, create, write and
    rename fails once here (the probe's name included), so the probe and each file meet a fault."""
    b, _ = backing
    local = tmp_path / "local"
    (b / "main" / "raw" / "up").mkdir(parents=True)
    make_tree(local / "data", n_dirs=3, per_dir=10, size=1024, seed=5)
    with slowfs.mounted(
        b, tmp_path / "mnt", op_latency_ms=1, fail_rate=1.0, fail_ops="flush,create,write,rename", fail_times=1
    ) as _:
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        r = air_magics.copy([str(local / "data")], "/Volumes/main/raw/up/in", backoff=0.01)
        assert r.ok and r.copied == 30, str(r)
    assert tree_hashes(b / "main/raw/up/in") == tree_hashes(local)
    assert not [p for p in (b / "main/raw/up").iterdir() if "air-write-probe" in p.name]


def test_a_probe_that_only_meets_transient_faults_lets_the_copy_decide(slowfs, backing, tmp_path, monkeypatch):
    """A transient error that outlasts the probe's retries (every flush of the probe's name fails)
    says nothing about permissions: the copy goes on, and its files land."""
    b, _ = backing
    local = tmp_path / "local"
    (b / "main" / "raw" / "up").mkdir(parents=True)
    make_tree(local / "data", n_dirs=1, per_dir=5, size=1024, seed=6)
    with slowfs.mounted(
        b,
        tmp_path / "mnt",
        op_latency_ms=1,
        fail_rate=1.0,
        fail_ops="flush",
        fail_times=100,
        fail_paths="*air-write-probe*",
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        r = air_magics.copy([str(local / "data")], "/Volumes/main/raw/up/in", backoff=0.001)
        assert r.ok and r.copied == 5, str(r)
    assert tree_hashes(b / "main/raw/up/in") == tree_hashes(local)
