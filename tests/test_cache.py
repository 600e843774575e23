"""FileCache: validation, eviction bounds, pins, orphans, many processes, faults on a FUSE volume."""
import multiprocessing as mp
import os
import pickle
import time

import pytest

from air_magics.cache import FileCache
from air_magics.data import UCVolumeDataset
from air_magics.errors import CacheLimitError, VolumeNotFoundError
from air_magics.status import read_status
from air_magics.volumes import VolumeStore


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(20):
        with s.open(f"/Volumes/main/raw/img/f{i:02d}.bin", "wb") as f:
            f.write(bytes([i]) * 1000)
    return s


def src(store, i):
    return store.locate(f"/Volumes/main/raw/img/f{i:02d}.bin").path


def test_hit_miss_and_stats(vol):
    c = FileCache()
    p = c.get("/Volumes/main/raw/img/f01.bin")
    assert open(p, "rb").read() == b"\x01" * 1000
    assert c.get("/Volumes/main/raw/img/f01.bin") == p
    info = c.info()
    assert (info.hits, info.misses, info.bytes_hit, info.bytes_fetched, info.entries, info.bytes) == (1, 1, 1000, 1000, 1, 1000)
    assert info.hit_rate == 0.5 and "hit rate 50.0%" in repr(info)
    assert read_status("cache")["misses"] == 1


def test_changed_source_is_never_served_stale(vol):
    c = FileCache()
    p = c.get("/Volumes/main/raw/img/f02.bin")
    with open(src(vol, 2), "wb") as f:  # same size, new content, new mtime
        f.write(b"Z" * 1000)
    os.utime(src(vol, 2), (time.time() + 10, time.time() + 10))
    assert open(c.get("/Volumes/main/raw/img/f02.bin"), "rb").read() == b"Z" * 1000
    assert c.info().misses == 2
    os.unlink(p)  # a cached file removed behind the cache's back is fetched again
    assert open(c.get("/Volumes/main/raw/img/f02.bin"), "rb").read() == b"Z" * 1000


def test_eviction_keeps_under_limit_lru_first(vol):
    c = FileCache(limit=5000, pin_seconds=0)
    for i in range(20):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
        assert c.info().bytes <= 5000
    info = c.info()
    assert info.entries == 5 and info.evictions == 15
    kept = sorted(os.listdir(c.local_path("/Volumes/main/raw/img")))
    assert kept == [f"f{i:02d}.bin" for i in range(15, 20)]


def test_pinned_files_are_not_evicted(vol):
    c = FileCache(limit=3000, pin_seconds=60)
    paths = [c.get(f"/Volumes/main/raw/img/f{i:02d}.bin") for i in range(5)]
    assert all(os.path.exists(p) for p in paths)  # over the limit rather than pull a handed-out file
    assert c.info().evictions == 0


def test_file_only_left_in_cache_is_never_evicted(vol):
    c = FileCache(limit=3000, pin_seconds=0)
    p0 = c.get("/Volumes/main/raw/img/f00.bin")
    os.unlink(src(vol, 0))  # the source is gone: the cached copy is the last one
    for i in range(1, 8):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    assert os.path.exists(p0)


def test_limit_smaller_than_a_file(vol):
    with pytest.raises(CacheLimitError, match="raise the limit"):
        FileCache(limit="500B").get("/Volumes/main/raw/img/f00.bin")
    with pytest.raises(CacheLimitError, match="positive"):
        FileCache(limit=0)
    with pytest.raises(ValueError, match="not a size"):
        FileCache(limit="lots")
    with pytest.raises(VolumeNotFoundError):
        FileCache().get("/Volumes/main/raw/img/none.bin")


def test_clear_and_pickle(vol):
    c = FileCache()
    p = c.get("/Volumes/main/raw/img/f03.bin")
    c2 = pickle.loads(pickle.dumps(c))
    assert c2.get("/Volumes/main/raw/img/f03.bin") == p and c2.info().hits == 1
    assert c.clear() == 1 and not os.path.exists(p) and c.info().entries == 0
    c.clear(reset_stats=True)
    assert c.info().hits == 0


def _fetch_all(args):
    cache, n = args
    for i in range(n):
        cache.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    return True


def test_two_processes_share_one_cache_and_fetch_once(vol):
    cache = FileCache()
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.map(_fetch_all, [(cache, 20), (cache, 20)]) == [True, True]
    info = cache.info()
    assert info.misses == 20 and info.hits == 20  # each file fetched once, the other process hit it
    assert info.entries == 20 and info.bytes == 20_000


@pytest.mark.fuse
def test_faults_on_a_fuse_volume(slowfs, tmp_path, monkeypatch):
    backing = tmp_path / "backing"
    d = backing / "main" / "raw" / "img"
    d.mkdir(parents=True)
    for i in range(40):
        (d / f"f{i:02d}.bin").write_bytes(bytes([i]) * 4096)
    with slowfs.mounted(backing, tmp_path / "mnt", op_latency_ms=2, fail_rate=0.3, fail_ops="open,read",
                        fail_times=2, direct_io=True):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        ds = UCVolumeDataset("/Volumes/main/raw/img")
        got = sorted(open(p, "rb").read() for p in ds)
        assert got == [bytes([i]) * 4096 for i in range(40)]  # transient faults retried, content intact
    bad = "main/raw/img/f07.bin"
    with slowfs.mounted(backing, tmp_path / "mnt2", op_latency_ms=1, fail_rate=1, fail_ops="open", fail_paths=bad,
                        fail_times=1000):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt2"))
        FileCache().clear()
        with pytest.raises(OSError, match="Input/output error"):
            list(UCVolumeDataset("/Volumes/main/raw/img", cache=FileCache(retries=1)))
        skipping = UCVolumeDataset("/Volumes/main/raw/img", on_error="skip", cache=FileCache(retries=1))
        assert len(list(skipping)) == 39
        assert [s.path for s in skipping.skipped] == ["/Volumes/main/raw/img/f07.bin"]
