"""Checkpoints on volumes: DCP round trips, async saves, the commit protocol under kills and faults."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp
from ckpt_worker import model

from air_magics.checkpoints.commit import checkpoint_status
from air_magics.data import (
    CheckpointError,
    CheckpointManager,
    DataLoader,
    UCVolumeDataset,
    UCVolumeReader,
    UCVolumeWriter,
    load_torch,
    save_torch,
)
from air_magics.errors import VolumeNotFoundError, VolumePathError
from air_magics.status import list_status
from air_magics.volumes import VolumeStore
from air_magics.widgets import checkpoints_html, checkpoints_text

WORKER = Path(__file__).with_name("ckpt_worker.py")


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.ck.runs")
    s.create("main.ck.data")
    for i in range(40):
        with s.open(f"/Volumes/main/ck/data/{i:02d}.txt", "wb") as f:
            f.write(f"sample {i}".encode())
    return s


def trained():
    m = model()
    opt = torch.optim.AdamW(m.parameters(), lr=0.01)
    for _ in range(2):
        m(torch.randn(4, 16)).pow(2).sum().backward()
        opt.step()
    return m, opt


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_writer_reader_round_trip_bit_exact(vol):
    m, _ = trained()
    dcp.save({"model": m.state_dict()}, storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/plain"))
    files = sorted(os.listdir(vol.locate("/Volumes/main/ck/runs/plain").path))
    assert ".metadata" in files and any(f.endswith(".distcp") for f in files)
    m2 = model(seed=9)
    sd = {"model": m2.state_dict()}
    dcp.load(sd, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/plain"))
    m2.load_state_dict(sd["model"])
    assert same(m, m2)
    with pytest.raises(BaseException, match="already holds a checkpoint"):  # DCP wraps it in CheckpointException
        dcp.save({"model": m.state_dict()}, storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/plain"))
    torch_plain = {"model": model(seed=3).state_dict()}  # torch's own reader reads our layout
    dcp.load(torch_plain, storage_reader=dcp.FileSystemReader(vol.locate("/Volumes/main/ck/runs/plain").path))
    assert all(torch.equal(torch_plain["model"][k], v) for k, v in m.state_dict().items())


def test_manager_saves_restores_and_prunes(vol):
    m, opt = trained()
    dl = DataLoader(UCVolumeDataset("/Volumes/main/ck/data", shuffle=True), batch_size=4, num_workers=0)
    it = iter(dl)
    first = [x for _ in range(3) for x in next(it)]
    mgr = CheckpointManager("/Volumes/main/ck/runs/a", keep=2, show=False)
    assert mgr.latest() is None and mgr.restore(model=model()) is None
    for step in (100, 200, 300):
        mgr.save(step, model=m, optimizer=opt, loader=dl)
    assert mgr.steps() == [200, 300] and mgr.latest() == 300
    assert not vol.exists("/Volumes/main/ck/runs/a/step_100")
    m2, opt2 = model(seed=5), None
    opt2 = torch.optim.AdamW(m2.parameters(), lr=0.01)
    dl2 = DataLoader(UCVolumeDataset("/Volumes/main/ck/data", shuffle=True), batch_size=4, num_workers=2)
    assert mgr.restore(model=m2, optimizer=opt2, loader=dl2) == 300
    assert same(m, m2)
    s1, s2 = opt.state_dict()["state"], opt2.state_dict()["state"]
    assert all(torch.equal(s1[k]["exp_avg"], s2[k]["exp_avg"]) for k in s1)
    rest = [x for b in dl2 for x in b]
    assert sorted(Path(p).read_text() for p in first + rest) == sorted(f"sample {i}" for i in range(40))
    doc = checkpoint_status("/Volumes/main/ck/runs/a")
    assert doc["latest"] == 300 and [s["state"] for s in doc["saves"]] == ["committed"] * 3
    assert doc["saves"][-1]["bytes"] > 0 and doc["saves"][-1]["mb_per_s"] > 0
    assert "step 300" in checkpoints_text(doc) and "committed" in checkpoints_html(doc)
    assert list_status("checkpoints-")[0]["directory"] == "/Volumes/main/ck/runs/a"


def test_a_loader_alone_is_saved_and_restored(vol):
    """Ranks resume a data stream from the loader's position only: no model in the save or the restore."""
    dl = DataLoader(UCVolumeDataset("/Volumes/main/ck/data", shuffle=True, seed=3), batch_size=4, num_workers=0)
    it = iter(dl)
    first = [x for _ in range(4) for x in next(it)]
    mgr = CheckpointManager("/Volumes/main/ck/runs/loader", show=False)
    mgr.save(7, loader=dl)
    dl2 = DataLoader(UCVolumeDataset("/Volumes/main/ck/data", shuffle=True, seed=3), batch_size=4, num_workers=2)
    assert mgr.restore(loader=dl2) == 7
    rest = [x for b in dl2 for x in b]
    assert len(rest) == 40 - 16
    assert sorted(Path(p).read_text() for p in first + rest) == sorted(f"sample {i}" for i in range(40))
    m, _ = trained()
    mgr.save(8, model=m)
    with pytest.raises(CheckpointError, match="holds no loader state") as err:
        mgr.restore(loader=dl2)
    assert "save" in str(err.value) and "nothing to save" not in str(err.value)
    with pytest.raises(CheckpointError, match="nothing to restore into"):
        mgr.restore()


