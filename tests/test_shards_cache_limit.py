"""Cached shards and extracted shard folders are cache entries: counted against the byte limit,
evicted as units, and served from the overflow window when the cache is full of entries in use.

Measured before: with the cache limited to half the packed bytes, the cache folder held 4x its limit
after two epochs (the shards were not counted)."""

import os
import threading
import zlib
from pathlib import Path

import pytest
from _seed import seeded_volume

from air_magics.cache import FileCache
from air_magics.data import DataLoader, UCVolumeDataset
from air_magics.errors import ShardError
from air_magics.shards import open_packed, pack, prune_extracted

SRC, DEST = "/Volumes/main/raw/lim/src", "/Volumes/main/raw/lim/packed"
N = 96


def content(i: int) -> bytes:
    return (f"item {i:03d} ".encode() * 400)[: 3000 + 97 * i]


@pytest.fixture
def vol():
    return seeded_volume("main.raw.lim", {f"{SRC}/c{i % 3}/f{i:03d}.bin": content(i) for i in range(N)})


def _bytes_under(root: Path) -> int:
    """Bytes of the regular files under the cache's data folders (the overflow window aside: it is
    bounded on its own; the index and its locks aside: metadata)."""
    total = 0
    for sub in ("files", "shards"):
        for dirpath, _, names in os.walk(root / sub):
            for name in names:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except FileNotFoundError:
                    pass  # removed while we looked
    return total


class _Sampler:
    """The largest bytes on disk seen under the cache root, looked at every couple of milliseconds."""

    def __init__(self, root: Path) -> None:
        self.root, self.peak, self.samples = root, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, _bytes_under(self.root))
            self.samples += 1

    def __enter__(self) -> "_Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _bytes_under(self.root))


