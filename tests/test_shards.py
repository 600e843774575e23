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
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


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
        listed += subprocess.run(
            ["tar", "-tf", str(tar)], check=True, capture_output=True, text=True
        ).stdout.splitlines()
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
        for name, offset, size, src_size, mtime, crc in ix["members"]:
            src = d.parent / "train" / name
            assert raw[offset : offset + size] == src.read_bytes() and size == src_size
            assert crc == zlib.crc32(src.read_bytes())
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
        out.append("/".join(parts[i + 1 :]))
    return out


@pytest.mark.parametrize("shuffle", [False, True])
def test_dataset_over_packed_yields_what_raw_yields(vol, shuffle):
    """Unshuffled: the raw folder's order exactly. Shuffled: the same items, in a shard-aware order
    (shards shuffled per epoch, members within blocks of WINDOW shards; data/order.epoch_order)."""
    from air_magics.shards.shard_order import WINDOW

    pack(SRC, DEST, shard_size="64KiB")
    raw = UCVolumeDataset(SRC, shuffle=shuffle, seed=3)
    packed = UCVolumeDataset(DEST, shuffle=shuffle, seed=3)
    assert len(packed) == len(raw) == N
    a, b = list(raw), list(packed)
    same = _rel(a) == _rel(b)
    assert same if not shuffle else sorted(_rel(a)) == sorted(_rel(b))
    by_rel = {r: Path(p).read_bytes() for r, p in zip(_rel(a), a, strict=True)}
    assert all(by_rel[r] == Path(p).read_bytes() for r, p in zip(_rel(b), b, strict=True))
    packed.set_epoch(1)
    raw.set_epoch(1)
    b1 = list(packed)
    assert sorted(_rel(list(raw))) == sorted(_rel(b1))
    if shuffle:
        assert _rel(b1) != _rel(b)  # reshuffled per epoch
        shard_of = {f.key[len(DEST) + 1 :]: f.member.shard for f in packed.files}
        shards = [shard_of[r] for r in _rel(b1)]
        sizes = {k: shards.count(k) for k in set(shards)}
        assert len(sizes) > WINDOW  # enough shards for the window to matter
        # members move only within their block of WINDOW shards: the first block's items come from
        # exactly WINDOW shards, which no later item comes from
        first = set()
        for k in shards:
            if k not in first and len(first) == WINDOW:
                break
            first.add(k)
        block = sum(sizes[k] for k in first)
        assert set(shards[:block]) == first and not first & set(shards[block:])
    assert all(str(FileCache().root) in p for p in b)


def test_dataset_fetches_each_shard_once_into_its_extracted_folder(vol):
    pack(SRC, DEST, shard_size="64KiB")
    ds = UCVolumeDataset(DEST, shuffle=True)
    list(ds)
    m = open_packed(vol, DEST).manifest
    ex = ds.files[0].member.folder._extractor
    ex._drivers.shutdown(wait=True)  # a fetch counts once its last member is in
    assert ex.shards_fetched == len(m.shards) > 2 and ex.bytes_read == sum(s.bytes for s in m.shards)
    info = FileCache().info()  # the shard's bytes are stored once, as its members: one entry per shard
    assert info.entries == len(m.shards) and info.bytes == sum(s.bytes for s in m.shards)
    again = UCVolumeDataset(DEST, shuffle=True)  # another dataset, same process or not: extracted already
    assert len(list(again)) == N
    ex2 = again.files[0].member.folder._extractor
    assert ex2.shards_fetched == 0 and ex2.bytes_read == 0


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
    from air_magics.datasets.epoch_order import EpochState, Grid, stream_items

    pack(SRC, DEST, shard_size="64KiB")
    ds = UCVolumeDataset(DEST, shuffle=True, seed=7)
    it = iter(ds)
    first = [next(it) for _ in range(20)]
    it.close()
    state = ds.state_dict()
    again = UCVolumeDataset(DEST, shuffle=True, seed=7)
    again.load_state_dict(state)  # same files, same fingerprint: accepted
    st, grid = EpochState.from_dict(state), Grid(2, 3)
    st.groups = again._groups  # the shard-aware order the dataset derives from its files (not saved)
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


# -- bad input and failure ------------------------------------------------------------------------
def test_destination_inside_the_source_is_refused(vol):
    with pytest.raises(PackError, match="inside the source"):
        pack(SRC, f"{SRC}/packed")
    with pytest.raises(PackError, match="inside the destination"):
        pack(SRC, "/Volumes/main/raw/img")
    assert not (folder(vol, SRC) / "packed").exists()


