"""Checkpoint integrity: pruning never leaves a listed step that cannot load, and a missing,
truncated or changed file is reported as corrupt (naming it), never loaded silently or blamed
on the state."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp

from air_magics.cache import FileCache
from air_magics.checkpoints import pruning as pruning_mod
from air_magics.checkpoints.commit import checkpoint_status
from air_magics.data import CheckpointError, CheckpointManager, UCVolumeReader, UCVolumeWriter
from air_magics.errors import AirError, CheckpointCorruptError
from air_magics.volumes import VolumeStore

WORKER = Path(__file__).with_name("ckpt_worker.py")
RUNS = "/Volumes/main/ck/runs"


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.ck.runs")
    return s


def state(scale: float = 1.0) -> dict:
    """Several tensors, so DCP writes several .distcp files (one per writer thread)."""
    g = torch.Generator().manual_seed(0)
    return {f"t{i}": torch.randn(20_000 + 5_000 * i, generator=g) * scale for i in range(4)}


def zeros() -> dict:
    return {k: torch.zeros_like(v) for k, v in state().items()}


def folder(vol, rel: str) -> Path:
    return Path(vol.locate(f"{RUNS}/{rel}").path)


def largest_distcp(d: Path) -> Path:
    return max(d.glob("*.distcp"), key=lambda p: p.stat().st_size)


def flip_every_4k(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(0, len(data), 4096):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def saved(vol, name: str, steps=(1, 2, 3), keep: int = 3) -> CheckpointManager:
    mgr = CheckpointManager(f"{RUNS}/{name}", keep=keep, show=False)
    for s in steps:
        mgr.save(s, state(s))
    return mgr


def loads(mgr: CheckpointManager, step: int) -> bool:
    out = zeros()
    mgr.load(out, step)
    return all(torch.equal(out[k], v) for k, v in state(step).items())


# -- pruning -----------------------------------------------------------------------------------------
def test_kill_mid_prune_never_lists_an_unloadable_step(vol):
    d = f"{RUNS}/killprune"
    proc = subprocess.run([sys.executable, str(WORKER), "kill_prune", d], capture_output=True, text=True, timeout=240)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
    mgr = CheckpointManager(d, keep=2, show=False)
    names = sorted(os.listdir(folder(vol, "killprune")))
    leftover = [n for n in names if n.startswith(".pruning-step_1.")]
    assert len(leftover) == 1 and "step_1" not in names  # un-committed, files not yet deleted
    assert mgr.steps() == [2, 3] and mgr.latest() == 3
    assert checkpoint_status(d)["pending"] == []  # trash is not shown as a save in progress
    for step in mgr.steps():
        out = {"w": torch.zeros(1000)}
        assert mgr.load(out, step) == step and torch.equal(out["w"], torch.full((1000,), float(step)))
    mgr.save(4, {"w": torch.full((1000,), 4.0)})  # the next save sweeps the dead prune's trash ...
    mgr.wait()  # ... after its commit, off the caller's clock
    assert sorted(os.listdir(folder(vol, "killprune"))) == ["latest", "step_3", "step_4"]


def test_failed_prune_leftover_removed_by_cleanup(vol, monkeypatch):
    mgr = saved(vol, "failprune", steps=(1, 2), keep=2)

    def boom(name):
        assert name == "step_1" and mgr.steps() == [2, 3]  # un-committed before anything is deleted
        raise OSError("killed mid-prune")

    monkeypatch.setattr(pruning_mod, "_PRUNE_HOOK", boom)
    mgr.save(3, state(3))  # committed: the pruning after it fails off the caller's clock ...
    mgr.wait()
    last = checkpoint_status(f"{RUNS}/failprune")["saves"][-1]  # ... and its record says so
    assert last["state"] == "committed" and "killed mid-prune" in last["after_commit_error"], last
    monkeypatch.setattr(pruning_mod, "_PRUNE_HOOK", None)
    assert mgr.steps() == [2, 3] and all(loads(mgr, s) for s in (2, 3))
    removed = mgr.cleanup()
    assert len(removed) == 1 and removed[0].startswith(".pruning-step_1.")
    assert sorted(os.listdir(folder(vol, "failprune"))) == ["latest", "step_2", "step_3"]


def test_a_prune_failure_reaches_the_document_whatever_publishes_last(vol, monkeypatch):
    """The caller's thread publishes "committed" while the pruning's thread publishes its failure:
    the document written last holds both (here the pruning fails while the caller's own publish
    is still between its snapshot and its write)."""
    import threading
    import time

    seen_committed = threading.Event()

    def slow_listener(e):
        last = (e.saves or [{}])[-1]
        if last.get("state") == "committed" and "after_commit_error" not in last:
            seen_committed.set()
            time.sleep(0.3)  # the snapshot is taken; its document is written after this

    def boom(name):
        assert seen_committed.wait(10)
        raise OSError("killed mid-prune")

    mgr = CheckpointManager(f"{RUNS}/racing", keep=1, show=False, listeners=[slow_listener])
    mgr.save(1, state(1))
    monkeypatch.setattr(pruning_mod, "_PRUNE_HOOK", boom)
    mgr.save(2, state(2))
    mgr.wait()
    last = checkpoint_status(f"{RUNS}/racing")["saves"][-1]
    assert last["state"] == "committed" and "killed mid-prune" in last["after_commit_error"], last


def test_prune_on_object_store_uncommits_first(vol, monkeypatch):
    vol.register("ext.mem.ckint", "memory://air-ckpt-integrity")
    mgr = CheckpointManager("/Volumes/ext/mem/ckint/run", keep=1, show=False)
    mgr.save(1, {"w": torch.arange(10.0)})
    monkeypatch.setattr(pruning_mod, "_PRUNE_HOOK", lambda name: (_ for _ in ()).throw(OSError("killed")))
    mgr.save(2, {"w": torch.arange(10.0) * 2})
    mgr.wait()  # the pruning failed after the commit (recorded in the save's record)
    monkeypatch.setattr(pruning_mod, "_PRUNE_HOOK", None)
    assert mgr.steps() == [2]  # step_1 lost its marker first: never listed half-deleted
    assert vol.exists("/Volumes/ext/mem/ckint/run/step_1")
    assert mgr.cleanup() == ["step_1"] and not vol.exists("/Volumes/ext/mem/ckint/run/step_1")
    out = {"w": torch.zeros(10)}
    assert mgr.load(out) == 2 and torch.equal(out["w"], torch.arange(10.0) * 2)


# -- corruption ---------------------------------------------------------------------------------------
def test_deleted_data_files_reported_as_missing(vol):
    mgr = saved(vol, "byhand")
    for p in folder(vol, "byhand/step_1").glob("*.distcp"):
        p.unlink()
    assert mgr.steps() == [1, 2, 3]  # listing stays cheap: it does not open every step
    with pytest.raises(
        CheckpointCorruptError,
        match=r"^corrupt checkpoint step_1: file __0_\d+\.distcp missing; "
        r"no earlier committed step",
    ):
        mgr.load(zeros(), 1)
    for p in folder(vol, "byhand/step_2").glob("*.distcp"):
        p.unlink()
    with pytest.raises(
        CheckpointCorruptError,
        match=r"file __0_\d+\.distcp missing; load an earlier step, "
        r"e.g\. manager\.load\(state, step=1\)",
    ):
        mgr.verify(2)
    assert loads(mgr, 3) and mgr.verify() == 3


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_file_is_corrupt_not_a_state_mismatch(vol, damage):
    mgr = saved(vol, damage, steps=(1, 2))
    assert loads(mgr, 2)  # warm cache: the damaged file must be fetched again, not served stale
    victim = largest_distcp(folder(vol, f"{damage}/step_2"))
    if damage == "flip":
        flip_every_4k(victim)
    else:
        os.truncate(victim, victim.stat().st_size // 2)
    expected = (
        rf"^corrupt checkpoint step_2: file {victim.name} checksum mismatch.*"
        rf"load an earlier step, e\.g\. manager\.load\(state, step=1\)"
    )
    with pytest.raises(CheckpointCorruptError, match=expected) as err:
        mgr.load(zeros(), 2)
    assert err.value.file == victim.name and "different model" not in str(err.value)
    with pytest.raises(CheckpointCorruptError, match=expected):
        mgr.verify(2)
    with pytest.raises(CheckpointCorruptError, match=expected):
        mgr.load(zeros())  # latest is step 2
    assert loads(mgr, 1) and mgr.verify(1) == 1


def test_restore_reports_corruption(vol):
    m = torch.nn.Linear(64, 64)
    mgr = CheckpointManager(f"{RUNS}/restore", show=False)
    mgr.save(1, model=m)
    mgr.save(2, model=m)
    flip_every_4k(largest_distcp(folder(vol, "restore/step_2")))
    with pytest.raises(CheckpointCorruptError, match=r"step_2: .* checksum mismatch; .*restore\(\.\.\., step=1\)"):
        mgr.restore(model=torch.nn.Linear(64, 64))
    m2 = torch.nn.Linear(64, 64)
    assert mgr.restore(model=m2, step=1) == 1 and torch.equal(m2.weight, m.weight)


def test_state_mismatch_is_not_called_corrupt(vol):
    mgr = saved(vol, "mismatch", steps=(1,))
    with pytest.raises(CheckpointError, match="different model or keys") as err:
        mgr.load({"t0": torch.zeros(7)}, 1)
    assert not isinstance(err.value, CheckpointCorruptError)


def test_bad_cached_copy_is_refetched_not_reported(vol):
    saved(vol, "badcache", steps=(1,))
    step = f"{RUNS}/badcache/step_1"

    def loads_through_cache() -> bool:
        out = zeros()
        dcp.load(out, storage_reader=UCVolumeReader(step, direct=False))
        return all(torch.equal(out[k], v) for k, v in state(1).items())

    assert loads_through_cache()
    cached = FileCache().local_path(f"{step}/{largest_distcp(folder(vol, 'badcache/step_1')).name}")
    flip_every_4k(cached)  # the volume is fine; only this machine's copy went bad
    assert loads_through_cache() and UCVolumeReader(step, direct=False).verify()


def test_direct_reads_keep_no_copy_and_verify_what_they_read(vol, monkeypatch):
    mgr = saved(vol, "direct", steps=(1,))
    step = f"{RUNS}/direct/step_1"
    reader = UCVolumeReader(step)
    assert reader.reads_direct and UCVolumeReader(step, direct=False).reads_direct is False
    out = zeros()
    dcp.load(out, storage_reader=reader)
    assert all(torch.equal(out[k], v) for k, v in state(1).items())
    assert not FileCache().local_path(f"{step}/{largest_distcp(folder(vol, 'direct/step_1')).name}").exists()
    assert list(reader.fs.fetched) == [f"{step}/.metadata"]  # each data file let go once its items were loaded
    # a file that reads back wrong is read once more, then called corrupt (the load fails)
    reads = []
    import air_magics.checkpoints.volume_reader as vr

    real, real_placed = vr.read_file, vr.read_placed
    monkeypatch.setattr(vr, "read_file", lambda loc, **kw: (reads.append(loc.path), real(loc, **kw))[1])
    monkeypatch.setattr(vr, "read_placed", lambda loc, *a: (reads.append(loc.path), real_placed(loc, *a))[1])
    flip_every_4k(largest_distcp(folder(vol, "direct/step_1")))
    with pytest.raises(CheckpointCorruptError, match="checksum mismatch"):
        mgr.load(zeros(), 1)
    bad = str(largest_distcp(folder(vol, "direct/step_1")))
    assert reads.count(bad) == 2


def test_commit_marker_records_every_file(vol):
    saved(vol, "marker", steps=(5,))
    d = folder(vol, "marker/step_5")
    doc = json.loads((d / "_COMMITTED").read_text())
    assert doc["step"] == 5 and doc["algorithm"] == "xxh3_128"
    assert set(doc["files"]) == {p.name for p in d.iterdir()} - {"_COMMITTED"}
    assert len([n for n in doc["files"] if n.endswith(".distcp")]) > 1
    from conftest import xxh

    assert all(  # (and, for a data file, where its large tensors' data lies: "items")
        {k: v for k, v in doc["files"][p.name].items() if k != "items"}
        == {"size": p.stat().st_size, "xxh3_128": xxh(p)}
        for p in d.iterdir()
        if p.name != "_COMMITTED"
    )


def test_async_save_is_verified(vol):
    mgr = CheckpointManager(f"{RUNS}/async", show=False)
    mgr.save(1, state(1), blocking=False)
    mgr.wait()
    assert mgr.verify() == 1
    flip_every_4k(largest_distcp(folder(vol, "async/step_1")))
    with pytest.raises(CheckpointCorruptError, match="checksum mismatch"):
        mgr.load(zeros())


# -- plain torch DCP and older checkpoints ------------------------------------------------------------
def test_plain_dcp_folder_verified_with_manifest(vol):
    path = f"{RUNS}/plain"
    dcp.save(state(), storage_writer=UCVolumeWriter(path))
    d = folder(vol, "plain")
    assert "_COMMITTED" not in os.listdir(d) and (d / ".checksums.json").exists()
    out = zeros()
    dcp.load(out, storage_reader=UCVolumeReader(path))
    assert all(torch.equal(out[k], v) for k, v in state().items())
    assert UCVolumeReader(path).verify() == sorted(p.name for p in d.iterdir() if p.name != ".checksums.json")
    flip_every_4k(largest_distcp(d))
    with pytest.raises(BaseException, match=f"corrupt checkpoint {path}: file __0_\\d.distcp checksum mismatch"):
        dcp.load(zeros(), storage_reader=UCVolumeReader(path))  # torch wraps it in its CheckpointException
    (d / ".checksums.json").write_text("{not json")
    with pytest.raises(CheckpointCorruptError, match=r"file \.checksums\.json unreadable"):
        UCVolumeReader(path)


def test_checkpoint_without_checksums_still_loads(vol):
    """Folders written before checksums existed (or by plain torch) load, with size checks only."""
    mgr = saved(vol, "old", steps=(1, 2))
    for step in (1, 2):
        d = folder(vol, f"old/step_{step}")
        (d / "_COMMITTED").write_text(json.dumps({"step": step, "time": 0.0}))  # the old marker
        (d / ".checksums.json").unlink()
    assert mgr.steps() == [1, 2] and loads(mgr, 2) and mgr.verify(2) == 2
    torch_dir = Path(vol.locate(f"{RUNS}/bytorch").path)
    dcp.save(state(), storage_writer=dcp.FileSystemWriter(torch_dir))
    out = zeros()
    dcp.load(out, storage_reader=UCVolumeReader(f"{RUNS}/bytorch"))
    assert all(torch.equal(out[k], v) for k, v in state().items())
    victim = largest_distcp(folder(vol, "old/step_2"))
    os.truncate(victim, 100)
    with pytest.raises(
        CheckpointCorruptError,
        match=rf"corrupt checkpoint step_2: file {victim.name} truncated "
        rf"\(100 bytes.*manager\.load\(state, step=1\)",
    ):
        mgr.load(zeros(), 2)
    with pytest.raises(CheckpointCorruptError, match="truncated"):
        mgr.verify(2)


def test_a_checkpoint_that_recorded_sha256_still_verifies_and_loads(vol):
    """Saves before xxh3-128 recorded sha256 in ``_COMMITTED`` and the manifest: a load hashes each
    file with the algorithm its record names, so those steps load, and a changed file is still caught."""
    from conftest import sha

    mgr = saved(vol, "sha", steps=(1, 2))
    for step in (1, 2):
        d = folder(vol, f"sha/step_{step}")
        files = {p.name: {"size": p.stat().st_size, "sha256": sha(p)} for p in d.iterdir() if p.name != "_COMMITTED"}
        (d / "_COMMITTED").write_text(json.dumps({"step": step, "time": 0.0, "algorithm": "sha256", "files": files}))
    assert loads(mgr, 2) and mgr.verify(2) == 2
    flip_every_4k(largest_distcp(folder(vol, "sha/step_2")))
    with pytest.raises(CheckpointCorruptError, match="checksum mismatch"):
        mgr.load(zeros(), 2)
    d = folder(vol, "sha/step_1")
    doc = json.loads((d / "_COMMITTED").read_text())
    (d / "_COMMITTED").write_text(json.dumps({**doc, "algorithm": "md4"}))
    with pytest.raises(
        CheckpointCorruptError, match=r"file _COMMITTED unreadable \(unknown checksum format \(algorithm 'md4'\)"
    ):
        mgr.load(zeros(), 1)


def _item_zips(d: Path) -> list[bytes]:
    """Each tensor item's ``torch.save`` bytes, cut out of its ``.distcp`` file by ``.metadata``."""
    meta = dcp.FileSystemReader(str(d)).read_metadata()
    return [
        (d / info.relative_path).read_bytes()[info.offset : info.offset + info.length]
        for info in meta.storage_data.values()
    ]