def test_packed_data_through_workers_never_takes_the_cache_past_its_limit(vol, tmp_path):
    pack(SRC, DEST, shard_size="24KiB")
    shards = open_packed(vol, DEST).manifest.shards
    packed = sum(s.bytes for s in shards)
    assert len(shards) >= 12
    cache = FileCache(tmp_path / "c", limit=packed // 2)
    want = {zlib.crc32(content(i)) for i in range(N)}
    hits = []
    with _Sampler(cache.root) as sampler:
        for output in ("bytes", "bytes", "path"):
            ds = UCVolumeDataset(DEST, output=output, cache=cache, shuffle=True)
            got = set()
            for item in DataLoader(ds, batch_size=None, num_workers=2):
                got.add(zlib.crc32(item if output == "bytes" else Path(item).read_bytes()))  # read as it comes
            assert got == want  # every item's bytes, from the cache or from the overflow window
            hits.append(cache.info().hits)
    assert sampler.samples > 10
    assert sampler.peak <= cache.limit, f"{sampler.peak} bytes on disk, limit {cache.limit}"
    assert cache.total_bytes <= cache.limit
    assert hits[1] > hits[0]  # epoch 2 found shards epoch 1 cached
    assert hits[2] > hits[1] or cache.info().entries  # the extraction: its own entries, within the limit too


def test_a_shard_whose_entry_was_evicted_is_fetched_again(vol, tmp_path):
    """The cache evicts a shard not read for pin_seconds: a reader in another process (here: the
    same reader, its map older than the entry) notices on its next read and fetches it again."""
    pack(SRC, DEST, shard_size="24KiB")
    folder = open_packed(vol, DEST)
    cache = FileCache(tmp_path / "c", pin_seconds=0.0)
    ref = folder.members[0]
    assert ref.read_bytes(cache) == content(0)
    slot = folder.cached_shard(cache, ref.shard)
    rd = folder.reader(cache)
    rd._drivers.shutdown(wait=True)  # noqa: SLF001 - read-ahead fetches finished
    assert slot.exists() and cache.total_bytes > 0
    assert cache.clear().removed >= 1  # unpinned (pin_seconds=0): evicted, its file removed
    assert not slot.exists() and cache.total_bytes == 0
    fresh = open_packed(vol, DEST)  # a new process's view
    assert fresh.members[0].read_bytes(cache) == content(0)
    fresh.reader(cache)._drivers.shutdown(wait=True)  # noqa: SLF001
    assert slot.exists() and cache.info().entries >= 1
    assert prune_extracted(cache) >= 1 and not slot.exists() and cache.total_bytes == 0


def test_an_extracted_folder_is_one_entry_evicted_as_a_unit(vol, tmp_path):
    pack(SRC, DEST, shard_size="24KiB")
    folder = open_packed(vol, DEST)
    cache = FileCache(tmp_path / "c", pin_seconds=0.0)
    ref = folder.members[0]
    p = Path(ref.local_path(cache))
    folder.extractor(cache)._drivers.shutdown(wait=True)  # noqa: SLF001
    assert p.read_bytes() == content(0)
    d = folder.extracted_dir(cache, ref.shard)
    assert p.is_relative_to(cache.root / "files") and d.is_dir()
    assert cache.clear().removed >= 1
    assert not d.exists() and cache.total_bytes == 0  # the folder went as a whole
    fresh = open_packed(vol, DEST)
    assert Path(fresh.members[0].local_path(cache)).read_bytes() == content(0)  # extracted again


def _index(name: str) -> int:
    return int(name.rsplit("/f", 1)[1][:3])


def _overflow_files(root: Path) -> list[Path]:
    return [p for p in (root / "overflow").rglob("*") if p.is_file() and not p.name.endswith(".lock")]


@pytest.mark.parametrize("output", ["bytes", "path"])
def test_with_no_room_a_shards_members_are_read_from_the_volume_within_the_window(vol, tmp_path, output):
    """No shard fits in the files' share: none is copied past the cache (that took 2x the limit);
    each member is read from the volume, as bytes (nothing on disk) or as a member-sized file in
    the overflow window (gone after overflow_files more hand-outs); once the cache has room again,
    the shards are cached whole again."""
    pack(SRC, DEST, shard_size="24KiB")
    folder = open_packed(vol, DEST)
    # the files' share (4 KiB) is smaller than a shard; the window (60 KiB) holds a few members
    cache = FileCache(tmp_path / "c", limit=64 * 1024, overflow_bytes=60 * 1024, overflow_files=8)
    refs = sorted(folder.members, key=lambda r: (r.shard, r.member.offset))  # shard after shard
    first, peak = None, 0
    for ref in refs:
        if output == "bytes":
            assert ref.read_bytes(cache) == content(_index(ref.name))
        else:
            p = Path(ref.local_path(cache))
            assert p.read_bytes() == content(_index(ref.name))
            first = first or p
        peak = max(peak, sum(f.stat().st_size for f in _overflow_files(cache.root)))
    assert cache.total_bytes == 0 and _bytes_under(cache.root) == 0  # nothing in the cache
    assert cache.info().overflows == N  # each member served past the cache, once
    if output == "bytes":
        assert peak == 0  # nothing on disk at all
    else:
        assert 0 < peak <= 60 * 1024 and not first.exists()  # the window's bound; the first left it
        assert all(len(f.read_bytes()) in {len(content(i)) for i in range(N)} for f in _overflow_files(cache.root))
    cache.limit = None  # room again: after a few hand-outs the claims succeed, shards cached whole
    for ref in refs:
        got = ref.read_bytes(cache) if output == "bytes" else Path(ref.local_path(cache)).read_bytes()
        assert got == content(_index(ref.name))
    assert cache.total_bytes > 0 and cache.info().entries > 0


def test_a_damaged_member_read_from_the_volume_is_refused_by_name(vol, tmp_path):
    pack(SRC, DEST, shard_size="24KiB")
    folder = open_packed(vol, DEST)
    ref = folder.members[5]
    shard = vol.locate(str(folder.path.joinpath(folder.manifest.shards[ref.shard].name))).path
    with open(shard, "r+b") as f:  # one byte of the member's data flipped, the shard's size kept
        f.seek(ref.member.offset + 7)
        b = f.read(1)
        f.seek(ref.member.offset + 7)
        f.write(bytes([b[0] ^ 0xFF]))
    cache = FileCache(tmp_path / "c", limit=64 * 1024, overflow_bytes=60 * 1024)  # no shard fits
    with pytest.raises(ShardError, match=ref.member.name):
        ref.read_bytes(cache)
    assert cache.total_bytes == 0


def test_shards_and_folders_evict_each_other_through_workers_within_the_limit(vol, tmp_path):
    """Unpinned between epochs (pin_seconds passed): the extraction's folders evict the cached
    shards, and then the other way round, while 2 workers read; every item right, the limit held."""
    import time

    pack(SRC, DEST, shard_size="24KiB")
    packed = sum(s.bytes for s in open_packed(vol, DEST).manifest.shards)
    cache = FileCache(tmp_path / "c", limit=packed // 2, pin_seconds=1.0)
    want = {zlib.crc32(content(i)) for i in range(N)}
    with _Sampler(cache.root) as sampler:
        for output in ("bytes", "path", "bytes"):
            ds = UCVolumeDataset(DEST, output=output, cache=cache, shuffle=True)
            got = {
                zlib.crc32(x if output == "bytes" else Path(x).read_bytes())
                for x in DataLoader(ds, batch_size=None, num_workers=2)
            }
            assert got == want
            time.sleep(1.3)  # past the pins: the next epoch may evict all of it
    assert cache.info().evictions > 0
    assert sampler.peak <= cache.limit, f"{sampler.peak} bytes on disk, limit {cache.limit}"


def test_a_folder_being_extracted_is_never_evicted_under_it(vol, tmp_path):
    """Issue 36 item 2: with pin_seconds=0 every entry not being written is evictable at once, and
    another shard's miss evicted the folder whose members were still being extracted
    (FileNotFoundError in publish_staged). A claim being written is pinned by its fetch."""
    pack(SRC, DEST, shard_size="48KiB")
    total = sum(p.stat().st_size for p in Path(vol.locate(DEST).path).glob("*.tar"))
    cache = FileCache(tmp_path / "c", limit=total // 2, pin_seconds=0)
    for _ in range(2):
        ds = UCVolumeDataset(DEST, cache=cache)
        # (pin_seconds=0 promises no path outlives the next miss: the names are what is checked)
        assert sorted(Path(p).name for p in ds) == [f"f{i:03d}.bin" for i in range(N)]


@pytest.mark.parametrize("how", ["constructor", "live"])
def test_a_lower_limit_on_a_full_cache_brings_it_down_and_bounds_the_index(vol, tmp_path, how):
    """Issue 49 item 6: a cache that read a packed folder twice without a limit, then given a limit of
    half the packed bytes and read for two more epochs, still held 4.05x the limit: every read was a
    hit, and only a miss evicted. Now a cache over its limit evicts down to it as it serves hits
    (or at once, for a limit set live), and the index's log is bounded by 1/32 of the limit."""
    from air_magics.cache.index import WAL_MIN
    from benchmarks.scenarios.soak import cache_disk_bytes

    pack(SRC, DEST, shard_size="24KiB")
    packed = sum(s.bytes for s in open_packed(vol, DEST).manifest.shards)
    root = tmp_path / "c"
    for _ in range(2):
        for _item in UCVolumeDataset(DEST, output="bytes", cache=FileCache(root, reserve=0)):
            pass
    assert FileCache(root).total_bytes >= packed  # every shard cached
    limit = packed // 2
    if how == "constructor":
        cache = FileCache(root, limit=limit, reserve=0, pin_seconds=0)
    else:
        cache = FileCache(root, reserve=0, pin_seconds=0)
        cache.info()
        cache.limit = limit
        assert cache.total_bytes <= cache.files_limit  # at once, before any read
    want = {zlib.crc32(content(i)) for i in range(N)}
    for _ in range(2):
        got = {zlib.crc32(b) for b in UCVolumeDataset(DEST, output="bytes", cache=cache)}
        assert got == want
        assert cache.total_bytes <= cache.files_limit
        assert cache_disk_bytes(root) <= limit
    wal = root / "index.sqlite-wal"
    cap = max(WAL_MIN, limit // 32)
    # SQLite checkpoints after the commit that reaches the cap, so the log passes it by that commit's
    # pages (an eviction's batch can be several); without the cap it grew to 4 MiB (32x this bound)
    assert wal.stat().st_size <= 2 * cap