def test_non_empty_destination_that_is_not_packed_is_refused(vol):
    with vol.open(f"{DEST}/notes.txt", "wb") as f:
        f.write(b"mine")
    with pytest.raises(PackError, match=r"not empty and not a packed folder.*notes\.txt.*new folder"):
        pack(SRC, DEST)
    assert sorted(p.name for p in folder(vol, DEST).iterdir()) == ["notes.txt"]


def test_bad_shard_size_is_one_clear_error(vol):
    with pytest.raises(PackError, match="'lots' is not a size"):
        pack(SRC, DEST, shard_size="lots")
    with pytest.raises(PackError, match="too small"):
        pack(SRC, DEST, shard_size=100)


def test_source_changing_while_packed_publishes_nothing(vol, monkeypatch):
    from air_magics.shards import writer

    pack(SRC, DEST, shard_size="64KiB")
    before = (folder(vol, DEST) / MANIFEST_NAME).read_bytes()
    _write(vol, "c0/new.bin", b"new")
    real = writer._list_source

    def list_then_change(*a, **k):
        files = real(*a, **k)
        (folder(vol, SRC) / "c0/new.bin").write_bytes(b"grown meanwhile")
        return files

    monkeypatch.setattr(writer, "_list_source", list_then_change)
    with pytest.raises(PackError, match=r"c0/new\.bin changed while it was packed.*run pack again"):
        pack(SRC, DEST, shard_size="64KiB")
    assert (folder(vol, DEST) / MANIFEST_NAME).read_bytes() == before
    monkeypatch.setattr(writer, "_list_source", real)
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.generation == 2 and r.files == N + 1
    assert not [n for n in os.listdir(folder(vol, DEST)) if ".air-tmp-" in n]


@pytest.mark.parametrize("damage", ["missing", "garbage", "wrong_totals"])
def test_missing_or_corrupt_manifest(vol, damage):
    pack(SRC, DEST, shard_size="64KiB")
    m = folder(vol, DEST) / MANIFEST_NAME
    if damage == "missing":
        m.unlink()
        # a folder of shards without its manifest is not a packed folder: read as plain files
        assert open_packed(vol, DEST) is None
        return
    if damage == "garbage":
        m.write_text("{not json")
    else:
        doc = json.loads(m.read_text())
        doc["files"] += 1
        m.write_text(json.dumps(doc))
    with pytest.raises(ShardError, match=rf"manifest {DEST}/air-shards.json is corrupt|disagree with its shards"):
        UCVolumeDataset(DEST)
    with pytest.raises(ShardError, match="pack the source again"):
        pack(SRC, DEST)