def test_async_save_blocks_briefly_then_commits(vol):
    mgr = CheckpointManager("/Volumes/main/ck/runs/async", show=False)
    big = {"w": torch.randn(8_000_000)}  # 32 MB
    t0 = time.perf_counter()
    mgr.save(1, big, blocking=False)
    blocked = time.perf_counter() - t0
    mgr.wait()
    rec = checkpoint_status("/Volumes/main/ck/runs/async")["saves"][-1]
    assert rec["state"] == "committed" and mgr.latest() == 1
    assert rec["blocked_s"] <= blocked + 0.01 and rec["seconds"] >= rec["blocked_s"]
    out = {"w": torch.zeros(8_000_000)}
    mgr.load(out)
    assert torch.equal(out["w"], big["w"])


def test_background_staging_saves_the_state_as_it_was_when_wait_staged_returns(vol):
    """The save call returns before the copy is taken; once wait_staged() returns, the weights may
    change in place (an optimizer step) and the checkpoint still holds the pre-step state, bit for bit."""
    mgr = CheckpointManager("/Volumes/main/ck/runs/staged", show=False)
    state = {"w": torch.randn(4_000_000), "b": torch.arange(1000, dtype=torch.float64)}
    before = {k: v.clone() for k, v in state.items()}
    mgr.save(1, state, blocking=False, background_staging=True)
    mgr.wait_staged()
    for v in state.values():  # the optimizer's step: in place, right after the copy is taken
        v.add_(1.0)
    mgr.wait_staged()  # (again: returns at once)
    mgr.wait()
    rec = checkpoint_status("/Volumes/main/ck/runs/staged")["saves"][-1]
    assert rec["state"] == "committed" and mgr.latest() == 1
    assert rec["staging_s"] >= rec["blocked_s"] and rec["seconds"] >= rec["staging_s"]
    out = {"w": torch.zeros(4_000_000), "b": torch.zeros(1000, dtype=torch.float64)}
    mgr.load(out)
    assert all(torch.equal(out[k], before[k]) for k in before)
    mgr.save(2, state, blocking=False, background_staging=True)  # the stager (its buffers) is reused
    mgr.wait()
    mgr.load(out)
    assert all(torch.equal(out[k], before[k] + 1.0) for k in before)
    mgr.wait_staged()  # nothing in flight: at once


