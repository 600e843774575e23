"""Checkpoint files written straight onto a mounted volume (checkpoints/direct_write.py): what lands, in
which order, and what a failed write leaves behind, on a real FUSE volume."""

import json
import os

import pytest
import torch
import torch.distributed.checkpoint as dcp
from conftest import xxh
from torch.distributed.checkpoint.api import CheckpointException

from air_magics.checkpoints.commit import CHECKSUMS, METADATA
from air_magics.data import CheckpointError, UCVolumeReader, UCVolumeWriter
from air_magics.io.leftovers import is_leftover
from air_magics.volumes import VolumeStore


def state(n: int = 12, size: int = 300_000) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(n)
    return {f"t{i}": torch.randn(size // (i + 1), generator=g) for i in range(n)}


def zeros_like(s: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: torch.zeros_like(v) for k, v in s.items()}


@pytest.fixture
def mounted(slowfs, tmp_path, monkeypatch):
    """A function mounting the volume root ``backing`` with fusevol options; returns the backing folder."""
    backing = tmp_path / "backing"
    (backing / "main" / "ck" / "runs").mkdir(parents=True)
    mounts = []

    def mount(**options):
        mnt = tmp_path / f"mnt{len(mounts)}"
        cm = slowfs.mounted(backing, mnt, op_latency_ms=1, **options)
        cm.__enter__()
        mounts.append(cm)
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(mnt))
        return backing / "main" / "ck" / "runs"

    yield mount
    for cm in reversed(mounts):
        cm.__exit__(None, None, None)


def test_files_go_straight_to_the_volume_hashed_in_the_stream(mounted, tmp_path, monkeypatch):
    runs = mounted()
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home"))
    s = state()
    w = UCVolumeWriter("/Volumes/main/ck/runs/a")
    assert w.direct
    dcp.save(s, storage_writer=w)
    folder = runs / "a"
    names = sorted(p.name for p in folder.iterdir())
    manifest = json.loads((folder / CHECKSUMS).read_text())["files"]
    # every file on the volume is in the manifest (no empty per-thread files, no temp names), with
    # the digest of the bytes the volume holds, and .metadata's too
    assert set(names) == set(manifest) | {CHECKSUMS} and METADATA in manifest
    assert len([n for n in names if n.endswith(".distcp")]) == 8
    for name, digest in manifest.items():
        plain = {k: v for k, v in digest.items() if k != "items"}
        assert plain == {"size": (folder / name).stat().st_size, "xxh3_128": xxh(folder / name)}, name
        # and where each tensor's data lies in a data file: the bytes there are its tensor's, as saved
        assert ("items" in digest) == name.endswith(".distcp"), name
        for at, (data_at, nbytes, dtype) in digest.get("items", {}).items():
            assert dtype == "float32"
            raw = (folder / name).read_bytes()[data_at : data_at + nbytes]
            assert int(at) < data_at and any(raw == v.numpy().tobytes() for v in s.values()), name
    assert w.checksums[CHECKSUMS]["xxh3_128"] == xxh(folder / CHECKSUMS)
    assert not (tmp_path / "home" / "staging").exists() or not any((tmp_path / "home" / "staging").iterdir())
    out = zeros_like(s)
    dcp.load(out, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/a"))
    assert all(torch.equal(out[k], s[k]) for k in s)


def test_items_of_no_bytes_still_have_their_file(mounted):
    runs = mounted()
    s = {"empty": torch.zeros(0), "w": torch.arange(5.0)}
    w = UCVolumeWriter("/Volumes/main/ck/runs/e", thread_count=4)
    dcp.save(s, storage_writer=w)
    out = {"empty": torch.ones(0), "w": torch.zeros(5)}
    dcp.load(out, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/e"))
    assert torch.equal(out["w"], s["w"]) and out["empty"].numel() == 0
    assert not [p for p in (runs / "e").iterdir() if p.stat().st_size == 0 and p.name not in w.checksums]


def test_transient_write_faults_are_retried(mounted):
    mounted(fail_rate=0.5, fail_ops="create,write,rename", fail_paths="*distcp*", fail_times=1)
    s = state()
    dcp.save(s, storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/t"))
    out = zeros_like(s)
    dcp.load(out, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/t"))
    assert all(torch.equal(out[k], s[k]) for k in s)


@pytest.mark.parametrize("op", ["create", "write"])
def test_a_file_that_cannot_be_written_fails_the_save_and_is_never_published(mounted, op):
    runs = mounted(fail_rate=1, fail_ops=op, fail_paths="*__0_3.distcp*", fail_times=1000)
    # dcp.save wraps a rank's error in its CheckpointException, our message inside
    failed = r"writing __0_3\.distcp to /Volumes/main/ck/runs/f failed .*Errno 5"
    with pytest.raises((CheckpointError, CheckpointException), match=failed):
        dcp.save(state(), storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/f"))
    left = sorted(p.name for p in (runs / "f").iterdir())
    assert METADATA not in left and CHECKSUMS not in left  # never loadable
    assert "__0_3.distcp" not in left and not [n for n in left if is_leftover(n)]  # no half file, no temp left
    with pytest.raises(CheckpointError, match="has no .metadata"):
        UCVolumeReader("/Volumes/main/ck/runs/f")


def test_the_manifest_is_on_the_volume_before_metadata(mounted):
    runs = mounted(fail_rate=1, fail_ops="rename", fail_paths="*/.metadata.tmp", fail_times=1000)
    with pytest.raises((OSError, CheckpointException), match="Errno 5"):
        dcp.save(state(), storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/m"))
    left = {p.name for p in (runs / "m").iterdir()}
    assert CHECKSUMS in left and METADATA not in left and ".metadata.tmp" in left


def test_metadata_that_cannot_be_written_fails_the_save(mounted):
    runs = mounted(fail_rate=1, fail_ops="create", fail_paths="*metadata*", fail_times=1000)
    failed = r"writing \.metadata\.tmp to /Volumes/main/ck/runs/n failed .*Errno 5"
    with pytest.raises((CheckpointError, CheckpointException), match=failed):
        dcp.save(state(), storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/n"))
    assert not {CHECKSUMS, METADATA} & {p.name for p in (runs / "n").iterdir()}


def test_direct_is_refused_for_a_remote_volume_and_staging_still_works(mounted, tmp_path):
    runs = mounted()
    store = VolumeStore.shared()
    store.register("ext.mem.direct", "memory://air-ckpt-direct")
    with pytest.raises(CheckpointError, match="direct=True writes through a mount.*leave direct unset"):
        UCVolumeWriter("/Volumes/ext/mem/direct/x", direct=True)
    remote = UCVolumeWriter("/Volumes/ext/mem/direct/x")
    assert not remote.direct
    s = state(4)
    w = UCVolumeWriter("/Volumes/main/ck/runs/staged", direct=False)
    dcp.save(s, storage_writer=w)
    assert w.checksums[METADATA]["xxh3_128"] == xxh(runs / "staged" / METADATA)
    out = zeros_like(s)
    dcp.load(out, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/staged"))
    assert all(torch.equal(out[k], s[k]) for k in s)
    assert os.listdir(runs / "staged") and not [n for n in os.listdir(runs / "staged") if is_leftover(n)]


def test_tensors_land_in_their_destinations_and_the_rest_loads_through_torch(mounted, tmp_path, monkeypatch):
    """A direct restore reads each large contiguous tensor's bytes straight into its destination (the
    manifest says where they lie: checkpoints/read_into.py), copies each other plain tensor (small, or saved
    with other strides: transposed) from the verified bytes once (checkpoints/stored_tensor.py), and loads
    what is not a tensor (a nested object, saved as pickled bytes) through torch's own reading; all
    of it bit for bit."""
    from air_magics.checkpoints import volume_reader

    mounted()
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home"))
    g = torch.Generator().manual_seed(7)
    s = {
        "big": torch.randn(20_000, generator=g),  # placed
        "w": torch.randn(64, 48, generator=g).t(),  # large, but saved with transposed strides: copied
        "h": torch.randn(1000, generator=g).to(torch.bfloat16),  # small: one copy from the kept bytes
        "n": torch.arange(10, dtype=torch.int64),
        "extra": {"step": 3, "note": "not a tensor"},
    }
    dcp.save(s, storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/inplace"))
    small, placed = [], []
    real_small, real_bytes = volume_reader.stored_tensor, volume_reader._bytes_of  # noqa: SLF001
    monkeypatch.setattr(volume_reader, "stored_tensor", lambda rec: (small.append(r := real_small(rec)), r)[1])
    monkeypatch.setattr(volume_reader, "_bytes_of", lambda t: (placed.append(t.shape), real_bytes(t))[1])
    out = {
        "big": torch.zeros(20_000),
        "w": torch.zeros(48, 64),
        "h": torch.zeros(1000, dtype=torch.bfloat16),
        "n": torch.zeros(10, dtype=torch.int64),
        "extra": {"step": 0, "note": ""},
    }
    dcp.load(out, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/inplace"))
    assert placed == [torch.Size([20_000])]  # big: read in place
    assert len(small) == 3 and all(t is not None for t in small)  # w, h and n: none through torch.load
    assert all(torch.equal(out[k], s[k]) for k in ("big", "w", "h", "n")) and out["extra"] == s["extra"]


def test_a_corrupt_file_read_in_place_is_reported_after_one_more_read(mounted, tmp_path, monkeypatch):
    """The bytes land in the destinations before the whole file is verified; a file that fails its
    checksum is read once more, then the load fails naming it (never a silent load)."""
    from air_magics.checkpoints import volume_reader
    from air_magics.errors import CheckpointCorruptError

    runs = mounted()
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home"))
    s = state(2, 40_000)
    dcp.save(s, storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/bad"))
    victim = max((runs / "bad").glob("*.distcp"), key=lambda p: p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # a flipped byte inside a tensor's data
    victim.write_bytes(bytes(data))
    reads = []
    real = volume_reader.read_placed
    monkeypatch.setattr(volume_reader, "read_placed", lambda loc, *a: (reads.append(loc.path), real(loc, *a))[1])
    with pytest.raises(CheckpointException, match=f"file {victim.name} checksum mismatch"):
        dcp.load(zeros_like(s), storage_reader=UCVolumeReader("/Volumes/main/ck/runs/bad"))
    assert reads.count(reads[-1]) == 2 and reads[-1].endswith(victim.name)
    assert issubclass(CheckpointCorruptError, CheckpointError)


def test_every_write_but_a_files_last_is_a_whole_request(slowfs, tmp_path, monkeypatch):
    """torch.save writes each item's few header bytes, then its storage; the stream lets only whole
    multiples of the mount's largest request leave (held header bytes go out with the head of the
    next storage in one writev), so the volume sees about size / 1 MiB writes per file, not a
    header request and an odd-sized tail per tensor. The bytes still land exactly."""
    from air_magics.checkpoints.grid_stream import GRID

    backing = tmp_path / "backing"
    (backing / "main" / "ck" / "runs").mkdir(parents=True)
    stats = tmp_path / "stats.json"
    s = {f"t{i}": torch.randn(150_000 + 77_777 * i) for i in range(16)}  # 0.6-5 MB, none a whole MiB
    with slowfs.mounted(backing, tmp_path / "mnt", op_latency_ms=0, stats=stats):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        dcp.save(s, storage_writer=UCVolumeWriter("/Volumes/main/ck/runs/grid"))
        out = zeros_like(s)
        dcp.load(out, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/grid"))
    assert all(torch.equal(out[k], s[k]) for k in s)
    files = [p for p in (backing / "main" / "ck" / "runs" / "grid").iterdir() if p.is_file()]
    whole = sum(-(-p.stat().st_size // GRID) for p in files)  # each file's size in requests, rounded up
    writes = json.loads(stats.read_text())["ops"].get("write", 0)  # fusevol's counters, written at unmount
    assert 0 < writes <= whole, (writes, whole, len(files))


def test_a_managers_save_renames_only_its_step_metadata_and_pointer(slowfs, tmp_path, monkeypatch):
    """The manager's pending folder is made relative to its held folder and nothing in it is seen
    before the commit, so its files are written under their own names (torch's ``.metadata`` too:
    kept in memory and written beside the manifest and ``_COMMITTED``): per save the volume sees
    two renames (the step folder, the ``latest`` pointer's temp name, staged while the data
    streamed), not one more per file, and no leftover of any temp name. The steps still load bit for bit and
    a step that already exists is still refused."""
    from air_magics.data import CheckpointManager

    backing = tmp_path / "backing"
    (backing / "main" / "ck" / "runs").mkdir(parents=True)
    stats = tmp_path / "stats.json"
    s = {f"t{i}": torch.randn(50_000 + 7_777 * i) for i in range(12)}
    with slowfs.mounted(backing, tmp_path / "mnt", op_latency_ms=0, stats=stats):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        mgr = CheckpointManager("/Volumes/main/ck/runs/inplace", keep=5, show=False)
        for step in (1, 2, 3):
            mgr.save(step, {k: v * step for k, v in s.items()})
        mgr.wait()
        with pytest.raises(CheckpointError, match="already exists"):
            mgr.save(2, s)
        for step in (1, 2, 3):
            out = zeros_like(s)
            assert mgr.load(out, step) == step
            assert all(torch.equal(out[k], s[k] * step) for k in s)
    renames = json.loads(stats.read_text())["ops"].get("rename", 0)
    assert renames == 3 * 2, renames
    run = backing / "main" / "ck" / "runs" / "inplace"
    assert sorted(p.name for p in run.iterdir()) == ["latest", "step_1", "step_2", "step_3"]
    for step in (1, 2, 3):
        names = [p.name for p in (run / f"step_{step}").iterdir()]
        assert not [n for n in names if is_leftover(n) or n.endswith(".tmp")], names
        assert {METADATA, CHECKSUMS, "_COMMITTED"} <= set(names)


def test_a_manager_save_that_fails_while_its_data_streams_leaves_no_pointer_behind(mounted):
    """The ``latest`` pointer's next text is staged under a temp name while the data streams; a
    save that fails there (an object torch cannot pickle) removes it: the pointer still names the
    last committed step, the run folder holds nothing new but the failed step's pending folder
    (which ``cleanup`` removes), and the step saves once the state is fixed."""
    from air_magics.data import CheckpointManager

    backing = mounted()
    mgr = CheckpointManager("/Volumes/main/ck/runs/failing", keep=3, show=False)
    s = state(4)
    mgr.save(1, s)
    with pytest.raises(CheckpointError):
        mgr.save(2, {**s, "bad": {"fn": lambda: 0}})
    run = backing / "failing"
    assert sorted(p.name for p in run.iterdir()) == [".pending-step_2", "latest", "step_1"]
    assert (run / "latest").read_text() == "step_1" and mgr.latest() == 1
    assert mgr.cleanup() == [".pending-step_2"]
    mgr.save(2, s)
    assert mgr.latest() == 2 and (run / "latest").read_text() == "step_2"
    out = zeros_like(s)
    assert mgr.load(out) == 2 and all(torch.equal(out[k], s[k]) for k in s)


def test_the_last_files_of_a_folder_written_in_place_go_into_the_files_made_early(tmp_path):
    """``DirectVolumeFS.create_early`` makes the last files once the data files are created;
    ``write_files`` fills them (fsynced where asked) and removes one made early that the save
    did not need; with no data file created yet nothing is made early and ``write_files``
    creates what it writes."""
    from air_magics.checkpoints.direct_write import DirectVolumeFS

    folder = tmp_path / "step"
    folder.mkdir()
    fs = DirectVolumeFS(str(tmp_path))
    fs.in_place = True
    fs.create_early(str(folder), [METADATA, CHECKSUMS, "_COMMITTED"], after=0)
    fs.write_files(str(folder), {METADATA: (b"meta", False), "_COMMITTED": (b"{}", True)})
    assert sorted(p.name for p in folder.iterdir()) == [METADATA, "_COMMITTED"]
    assert (folder / METADATA).read_bytes() == b"meta" and (folder / "_COMMITTED").read_bytes() == b"{}"
    fs.create_early(str(folder), ["never"], after=2)  # the data files never came: nothing made early
    fs.write_files(str(folder), {CHECKSUMS: (b"[]", False)})
    assert sorted(p.name for p in folder.iterdir()) == [CHECKSUMS, METADATA, "_COMMITTED"]
    fs.release_folders()


def test_a_folder_written_in_place_with_synced_files_writes_metadata_through_torch(mounted, tmp_path):
    """With ``sync_files=True`` torch fsyncs ``.metadata`` through its own descriptor, so it is not
    kept in memory: it is written in place, the marker is left to the caller, and the folder loads."""
    from air_magics.io.confined import open_dir

    backing = mounted()
    s = state(3)
    path = "/Volumes/main/ck/runs/synced"
    root = str(tmp_path / "mnt0")
    w = UCVolumeWriter(
        path,
        sync_files=True,
        make_folder=lambda: open_dir(f"{root}/main/ck/runs/synced", root, create=True),
        marker=("_DONE", lambda files: json.dumps(sorted(files or {}))),
    )
    dcp.save(s, storage_writer=w)
    assert not w.marker_written and not w.direct_fs.kept
    names = sorted(p.name for p in (backing / "synced").iterdir())
    assert METADATA in names and CHECKSUMS in names and "_DONE" not in names
    assert not [n for n in names if is_leftover(n) or n.endswith(".tmp")], names
    out = zeros_like(s)
    dcp.load(out, storage_reader=UCVolumeReader(path))
    assert all(torch.equal(out[k], s[k]) for k in s)


def test_a_plain_torch_writer_through_direct_volume_fs_still_writes_its_metadata(tmp_path):
    """Only ``UCVolumeWriter`` keeps ``.metadata`` in memory to write it with its last files; torch's
    own ``FileSystemWriter`` on a ``DirectVolumeFS`` (``bench_serialize``'s setup) writes it itself,
    and plain torch loads the folder back."""
    from air_magics.checkpoints.direct_write import DirectVolumeFS

    s = state(3)
    w = dcp.FileSystemWriter(tmp_path / "plain", thread_count=2, sync_files=False)
    w.fs = DirectVolumeFS(None)
    dcp.save(s, storage_writer=w)
    assert (tmp_path / "plain" / METADATA).is_file()
    out = zeros_like(s)
    dcp.load(out, storage_reader=dcp.FileSystemReader(tmp_path / "plain"))
    assert all(torch.equal(out[k], s[k]) for k in s)


def test_a_writer_into_a_folder_without_metadata_renames_only_the_manifest_and_metadata(slowfs, tmp_path, monkeypatch):
    """With ``overwrite=False`` the folder holds no ``.metadata`` when the save starts, so nothing
    reads its data files before the ``.metadata`` written last names them: they are written under
    their own names (the volume sees two renames: the manifest's temp name and torch's
    ``.metadata.tmp``). ``overwrite=True`` over an existing checkpoint still writes each data file
    under a temp name renamed over the old one, so the old checkpoint never meets a torn file."""
    backing = tmp_path / "backing"
    (backing / "main" / "ck" / "runs").mkdir(parents=True)
    s = state(6)
    for overwrite, stats in ((False, tmp_path / "fresh.json"), (True, tmp_path / "over.json")):
        with slowfs.mounted(backing, tmp_path / "mnt", op_latency_ms=0, stats=stats):
            monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
            w = UCVolumeWriter("/Volumes/main/ck/runs/plain", overwrite=overwrite)
            dcp.save({k: v * (2 if overwrite else 1) for k, v in s.items()}, storage_writer=w)
            out = zeros_like(s)
            dcp.load(out, storage_reader=UCVolumeReader("/Volumes/main/ck/runs/plain"))
            assert all(torch.equal(out[k], s[k] * (2 if overwrite else 1)) for k in s)
        data_files = len([n for n in w.checksums if n.endswith(".distcp")])
        renames = json.loads(stats.read_text())["ops"].get("rename", 0)
        assert renames == (2 + data_files if overwrite else 2), (overwrite, renames, data_files)
    names = [p.name for p in (backing / "main" / "ck" / "runs" / "plain").iterdir()]
    assert not [n for n in names if is_leftover(n) or n.endswith(".tmp")], names