@pytest.mark.parametrize(("zip_crc32", "direct"), [(False, None), (True, None), (False, False)])
def test_the_items_zip_crc32_is_left_out_unless_asked_for(vol, zip_crc32, direct):
    """The zip CRC32 costs as much CPU as the writing and nobody reads it (each file's own checksum
    is verified); ``zip_crc32=True`` keeps it. Either way the caller's setting is as before, and plain
    torch reads the files."""
    import io
    import zipfile

    assert torch.serialization.get_crc32_options()
    name = f"crc-{zip_crc32}-{direct}"  # direct=False: staged on local disk, then uploaded
    dcp.save(state(), storage_writer=UCVolumeWriter(f"{RUNS}/{name}", zip_crc32=zip_crc32, direct=direct))
    assert torch.serialization.get_crc32_options()
    zips = _item_zips(folder(vol, name))
    bad = [zipfile.ZipFile(io.BytesIO(z)).testzip() for z in zips]
    assert len(zips) == 4 and all((b is None) == zip_crc32 for b in bad), bad  # testzip: the first bad record
    out = zeros()  # plain torch reads either
    dcp.load(out, storage_reader=dcp.FileSystemReader(str(folder(vol, name))))
    assert all(torch.equal(out[k], v) for k, v in state().items())


def test_corrupt_error_is_an_air_checkpoint_error_and_pickles():
    import pickle

    e = CheckpointCorruptError("step_3", "__0_0.distcp", "checksum mismatch", "load an earlier step")
    assert isinstance(e, CheckpointError) and isinstance(e, AirError) and isinstance(e, RuntimeError)
    assert str(e) == "corrupt checkpoint step_3: file __0_0.distcp checksum mismatch; load an earlier step"
    assert str(pickle.loads(pickle.dumps(e))) == str(e)


def test_a_save_makes_no_dcp_debug_records_unless_someone_listens(vol):
    """torch logs ~2 DEBUG records per DCP step into a handler that discards them (7 ms of a
    background save's call at 100 tensors); while the manager's call runs they are not made, the
    level is as before afterwards, and a handler of the user's own still gets them."""
    import io
    import logging

    log = logging.getLogger("c10d-NullHandler-dcp_logger")
    made = []

    class Seen(logging.Filter):
        def filter(self, record):
            made.append(record)
            return True

    seen, handlers = Seen(), log.handlers[:]
    log.addFilter(seen)
    log.handlers = [h for h in handlers if type(h) is logging.NullHandler]  # torch's own (pytest adds its capture)
    try:
        level = log.level
        mgr = CheckpointManager(f"{RUNS}/quietlog", show=False)
        mgr.save(1, state(1))
        assert made == [] and log.level == level
        mine = logging.StreamHandler(io.StringIO())  # a handler of the user's own
        log.addHandler(mine)
        try:
            mgr.save(2, state(2))
        finally:
            log.removeHandler(mine)
        assert len(made) > 10 and loads(mgr, 2)
    finally:
        log.removeFilter(seen)
        log.handlers = handlers