def test_a_save_issued_before_the_previous_one_finished_says_so_in_the_view(vol):
    """One save in flight at a time: the next waits, and its record and the checkpoint view say how
    long (saves issued faster than they finish). 128 MB: hashing it alone takes a quarter second."""
    mgr = CheckpointManager("/Volumes/main/ck/runs/fast", show=False)
    state = {"w": torch.randn(32_000_000)}
    mgr.save(1, state, blocking=False, background_staging=True)
    mgr.save(2, state, blocking=False, background_staging=True)  # waits for step 1 to commit
    mgr.wait()
    doc = checkpoint_status("/Volumes/main/ck/runs/fast")
    first, second = doc["saves"][-2], doc["saves"][-1]
    assert first["state"] == second["state"] == "committed" and "waited_s" not in first
    assert second["waited_s"] > 0.05 and second["staging_s"] >= second["blocked_s"]
    text = checkpoints_text(doc)
    assert "saves are issued faster than they finish" in text and "staged in the background in" in text
    assert "saves are issued faster than they finish" in checkpoints_html(doc)


def test_bad_input(vol):
    with pytest.raises(VolumePathError, match="outside /Volumes"):
        CheckpointManager("/tmp/ckpts")
    with pytest.raises(VolumeNotFoundError, match="create it with"):
        CheckpointManager("/Volumes/main/ck/nope")
    with pytest.raises(CheckpointError, match="keep at least 1"):
        CheckpointManager("/Volumes/main/ck/runs/x", keep=0)
    mgr = CheckpointManager("/Volumes/main/ck/runs/b", show=False)
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        mgr.load({"w": torch.zeros(1)})
    mgr.save(1, {"w": torch.ones(3)})
    with pytest.raises(CheckpointError, match="never overwritten"):
        mgr.save(1, {"w": torch.ones(3)})
    with pytest.raises(CheckpointError, match="does not match"):
        mgr.load({"w": torch.zeros(5)})
    with pytest.raises(CheckpointError, match="missing or incomplete"):
        mgr.load({"w": torch.zeros(3)}, step=7)
    with pytest.raises(CheckpointError, match="nothing to save"):
        mgr.save(2)
    # a folder that looks like a step but was never committed is ignored
    d = vol.locate("/Volumes/main/ck/runs/b").path
    os.makedirs(os.path.join(d, "step_9"))
    Path(d, "step_9", ".metadata").write_bytes(b"junk")
    assert mgr.steps() == [1] and mgr.latest() == 1
    with pytest.raises(CheckpointError, match="has no .metadata|does not exist"):
        UCVolumeReader("/Volumes/main/ck/runs/b/step_77")


def test_fsspec_volume_checkpoints(vol):
    vol.register("ext.mem.ck", "memory://air-ckpt-test")
    mgr = CheckpointManager("/Volumes/ext/mem/ck/run", keep=1, show=False)
    mgr.save(1, {"w": torch.arange(10.0)})
    mgr.save(2, {"w": torch.arange(10.0) * 2})
    assert mgr.steps() == [2] and mgr.latest() == 2
    out = {"w": torch.zeros(10)}
    assert mgr.load(out) == 2 and torch.equal(out["w"], torch.arange(10.0) * 2)


