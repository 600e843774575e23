"""FileCache: validation, eviction bounds, pins, orphans, many processes, faults on a FUSE volume,
a damaged index, index entries naming foreign files, and a full disk (a real 2 MiB tmpfs)."""

import errno
import multiprocessing as mp
import os
import pickle
import re
import sqlite3
import time
import warnings

import pytest

from air_magics.cache import FileCache
from air_magics.data import UCVolumeDataset
from air_magics.errors import AirError, CacheDiskFullError, CacheLimitError, SettingError, VolumeNotFoundError
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
    assert (info.hits, info.misses, info.bytes_hit, info.bytes_fetched, info.entries, info.bytes) == (
        1,
        1,
        1000,
        1000,
        1,
        1000,
    )
    assert info.hit_rate == 0.5 and "hit rate 50.0%" in repr(info)
    # the miss's progress snapshot is made on the process's flusher thread, moments later
    deadline = time.monotonic() + 5
    while (read_status("cache") or {}).get("misses") != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
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
    assert (c.window, c.files_limit) == (625, 4375)  # one byte budget: 1/8 of it is the overflow window
    for i in range(20):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
        assert c.info().bytes <= 4375
    info = c.info()
    assert info.entries == 4 and info.evictions == 16
    kept = sorted(os.listdir(c.local_path("/Volumes/main/raw/img")))
    assert kept == [f"f{i:02d}.bin" for i in range(16, 20)]


def test_a_limit_set_on_a_live_cache_governs_eviction_too(vol):
    """``cache.limit = ...`` after construction: the next misses evict down to the new limit (the
    eviction and the overflow window follow it, not only the claim), also given as a string."""
    c = FileCache(pin_seconds=0)
    for i in range(10):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    assert c.info().bytes == 10_000
    c.limit = "4000B"
    assert (c.limit, c.files_limit) == (4000, 3500)  # the files' share: the limit less its overflow window
    for i in range(10, 14):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
        assert c.info().bytes <= 3500
    info = c.info()
    assert info.overflows == 0 and info.evictions >= 11  # room was made by evicting, not by the window
    kept = sorted(os.listdir(c.local_path("/Volumes/main/raw/img")))
    assert kept == [f"f{i:02d}.bin" for i in range(11, 14)]
    clone = pickle.loads(pickle.dumps(c))  # a DataLoader worker's copy keeps the new limit
    assert clone.limit == 4000
    c.limit = None  # no limit again: nothing evicted for the next files
    for i in range(14, 20):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    assert c.info().bytes == 9_000
    with pytest.raises(CacheLimitError, match="positive"):
        c.limit = 0
    with pytest.raises(ValueError, match="not a size"):
        c.limit = "lots"
    assert c.limit is None  # a refused value changes nothing


def test_pinned_files_are_not_evicted(vol):
    c = FileCache(limit=6000, overflow_bytes=3000, pin_seconds=60)  # 3,000 for files, 3,000 for the window
    paths = [c.get(f"/Volumes/main/raw/img/f{i:02d}.bin") for i in range(5)]
    assert all(os.path.exists(p) for p in paths)  # never pulls a handed-out file...
    info = c.info()  # ...and never grows past the limit: the last two were served from the overflow window
    assert (info.evictions, info.bytes, info.overflows) == (0, 3000, 2)


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
    report = c.clear(force=True)
    assert (report.removed, report.kept, report.bytes) == (1, 0, 1000)
    assert not os.path.exists(p) and c.info().entries == 0 and c.info().bytes == 0
    c.clear(reset_stats=True)
    assert c.info().hits == 0


def _age(cache, key, seconds):
    """Pretend *key* was last used *seconds* earlier than it was (the index is a plain SQLite file)."""
    cache.flush_hits()  # this process's rows (written behind its fetches) are in the index first
    db = sqlite3.connect(cache.root / "index.sqlite")
    with db:
        db.execute("UPDATE entries SET last_access = last_access - ? WHERE key = ?", (seconds, key))
    db.close()