@pytest.mark.parametrize("damage", ["missing", "edited"])
def test_missing_or_corrupt_index(vol, damage):
    pack(SRC, DEST, shard_size="64KiB")
    ix = folder(vol, DEST) / manifest(vol)["shards"][0]["index"]
    if damage == "missing":
        ix.unlink()
    else:
        doc = json.loads(ix.read_text())
        doc["members"][0][1] += 512
        ix.write_text(json.dumps(doc))
    with pytest.raises(ShardError, match=rf"index {DEST}/shard-\w+\.idx\.json .*pack the source again"):
        UCVolumeDataset(DEST)
    r = pack(SRC, DEST, shard_size="64KiB")  # the damaged shard is rewritten, the others kept
    assert r.shards_written == 1 and r.shards_kept == r.shards - 1
    assert len(UCVolumeDataset(DEST)) == N


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_dataset_refuses_a_shard_that_does_not_match_its_index(vol, damage):
    pack(SRC, DEST, shard_size="64KiB")
    tar = folder(vol, DEST) / manifest(vol)["shards"][0]["name"]
    raw = bytearray(tar.read_bytes())
    if damage == "truncated":
        tar.write_bytes(raw[: len(raw) // 2])
    else:
        raw[1000] ^= 0xFF
        st = tar.stat()
        tar.write_bytes(raw)
        os.utime(tar, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime: only the bytes differ
    ds = UCVolumeDataset(DEST)
    with pytest.raises(
        ShardError,
        match=rf"shard {DEST}/shard-\w+\.tar(: member '[^']+')? (is \d+ bytes but its index says|does not match)"
        r".*pack the source again",
    ):
        list(ds)
    if damage == "truncated":
        r = pack(SRC, DEST, shard_size="64KiB")
        assert r.shards_written == 1
        assert len(list(UCVolumeDataset(DEST))) == N


def test_magic_packs_and_ls_shows_the_packed_folder(vol, capsys):
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "air_magics")
    ip.run_line_magic("config", "AirMagics.default_volume = ''")
    assert ip.run_line_magic("air_volume", f"pack {SRC} {DEST} --shard-size 64KiB --dry-run") is None
    assert "would write" in capsys.readouterr().out and not folder(vol, DEST).exists()
    r = ip.run_line_magic("air_volume", f"pack {SRC} {DEST} --shard-size 64KiB --pattern 'c1/*' -o rep")
    assert r.files == 19 and ip.user_ns["rep"] is r
    out = capsys.readouterr().out
    assert "19 / 19 files" in out and "generation 1" in out
    ls = repr(ip.run_line_magic("air_volume", f"ls {DEST}"))
    assert "packed folder: 19 members" in ls and "generation 1" in ls
    with pytest.raises(UsageError, match="inside the source"):
        ip.run_line_magic("air_volume", f"pack {SRC} {SRC}/p")
    with pytest.raises(UsageError, match="--dry-run only applies to `pack`"):
        ip.run_line_magic("air_volume", f"ls {SRC} --dry-run")


# -- kill and flaky volume ----------------------------------------------------------------------
_PACK_SLOWLY = textwrap.dedent("""
    import sys, time
    from air_magics.shards import writer
    real = writer.write_shard
    def slow(*a, **k):
        ix = real(*a, **k)
        print("shard", flush=True)
        time.sleep(0.3)
        return ix
    writer.write_shard = slow
    writer.pack(sys.argv[1], sys.argv[2], shard_size="64KiB")
""")


def test_sigkill_mid_pack_then_rerun(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    gen1 = manifest(vol)
    for i in range(40):  # generation 2 needs several new shards
        _write(vol, f"more/{i:02d}.bin", os.urandom(5000))
    (folder(vol, SRC) / "c0/003.bin").write_bytes(b"changed")
    script = tmp_path / "slow_pack.py"
    script.write_text(_PACK_SLOWLY)
    proc = subprocess.Popen([sys.executable, str(script), SRC, DEST], stdout=subprocess.PIPE, text=True, env=os.environ)
    assert proc.stdout.readline().strip() == "shard" and proc.stdout.readline().strip() == "shard"
    proc.kill()
    proc.wait()
    assert manifest(vol) == gen1  # the previous generation stands, every shard it names intact
    ds = UCVolumeDataset(DEST)
    assert len(ds) == N and len(list(ds)) == N
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.shards_reused >= 2 and r.generation == 2
    out = tmp_path / "x"
    out.mkdir()
    for s in manifest(vol)["shards"]:
        subprocess.run(["tar", "-xf", str(folder(vol, DEST) / s["name"]), "-C", str(out)], check=True)
    assert hashes_of(out) == hashes_of(folder(vol, SRC))
    assert not [n for n in os.listdir(folder(vol, DEST)) if ".air-tmp-" in n]  # the dead run's temp files swept


@pytest.mark.fuse
def test_pack_and_read_on_a_flaky_fuse_volume(slowfs, tmp_path, monkeypatch):
    from conftest import make_tree

    backing = tmp_path / "backing"
    hashes = make_tree(backing / "main" / "raw" / "img" / "train", n_dirs=4, per_dir=30, size=4096)
    stats = tmp_path / "stats.json"
    with slowfs.mounted(
        backing,
        tmp_path / "mnt",
        op_latency_ms=2,
        fail_rate=0.2,
        fail_ops="open,read",
        fail_times=2,
        direct_io=True,
        stats=stats,
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        store = VolumeStore()
        r = pack(SRC, DEST, shard_size="128KiB", store=store, retries=6)
        assert r.files == 120 and r.shards > 2
        assert pack(SRC, DEST, shard_size="128KiB", store=store).unchanged
        ds = UCVolumeDataset(DEST, store=store, shuffle=True)
        got = {"/".join(Path(p).parts[-3:]): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in ds}
    assert got == {k: v for k, v in hashes.items()}
    assert sum(json.loads(stats.read_text())["faults"].values()) > 10


@pytest.mark.parametrize(
    "name,size,mtime",
    [
        ("a.bin", 0, 0.0),
        ("d/e/f.jpg", 1023, 1_700_000_000.7),
        ("x" * 100, 512, 1.0),  # the longest name a ustar header holds
        ("x" * 101, 5, 1.0),  # one more: a pax header
        ("caf\u00e9/\u00fc.txt", 7, 2.0),  # not ASCII: a pax header
        ("big.bin", 8**11, 3.0),  # a size the octal field cannot hold
        ("old.bin", 1, -5.0),  # a negative mtime
        ("bad\udcff.bin", 3, 4.0),  # an undecodable byte kept as a surrogate
    ],
)
def test_a_members_bytes_are_its_headers_length_whether_made_or_known(name, size, mtime):
    """The plan's size of a member (header known without making it where a plain ustar header
    holds it) is exactly what writing it takes."""
    from air_magics.shards.format import BLOCK, member_bytes, member_header

    assert member_bytes(name, size, mtime) == len(member_header(name, size, mtime)) + size + (-size % BLOCK)