def test_monolithic_torch_save(vol):
    m, _ = trained()
    n = save_torch(m.state_dict(), "/Volumes/main/ck/runs/model.pt")
    assert n == vol.stat("/Volumes/main/ck/runs/model.pt").size
    m2 = model(seed=4)
    m2.load_state_dict(load_torch("/Volumes/main/ck/runs/model.pt"))
    assert same(m, m2)
    with pytest.raises(Exception, match="Weights only load failed|weights_only"):
        save_torch({"f": print}, "/Volumes/main/ck/runs/evil.pt")
        load_torch("/Volumes/main/ck/runs/evil.pt")


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def test_saved_on_two_ranks_restored_on_one(vol, tmp_path):
    port = _port()
    env = dict(os.environ, OUT=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, str(WORKER), "save2", str(r), port], env=env) for r in range(2)]
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    mgr = CheckpointManager("/Volumes/main/ck/runs/dist", show=False)
    assert mgr.latest() == 5
    marker = json.loads(Path(vol.locate("/Volumes/main/ck/runs/dist/step_5/_COMMITTED").path).read_text())
    assert {n[:4] for n in marker["files"] if n.endswith(".distcp")} == {"__0_", "__1_"}  # both ranks' digests
    assert mgr.verify() == 5
    m = model(seed=7)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    dl = DataLoader(UCVolumeDataset("/Volumes/main/ck/data", shuffle=True, seed=1), batch_size=3, num_workers=2)
    assert mgr.restore(model=m, optimizer=opt, loader=dl) == 5
    assert m[0].weight.sum().item() == pytest.approx(ranks[0]["weight"])
    delivered = [Path(p).read_text() for r in ranks for p in r["items"]] + [Path(p).read_text() for b in dl for p in b]
    assert sorted(delivered) == sorted(f"sample {i}" for i in range(40))


@pytest.mark.fuse
def test_kill_mid_save_keeps_previous_checkpoint(slowfs, tmp_path, monkeypatch):
    backing = tmp_path / "backing"
    (backing / "main" / "ck" / "runs").mkdir(parents=True)
    with slowfs.mounted(backing, tmp_path / "mnt", op_latency_ms=2, mbps=15):  # 40 MB at 15 MB/s: ~3 s upload
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        proc = subprocess.Popen([sys.executable, str(WORKER), "slow_save", "40"], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "saved 1"
        mgr = CheckpointManager("/Volumes/main/ck/runs/kill", show=False)
        deadline = time.time() + 60
        while time.time() < deadline:
            saves = checkpoint_status("/Volumes/main/ck/runs/kill")["saves"]
            if saves and saves[-1]["step"] == 2 and saves[-1]["state"] == "uploading":
                break
            time.sleep(0.02)
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert mgr.latest() == 1 and mgr.steps() == [1]
        assert checkpoint_status("/Volumes/main/ck/runs/kill")["pending"] == [".pending-step_2"]
        out = {"w": torch.ones(10)}
        assert mgr.load(out) == 1 and torch.equal(out["w"], torch.zeros(10))
        assert mgr.cleanup() == [".pending-step_2"]
        mgr.save(2, {"w": torch.full((10,), 2.0)})  # the step can be saved again
        assert mgr.latest() == 2


@pytest.mark.fuse
def test_upload_faults_retried_or_reported(slowfs, tmp_path, monkeypatch):
    backing = tmp_path / "backing"
    (backing / "main" / "ck" / "runs").mkdir(parents=True)
    with slowfs.mounted(
        backing,
        tmp_path / "mnt",
        op_latency_ms=1,
        fail_rate=0.5,
        fail_ops="create,write",
        fail_paths="*.distcp*",
        fail_times=1,
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        mgr = CheckpointManager("/Volumes/main/ck/runs/f", show=False)
        w = {"w": torch.randn(100_000), "b": torch.randn(1000)}
        mgr.save(1, w)  # transient faults: retried
        out = {"w": torch.zeros(100_000), "b": torch.zeros(1000)}
        mgr.load(out)
        assert torch.equal(out["w"], w["w"]) and torch.equal(out["b"], w["b"])
    with slowfs.mounted(
        backing,
        tmp_path / "mnt2",
        op_latency_ms=1,
        fail_rate=1,
        fail_ops="create",
        fail_paths="*.distcp*",
        fail_times=1000,
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt2"))
        mgr = CheckpointManager("/Volumes/main/ck/runs/f", show=False)
        with pytest.raises(CheckpointError, match="failed"):
            mgr.save(2, {"w": torch.randn(1000)})
        assert mgr.latest() == 1
        assert checkpoint_status("/Volumes/main/ck/runs/f")["saves"][-1]["state"] == "failed"