def test_clear_keeps_what_was_just_handed_out(vol):
    c = FileCache(pin_seconds=60)
    old, new = c.get("/Volumes/main/raw/img/f00.bin"), c.get("/Volumes/main/raw/img/f01.bin")
    _age(c, "/Volumes/main/raw/img/f00.bin", 3600)
    report = c.clear()
    assert (report.removed, report.kept, report.bytes) == (1, 1, 1000)
    assert not os.path.exists(old) and open(new, "rb").read() == b"\x01" * 1000  # the training loop's path
    assert "kept 1 in use" in str(report) and "force=True" in str(report)
    assert (c.info().entries, c.info().bytes) == (1, 1000)
    assert c.get("/Volumes/main/raw/img/f01.bin") == new and c.info().hits == 1  # still a valid hit
    report = c.clear(force=True)
    assert (report.removed, report.kept) == (1, 0) and not os.path.exists(new) and c.info().bytes == 0


def test_never_deletes_a_file_outside_its_files_folder(vol, tmp_path):
    """Index rows are data: one naming a foreign file, or reaching out of files/ through a link,
    is dropped from the index but its file is never unlinked, by clear or by eviction."""
    c = FileCache(pin_seconds=0, limit=2500)
    c.get("/Volumes/main/raw/img/f00.bin")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    elsewhere = tmp_path / "elsewhere" / "img"
    elsewhere.mkdir(parents=True)
    (elsewhere / "f05.bin").write_text("keep me too")
    (c.root / "files" / "main" / "linked").symlink_to(tmp_path / "elsewhere")  # a folder swapped for a link
    db = sqlite3.connect(c.root / "index.sqlite")
    with db:
        db.executemany(
            "INSERT INTO entries(key, local, size, mtime, last_access) VALUES (?, ?, ?, ?, 0)",
            [
                ("/Volumes/main/raw/img/f01.bin", str(victim), 1000, 0.0),
                ("/Volumes/main/linked/img/f05.bin", str(c.root / "files/main/linked/img/f05.bin"), 1000, 0.0),
            ],
        )
        db.execute("UPDATE counters SET value = value + 2000 WHERE name = 'total_bytes'")
    db.close()
    c.get("/Volumes/main/raw/img/f02.bin")  # over the limit: evicts the oldest rows, the crafted one first
    assert victim.read_text() == "keep me" and c.info().evictions >= 1
    report = c.clear()
    assert report.removed == 1 and c.info().entries == 0  # f02; the linked row is only dropped
    assert victim.read_text() == "keep me" and (elsewhere / "f05.bin").read_text() == "keep me too"


