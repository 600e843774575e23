"""Packed shards: format (real tar), incremental re-packs, atomic/resumable writes, reading back
through UCVolumeDataset, bad input, a SIGKILL mid-pack, a flaky FUSE volume."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from air_magics.cache import FileCache
from air_magics.data import UCVolumeDataset
from air_magics.errors import PackError, ShardError
from air_magics.shards import MANIFEST_NAME, open_packed, pack
from air_magics.volumes import VolumeStore

SRC, DEST = "/Volumes/main/raw/img/train", "/Volumes/main/raw/img/packed"
N = 57


def _write(store, rel, data):
    with store.open(f"{SRC}/{rel}", "wb") as f:
        f.write(data)


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(N):
        _write(s, f"c{i % 3}/{i:03d}.bin", f"item {i} ".encode() * (i * 40 + 1))
    return s


def folder(store, path):
    return Path(store.locate(path).path)


def hashes_of(root):
    root = Path(root)
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file()}


def manifest(store):
    return json.loads((folder(store, DEST) / MANIFEST_NAME).read_text())


def shard_files(store):
    return sorted(p.name for p in folder(store, DEST).iterdir() if p.name.startswith("shard-"))


# -- format ---------------------------------------------------------------------------------------
def test_shards_are_plain_tar_readable_by_tar(vol, tmp_path):
    long = "x" * 120 + "/" + "é" * 60 + ".bin"  # needs a pax header: ustar holds 100 + 155 bytes of ASCII
    _write(vol, long, b"long name")
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.files == N + 1 and r.shards > 2 and r.shards_written == r.shards and r.generation == 1
    out = tmp_path / "x"
    out.mkdir()
    listed = []
    for s in manifest(vol)["shards"]:
        tar = folder(vol, DEST) / s["name"]
        listed += subprocess.run(["tar", "-tf", str(tar)], check=True, capture_output=True, text=True).stdout.splitlines()
        subprocess.run(["tar", "-xf", str(tar), "-C", str(out)], check=True)
    assert len(listed) == N + 1 and long in listed
    assert hashes_of(out) == hashes_of(folder(vol, SRC))


def test_index_offsets_point_at_member_bytes(vol):
    pack(SRC, DEST, shard_size="64KiB")
    d = folder(vol, DEST)
    for s in manifest(vol)["shards"]:
        ix = json.loads((d / s["index"]).read_text())
        raw = (d / s["name"]).read_bytes()
        assert len(raw) == s["bytes"] == ix["bytes"] and zlib.crc32(raw) == s["crc32"]
        for name, offset, size, src_size, mtime in ix["members"]:
            src = d.parent / "train" / name
            assert raw[offset:offset + size] == src.read_bytes() and size == src_size
            assert mtime == pytest.approx(src.stat().st_mtime, abs=1e-6)


def test_a_file_larger_than_a_shard_gets_its_own(vol):
    _write(vol, "c1/big.bin", os.urandom(200_000))
    pack(SRC, DEST, shard_size="64KiB")
    pf = open_packed(vol, DEST)
    big = next(m for m in pf.members if m.member.name == "c1/big.bin")
    assert pf.manifest.shards[big.shard].members == 1


def test_pattern_selects_files(vol):
    r = pack(SRC, DEST, pattern="c1/*")
    assert r.files == 19 and r.shards == 1
    assert all(m.member.name.startswith("c1/") for m in open_packed(vol, DEST).members)


# -- incremental -------------------------------------------------------------------------------
def test_unchanged_repack_writes_nothing(vol):
    pack(SRC, DEST, shard_size="64KiB")
    before = {n: (folder(vol, DEST) / n).stat().st_mtime_ns for n in shard_files(vol) + [MANIFEST_NAME]}
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.unchanged and r.shards_written == 0 and r.files_written == 0 and r.generation == 1
    assert {n: (folder(vol, DEST) / n).stat().st_mtime_ns for n in before} == before


def test_new_files_go_into_new_shards(vol):
    first = pack(SRC, DEST, shard_size="64KiB")
    old = set(shard_files(vol))
    for i in range(5):
        _write(vol, f"new/{i}.bin", b"new %d" % i)
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.generation == 2 and r.shards_kept == first.shards and r.shards_written == 1 and r.files_written == 5
    assert old < set(shard_files(vol)) and r.shards_removed == 0
    assert len(open_packed(vol, DEST).members) == N + 5


def test_changed_and_deleted_files_make_a_new_generation(vol):
    pack(SRC, DEST, shard_size="64KiB")
    src = folder(vol, SRC)
    (src / "c0/000.bin").write_bytes(b"changed")
    (src / "c2/056.bin").unlink()
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.generation == 2 and r.shards_removed >= 1 and r.shards_kept >= 1
    pf = open_packed(vol, DEST)
    names = [m.member.name for m in pf.members]
    assert "c2/056.bin" not in names and len(names) == N - 1
    cache = FileCache()
    got = next(m for m in pf.members if m.member.name == "c0/000.bin").local_path(cache)
    assert Path(got).read_bytes() == b"changed"
    named = {n for s in pf.manifest.shards for n in (s.name, s.index)}
    assert set(shard_files(vol)) == named  # old shards gone once the new manifest was published


def test_dry_run_writes_nothing(vol):
    r = pack(SRC, DEST, shard_size="64KiB", dry_run=True)
    assert r.dry_run and r.shards_written == r.shards > 1 and r.files == N
    assert not folder(vol, DEST).exists()


# -- reading through the dataset ------------------------------------------------------------------
def _names(paths, root):
    return [Path(p).relative_to(root).as_posix() if root else p for p in paths]


def _rel(paths):
    """Path below the folder the dataset read (raw: the cached volume folder; packed: the shard dir)."""
    out = []
    for p in paths:
        parts = Path(p).parts
        i = next(k for k, part in enumerate(parts) if part in ("train",) or part.startswith("shard-"))
        out.append("/".join(parts[i + 1:]))
    return out


@pytest.mark.parametrize("shuffle", [False, True])
def test_dataset_over_packed_yields_what_raw_yields(vol, shuffle):
    pack(SRC, DEST, shard_size="64KiB")
    raw = UCVolumeDataset(SRC, shuffle=shuffle, seed=3)
    packed = UCVolumeDataset(DEST, shuffle=shuffle, seed=3)
    assert len(packed) == len(raw) == N
    a, b = list(raw), list(packed)
    assert _rel(a) == _rel(b)
    assert [Path(p).read_bytes() for p in a] == [Path(p).read_bytes() for p in b]
    assert [Path(p).name for p in a] == [Path(p).name for p in b]
    packed.set_epoch(1)
    raw.set_epoch(1)
    assert _rel(list(raw)) == _rel(list(packed))
    assert all(str(FileCache().root) in p for p in b)


def test_dataset_fetches_each_shard_once_into_the_cache(vol):
    pack(SRC, DEST, shard_size="64KiB")
    ds = UCVolumeDataset(DEST, shuffle=True)
    list(ds)
    shards = len(open_packed(vol, DEST).manifest.shards)
    info = FileCache().info()
    assert info.misses == shards and info.entries == shards
    list(UCVolumeDataset(DEST, shuffle=True))  # another dataset, same process or not: extracted already
    assert FileCache().info().misses == shards


def _pack_samples(vol):
    import io

    import numpy as np
    import torch

    buf = io.BytesIO()
    np.save(buf, np.arange(5))
    _write(vol, "x/a.npy", buf.getvalue())
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    _write(vol, "x/b.pt", buf.getvalue())


def test_yielded_paths_open_with_numpy_and_torch(vol):
    import numpy as np
    import torch

    _pack_samples(vol)
    pack(SRC, DEST, shard_size="64KiB")
    got = {Path(p).name: p for p in UCVolumeDataset(DEST, pattern="x/*")}
    assert list(np.load(got["a.npy"])) == [0, 1, 2, 3, 4]
    assert torch.load(got["b.pt"])["w"].sum().item() == 2
    with open(got["a.npy"], "rb") as f:
        assert f.read(6) == b"\x93NUMPY"
    assert os.path.getmtime(got["a.npy"]) == pytest.approx((folder(vol, SRC) / "x/a.npy").stat().st_mtime, abs=1e-6)


def test_yielded_paths_open_with_pil(vol):
    import io

    Image = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), (255, 0, 0)).save(buf, format="PNG")
    _write(vol, "x/c.png", buf.getvalue())
    pack(SRC, DEST)
    (p,) = UCVolumeDataset(DEST, pattern="*.png")
    assert Image.open(p).size == (4, 3)


def test_state_resumes_on_a_changed_grid(vol):
    from air_magics.data.order import EpochState, Grid, stream_items

    pack(SRC, DEST, shard_size="64KiB")
    ds = UCVolumeDataset(DEST, shuffle=True, seed=7)
    it = iter(ds)
    first = [next(it) for _ in range(20)]
    it.close()
    state = ds.state_dict()
    again = UCVolumeDataset(DEST, shuffle=True, seed=7)
    again.load_state_dict(state)  # same files, same fingerprint: accepted
    st, grid = EpochState.from_dict(state), Grid(2, 3)
    rest = [again.files[i].key.split("/packed/", 1)[1] for s in range(grid.streams) for i in stream_items(st, grid, s)]
    got = _rel(first) + rest
    assert sorted(got) == sorted(m.member.name for m in open_packed(vol, DEST).members) and len(set(got)) == N


def test_dataset_with_a_loader_resumes_with_other_workers(vol):
    from air_magics.data import DataLoader

    pack(SRC, DEST, shard_size="64KiB")
    ds = UCVolumeDataset(DEST, shuffle=True, seed=1)
    loader = DataLoader(ds, batch_size=4, num_workers=2)
    got = []
    for i, batch in enumerate(loader):
        got += list(batch)
        if i == 4:
            break
    state = loader.state_dict()
    ds2 = UCVolumeDataset(DEST, shuffle=True, seed=1)
    loader2 = DataLoader(ds2, batch_size=4, num_workers=3)
    loader2.load_state_dict(state)
    for batch in loader2:
        got += list(batch)
    names = [Path(p).read_bytes() for p in got]
    assert len(got) == N and len(set(names)) == N
