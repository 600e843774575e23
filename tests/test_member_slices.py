"""Packed members handed from DataLoader workers to the loop by their place in the cached shard
(``MemberSlice``) and copied out in the loop's process (``SliceMaps``): the loop still gets every
member's exact bytes, and a slice whose file is gone, replaced or damaged is read again through the
dataset, never served as it is."""

import os
import zlib
from pathlib import Path

import pytest
from _seed import seeded_volume

from air_magics.cache import FileCache
from air_magics.data import DataLoader, UCVolumeDataset
from air_magics.shards import MemberSlice, SliceMaps, pack
from air_magics.shards import slices as slices_mod

SRC, DEST = "/Volumes/main/raw/sl/src", "/Volumes/main/raw/sl/packed"
N = 60


def content(i: int) -> bytes:
    return f"member {i:03d} ".encode() * (40 + 3 * i)


@pytest.fixture
def packed():
    s = seeded_volume("main.raw.sl", {f"{SRC}/c{i % 3}/f{i:03d}.bin": content(i) for i in range(N)})
    pack(SRC, DEST, shard_size="8KiB")
    return s


class CountingMaps(SliceMaps):
    reads = 0

    def read(self, s):
        CountingMaps.reads += 1
        return super().read(s)


@pytest.mark.parametrize("batch_size", [None, 4])
def test_loader_gets_every_members_bytes_through_slices(packed, tmp_path, monkeypatch, batch_size):
    monkeypatch.setattr(slices_mod, "SliceMaps", CountingMaps)
    CountingMaps.reads = 0
    ds = UCVolumeDataset(DEST, output="bytes", cache=FileCache(tmp_path / "c"), shuffle=True)
    dl = DataLoader(ds, batch_size=batch_size, num_workers=2)
    want = sorted(content(i) for i in range(N))
    for _epoch in range(2):  # cold, then warm
        got = [x for b in dl for x in (b if batch_size else [b])]
        assert all(type(x) is bytes for x in got)
        assert sorted(got) == want
    assert CountingMaps.reads >= N  # the members came as slices, read in this process


def test_a_users_collate_gets_bytes(packed, tmp_path):
    def collate(items):
        assert all(type(x) is bytes for x in items), [type(x) for x in items]
        return sorted(items)

    ds = UCVolumeDataset(DEST, output="bytes", cache=FileCache(tmp_path / "c"))
    dl = DataLoader(ds, batch_size=5, num_workers=2, collate_fn=collate)
    assert sorted(x for b in dl for x in b) == sorted(content(i) for i in range(N))


def test_a_transform_gets_bytes(packed, tmp_path):
    ds = UCVolumeDataset(
        DEST, output="bytes", cache=FileCache(tmp_path / "c"), transform=lambda b: len(b) if type(b) is bytes else -1
    )
    got = sorted(int(x) for b in DataLoader(ds, batch_size=3, num_workers=2) for x in b)
    assert got == sorted(len(content(i)) for i in range(N))


# -- SliceMaps on its own: what it trusts ------------------------------------------------------------
def _slice(path: Path, data: bytes, offset: int, size: int, item: int = 7) -> MemberSlice:
    return MemberSlice(str(path), os.stat(path).st_ino, offset, size, zlib.crc32(data[offset : offset + size]), item)


def test_a_finished_shard_is_trusted_by_its_inode(tmp_path):
    data = os.urandom(4096)
    path = tmp_path / "shard.tar"
    path.write_bytes(data)
    s = _slice(path, data, 100, 50)._replace(crc32=0)  # no CRC-32 pass over a finished file's members
    assert SliceMaps(lambda i: pytest.fail("no fallback expected")).read(s) == data[100:150]


def test_slice_is_read_from_the_named_file(tmp_path):
    data = os.urandom(4096)
    path = tmp_path / "shard.tar"
    path.write_bytes(data)
    maps = SliceMaps(lambda i: pytest.fail("no fallback expected"))
    assert maps.read(_slice(path, data, 100, 50)) == data[100:150]
    maps.close()


def test_part_file_is_read_while_the_shard_is_fetched(tmp_path):
    data = os.urandom(4096)
    part = tmp_path / "shard.tar.part"
    part.write_bytes(data)
    s = _slice(part, data, 10, 20)._replace(path=str(tmp_path / "shard.tar"))
    assert SliceMaps(lambda i: b"fallback").read(s) == data[10:30]


@pytest.mark.parametrize("damage", ["gone", "replaced", "changed", "short"])
def test_gone_replaced_or_damaged_is_read_again_through_the_dataset(tmp_path, damage):
    data = os.urandom(4096)
    final = tmp_path / "shard.tar"
    # a shard being fetched (its part file) is checked member by member; a finished one is trusted
    # by its inode (only a complete, verified fetch is renamed to it), so it is not "changed" here
    path = final.with_name("shard.tar.part") if damage == "changed" else final
    path.write_bytes(data)
    s = _slice(path, data, 1000, 500, item=3)._replace(path=str(final))
    if damage == "gone":
        path.unlink()
    elif damage == "replaced":  # another file (another inode) at the same name
        keep = tmp_path / "old"
        os.rename(path, keep)
        path.write_bytes(data)
    elif damage == "changed":  # a byte of the member flipped after the worker checked it
        path.write_bytes(data[:1200] + bytes([data[1200] ^ 1]) + data[1201:])
    else:
        with open(path, "r+b") as f:
            f.truncate(1200)
    asked = []
    assert SliceMaps(lambda i: asked.append(i) or b"from the dataset").read(s) == b"from the dataset"
    assert asked == [3]


def test_drop_last_and_a_resumed_epoch_with_slices(packed, tmp_path):
    ds = UCVolumeDataset(DEST, output="bytes", cache=FileCache(tmp_path / "c"), shuffle=True, seed=3)
    dl = DataLoader(ds, batch_size=7, num_workers=2, drop_last=True)
    batches = list(dl)
    assert all(len(b) == 7 and all(type(x) is bytes for x in b) for b in batches)
    assert len({x for b in batches for x in b}) == 7 * len(batches) <= N
    # stop after 3 batches, resume in a new loader: every member exactly once across the two
    first = DataLoader(ds, batch_size=5, num_workers=2)
    it = iter(first)
    head = [x for _ in range(3) for x in next(it)]
    state = first.state_dict()
    del it
    again = UCVolumeDataset(DEST, output="bytes", cache=FileCache(tmp_path / "c"), shuffle=True, seed=3)
    rest_loader = DataLoader(again, batch_size=5, num_workers=2)
    rest_loader.load_state_dict(state)
    rest = [x for b in rest_loader for x in b]
    assert sorted(head + rest) == sorted(content(i) for i in range(N))


def test_one_worker_by_default_over_a_packed_folder_read_by_offset(packed, tmp_path):
    cache = FileCache(tmp_path / "c")
    assert DataLoader(UCVolumeDataset(DEST, output="bytes", cache=cache)).num_workers == 1
    assert DataLoader(UCVolumeDataset(DEST, output="bytes", cache=cache), num_workers=2).num_workers == 2
    assert DataLoader(UCVolumeDataset(DEST, output="bytes", cache=cache, transform=len)).num_workers == 2
    assert DataLoader(UCVolumeDataset(DEST, cache=cache)).num_workers == 2  # paths: extraction wants two
    assert DataLoader(UCVolumeDataset(SRC, output="bytes", cache=cache)).num_workers == 2  # a raw folder