def test_damaged_index_is_moved_aside_and_rebuilt(vol, tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    garbage = b"this is not a database " * 200
    (root / "index.sqlite").write_bytes(garbage)
    with pytest.warns(RuntimeWarning, match=r"index\.sqlite is damaged .*moved it to .*index\.sqlite\.corrupt-"):
        p = FileCache(root).get("/Volumes/main/raw/img/f04.bin")
    assert open(p, "rb").read() == b"\x04" * 1000
    (aside,) = root.glob("index.sqlite.corrupt-*")
    assert aside.read_bytes() == garbage  # kept for a post-mortem
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rebuilt index opens quietly in a new process state
        again = FileCache(root)
        assert again.info().entries == 1 and again.get("/Volumes/main/raw/img/f04.bin") == p


def test_clear_truncates_the_write_ahead_log(vol):
    c = FileCache(pin_seconds=0)
    for i in range(10):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    wal = c.root / "index.sqlite-wal"
    assert wal.stat().st_size > 0
    c.clear()
    assert wal.stat().st_size == 0


@pytest.fixture
def small_disk(small_fs):
    """A real 2 MiB filesystem (see conftest's ``small_fs``)."""
    return small_fs("2m")


def _fill(path):
    """Write zeros until the disk refuses: afterwards it has no free page left."""
    with open(path, "wb", buffering=0) as f:
        with pytest.raises(OSError) as exc:
            while True:
                f.write(b"\0" * 4096)
    assert exc.value.errno == errno.ENOSPC


def _assert_clear_disk_full(exc, root):
    msg = str(exc)
    assert isinstance(exc, OSError) and exc.errno == errno.ENOSPC
    assert str(root) in msg and "free" in msg and "cannot rollback" not in msg
    assert "AIR_CACHE_RESERVE" in msg and "AIR_CACHE_DIR" in msg and "clear" in msg


def test_a_full_disk_during_a_fetch_is_a_clear_error(vol, small_disk):
    for i in range(5):
        with vol.open(f"/Volumes/main/raw/img/big{i}.bin", "wb") as f:
            f.write(bytes([i]) * 600_000)
    c = FileCache(small_disk / "cache", reserve=0, pin_seconds=60)  # every file pinned: nothing to evict
    with pytest.raises(CacheDiskFullError) as exc:
        for i in range(5):
            c.get(f"/Volumes/main/raw/img/big{i}.bin")
    _assert_clear_disk_full(exc.value, small_disk / "cache")
    assert "while fetching /Volumes/main/raw/img/big" in str(exc.value)
    c.clear(force=True)  # the way out the message names works
    assert open(c.get("/Volumes/main/raw/img/big4.bin"), "rb").read() == b"\x04" * 600_000


def test_a_full_disk_under_the_index_is_a_clear_error(vol, small_disk):
    """SQLite rolls back by itself on SQLITE_FULL; the error must say "disk full", not "cannot rollback"."""
    c = FileCache(small_disk / "cache", reserve=0, pin_seconds=60)
    p = c.get("/Volumes/main/raw/img/f01.bin")
    c.clear()  # keeps the pinned file, and truncates the WAL: the next write must grow it
    _fill(small_disk / "filler")
    other = FileCache(small_disk / "cache", reserve=0, pin_seconds=60)  # as another process: nothing known locally
    with pytest.raises(CacheDiskFullError) as exc:
        other.get("/Volumes/main/raw/img/f01.bin")  # its first hit writes (LRU time, counters)
    _assert_clear_disk_full(exc.value, small_disk / "cache")
    assert isinstance(exc.value.__cause__, sqlite3.OperationalError)
    os.unlink(small_disk / "filler")
    assert other.get("/Volumes/main/raw/img/f01.bin") == p and other.info().hits == 1


def test_the_index_log_room_is_scaled_to_a_small_disk(vol, small_disk):
    """On a 2 MiB disk the WAL's room used to be 4 MiB, counted against the reserve: every fetch
    evicted everything else. Scaled to the space left, the cache keeps what fits."""
    c = FileCache(small_disk / "cache", reserve=0, pin_seconds=0)
    for i in range(3):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    assert (c.info().entries, c.info().evictions) == (3, 0)


def test_the_index_log_is_checkpointed_before_it_fills_a_small_disk(vol, small_disk):
    """It grew by about 16 KiB per fetched file until 4 MiB: on a small disk it took about as much
    room as the files and filled the disk at half the files that fit."""
    for i in range(120):
        with vol.open(f"/Volumes/main/raw/img/m{i:03d}.bin", "wb") as f:
            f.write(bytes([i]) * 20_000)
    c = FileCache(small_disk / "cache", reserve=0, pin_seconds=600)  # every file pinned: nothing to evict
    wal, biggest, fetched = c.root / "index.sqlite-wal", 0, 0
    with pytest.raises(CacheDiskFullError):
        for i in range(120):
            c.get(f"/Volumes/main/raw/img/m{i:03d}.bin")
            fetched += 1
            biggest = max(biggest, wal.stat().st_size)
    assert biggest <= 128 << 10, biggest  # a small share of a 2 MiB disk
    assert fetched >= 85, fetched  # 2 MiB holds about 100 such files; the log no longer takes half


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
    with slowfs.mounted(
        backing, tmp_path / "mnt", op_latency_ms=2, fail_rate=0.3, fail_ops="open,read", fail_times=2, direct_io=True
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        ds = UCVolumeDataset("/Volumes/main/raw/img")
        got = sorted(open(p, "rb").read() for p in ds)
        assert got == [bytes([i]) * 4096 for i in range(40)]  # transient faults retried, content intact
    bad = "main/raw/img/f07.bin"
    with slowfs.mounted(
        backing, tmp_path / "mnt2", op_latency_ms=1, fail_rate=1, fail_ops="open", fail_paths=bad, fail_times=1000
    ):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt2"))
        FileCache().clear(force=True)  # the files were just read: pinned, so force
        with pytest.raises(OSError, match="Input/output error"):
            list(UCVolumeDataset("/Volumes/main/raw/img", cache=FileCache(retries=1)))
        skipping = UCVolumeDataset("/Volumes/main/raw/img", on_error="skip", cache=FileCache(retries=1))
        assert len(list(skipping)) == 39
        assert [s.path for s in skipping.skipped] == ["/Volumes/main/raw/img/f07.bin"]


def test_a_file_with_a_244_character_name_is_cached_and_streamed(vol):
    """Its temp name used to pass the 255-byte NAME_MAX: the cache and a dataset over it failed."""
    name = "n" * 240 + ".bin"
    vol.create("main.raw.long")
    with vol.open(f"/Volumes/main/raw/long/{name}", "wb") as f:
        f.write(b"y" * 3000)
    with vol.open("/Volumes/main/raw/long/short.bin", "wb") as f:
        f.write(b"z" * 10)
    c = FileCache(pin_seconds=0)
    p = c.get(f"/Volumes/main/raw/long/{name}")
    assert os.path.basename(p) == name and open(p, "rb").read() == b"y" * 3000
    c.clear(force=True)
    got = sorted(open(p, "rb").read() for p in UCVolumeDataset("/Volumes/main/raw/long", cache=c, store=vol))
    assert got == [b"y" * 3000, b"z" * 10]


@pytest.mark.parametrize("value", ["1e400", "inf", float("inf"), float("nan")])
def test_a_limit_or_reserve_of_inf_or_nan_is_refused_in_one_clear_line(vol, value, monkeypatch):
    """They used to raise bare OverflowError/ValueError tracebacks, and every FileCache() failed so
    while AIR_CACHE_LIMIT held one."""
    from traitlets import TraitError

    from air_magics.settings import AirConfig

    for kw in ("limit", "reserve"):
        with pytest.raises(AirError, match=rf"cache {kw} {re.escape(repr(value))} is not a .*10GiB") as exc:
            FileCache(**{kw: value})
        assert isinstance(exc.value, ValueError)
    for env in ("AIR_CACHE_LIMIT", "AIR_CACHE_RESERVE"):
        monkeypatch.setenv(env, str(value))
        with pytest.raises(SettingError, match=rf"{env}={re.escape(repr(str(value)))} is not a size: .*10GiB"):
            FileCache()
        monkeypatch.delenv(env)
    FileCache()  # unset again: fine
    cfg = AirConfig()
    with pytest.raises(TraitError, match=r"cache_limit = .* is not a size"):
        cfg.cache_limit = value  # %config AirMagics.cache_limit = ...
    assert cfg.cache_limit is None  # refused, not kept


def _count_disk_checks(monkeypatch):
    import shutil
    import types

    from air_magics.cache import evict

    calls = []  # the eviction's own checks (the module's shutil, counted; others use the real one)
    counted = types.SimpleNamespace(disk_usage=lambda p: calls.append(p) or shutil.disk_usage(p), rmtree=shutil.rmtree)
    monkeypatch.setattr(evict, "shutil", counted)
    return calls


def test_misses_far_from_the_reserve_skip_the_disk_check(vol, tmp_path, monkeypatch):
    """A cold miss used to take a statvfs, a stat of the index's log and the index's lock before its
    copy; with no byte limit and the disk far above the reserve, one check serves a second of misses."""
    from air_magics.cache import evict

    calls = _count_disk_checks(monkeypatch)
    # "far" is AMPLE (2 GiB) above the reserve; a host disk may have less free than that, and then
    # every miss rightly checks: the rule is what is tested here, not the host's free space
    monkeypatch.setattr(evict, "AMPLE", 16 << 20)
    c = FileCache(tmp_path / "cache", reserve=0)
    for i in range(10):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    assert c.info().misses == 10
    assert 1 <= len(calls) <= 2  # (a second one if the loop took over REMEASURE seconds)


def test_misses_near_the_reserve_check_the_disk_each_time(vol, small_disk, monkeypatch):
    calls = _count_disk_checks(monkeypatch)
    c = FileCache(small_disk / "cache", reserve=0, pin_seconds=0)
    for i in range(3):
        c.get(f"/Volumes/main/raw/img/f{i:02d}.bin")
    assert len(calls) >= 3  # a 2 MiB disk is never "far" from running out


def test_a_cache_folder_removed_behind_its_back_is_made_again(vol, tmp_path):
    """Misses keep their folders open (verified once per process); a folder removed since (by hand,
    or a clear) is opened and made again, not written through a stale descriptor."""
    import shutil

    c = FileCache(tmp_path / "cache")
    first = c.get("/Volumes/main/raw/img/f00.bin")
    shutil.rmtree(os.path.dirname(first))
    c.clear(force=True)
    again = c.get("/Volumes/main/raw/img/f01.bin")
    assert os.path.dirname(again) == os.path.dirname(first)
    assert open(again, "rb").read() == bytes([1]) * 1000


def test_an_index_row_that_cannot_land_behind_its_fetch_takes_the_file_and_fails_the_next_fetch(vol, small_disk):
    """A fetch returns once its file is in place; its index row is written behind it (one thread
    per process, many rows per transaction). When that write fails (a real full disk: the copy took
    the last free pages, the index's log needs more), the file is removed, so nothing sits in the
    cache uncounted, and the next fetch raises the error naming the file."""
    for name in ("a", "b"):
        with vol.open(f"/Volumes/main/raw/img/{name}.bin", "wb") as f:
            f.write(bytes([ord(name)]) * 8192)  # two pages of the tmpfs
    c = FileCache(small_disk / "cache", reserve=0, pin_seconds=60)
    c.get("/Volumes/main/raw/img/f01.bin")  # the index and its log exist ...
    c.clear(force=True)  # ... and the log is truncated: the next row must grow it
    fillers, i = [], 0
    while True:  # the disk filled page by page, then exactly the new file's two pages freed
        path = small_disk / f"filler{i}"
        try:
            with open(path, "wb", buffering=0) as f:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            path.unlink(missing_ok=True)
            break
        fillers.append(path)
        i += 1
    for path in fillers[-2:]:
        path.unlink()
    local = c.get("/Volumes/main/raw/img/a.bin")  # the copy fits; its row cannot
    deadline = time.monotonic() + 10
    while os.path.exists(local) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not os.path.exists(local)  # taken back: the index never counted it
    with pytest.raises(CacheDiskFullError) as exc:
        c.get("/Volumes/main/raw/img/b.bin")
    _assert_clear_disk_full(exc.value, small_disk / "cache")
    assert "while indexing /Volumes/main/raw/img/a.bin" in str(exc.value)
    for path in fillers[:-2]:
        path.unlink()
    again = c.get("/Volumes/main/raw/img/a.bin")  # the way out: room again, and the error was reported once
    assert open(again, "rb").read() == b"a" * 8192
    assert c.info().entries == 1 and not c.check().findings
