"""What a manager's save and load do on the training loop's clock: lookups relative to its held
folder (checkpoints/held_folder.py: a crashed attempt's leftover removed, an existing step refused, the
``latest`` pointer trusted only for a complete step), and a background save's DCP call on a
thread of its own (checkpoints/dcp_calls.py: its failure reaches the record, not the caller)."""

import os
from pathlib import Path

import pytest
import torch

from air_magics.checkpoints.held_folder import HeldFolder
from air_magics.data import CheckpointError, CheckpointManager
from air_magics.errors import ConfinementError
from air_magics.volumes import VolumeStore


@pytest.fixture
def store():
    s = VolumeStore()
    s.create("main.hf.runs")
    return s


def test_names_are_looked_up_in_the_folder_it_holds(store, tmp_path):
    loc = store.locate("/Volumes/main/hf/runs/a")
    held = HeldFolder(loc)
    assert not held.has("step_1")  # the folder is not there yet: nothing is in it, nothing held
    os.makedirs(loc.path)
    Path(loc.path, "file").write_text("x")
    os.makedirs(os.path.join(loc.path, "step_1"))
    os.symlink("/nonexistent", os.path.join(loc.path, "dangling"))
    assert held.has("step_1") and held.has("file") and held.has("dangling")  # a link counts, followed or not
    assert not held.has("step_2")
    # held: the folder it opened, even once that folder is renamed (the manager drops it when a save fails)
    os.rename(loc.path, loc.path + ".moved")
    assert held.has("step_1")


def test_a_link_out_of_the_volume_is_refused_when_the_folder_is_opened(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    loc = store.locate("/Volumes/main/hf/runs")
    os.symlink(outside, os.path.join(loc.path, "escape"))
    with pytest.raises(ConfinementError, match="leads outside"):
        HeldFolder(loc.join("escape")).has("anything")


def test_a_save_removes_its_crashed_attempt_and_refuses_an_existing_step(store):
    mgr = CheckpointManager("/Volumes/main/hf/runs/m", show=False)
    mgr.save(1, {"w": torch.ones(3)})
    d = store.locate("/Volumes/main/hf/runs/m").path
    leftover = Path(d, ".pending-step_2")
    leftover.mkdir()
    (leftover / "__0_0.distcp").write_bytes(b"half a file")  # what a killed save left
    mgr.save(2, {"w": torch.full((3,), 2.0)})
    assert not leftover.exists() and mgr.steps() == [1, 2]
    out = {"w": torch.zeros(3)}
    assert mgr.load(out) == 2 and torch.equal(out["w"], torch.full((3,), 2.0))
    with pytest.raises(CheckpointError, match="never overwritten"):
        mgr.save(2, {"w": torch.ones(3)})
    mgr.save(3, {"w": torch.ones(3)}, blocking=False, background_staging=True)
    with pytest.raises(CheckpointError, match="never overwritten"):
        mgr.save(3, {"w": torch.ones(3)}, blocking=False)  # waits for step 3, then finds it
    mgr.wait()


def test_latest_trusts_its_pointer_only_when_the_step_it_names_is_complete(store):
    """``latest()`` reads the pointer and checks both markers of its step (three lookups); a pointer
    to a step that is missing, incomplete or not a step name falls back to the listing's newest."""
    mgr = CheckpointManager("/Volumes/main/hf/runs/p", show=False)
    for step in (1, 2):
        mgr.save(step, {"w": torch.full((2,), float(step))})
    d = Path(store.locate("/Volumes/main/hf/runs/p").path)
    assert mgr.latest() == 2
    for pointer, expect in (("step_1", 1), ("step_9", 2), ("garbage", 2), ("step_2", 2)):
        (d / "latest").write_text(pointer)
        assert mgr.latest() == expect, pointer
    (d / "step_2" / "_COMMITTED").unlink()  # un-committed: step 1 is the newest complete one
    assert mgr.latest() == 1 and mgr.steps() == [1]
    with pytest.raises(CheckpointError, match="missing or incomplete"):
        mgr.load({"w": torch.zeros(2)}, step=2)
    (d / "latest").unlink()
    out = {"w": torch.zeros(2)}
    assert mgr.load(out) == 1 and torch.equal(out["w"], torch.full((2,), 1.0))


def test_a_background_save_that_fails_off_the_call_is_recorded_failed_and_the_next_one_works(store):
    """With one process, a background-staging save's DCP call runs on a thread of its own (the call
    returns at once): its failure reaches the save's record, not the caller, and leaves no step."""
    import threading

    from air_magics.checkpoints.commit import checkpoint_status

    mgr = CheckpointManager("/Volumes/main/hf/runs/f", show=False)
    mgr.save(1, {"w": torch.ones(2)})
    mgr.save(2, {"w": torch.ones(2), "lock": threading.Lock()}, blocking=False, background_staging=True)
    mgr.wait_staged()
    mgr.wait()
    last = checkpoint_status("/Volumes/main/hf/runs/f")["saves"][-1]
    assert last["step"] == 2 and last["state"] == "failed" and "lock" in last["error"].lower(), last
    assert mgr.steps() == [1] and mgr.latest() == 1
    mgr.save(3, {"w": torch.full((2,), 3.0)}, blocking=False, background_staging=True)
    mgr.wait()
    out = {"w": torch.zeros(2)}
    assert mgr.steps() == [1, 3] and mgr.load(out) == 3 and torch.equal(out["w"], torch.full((2,), 3.0))
