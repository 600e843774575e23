"""A cache smaller than the data: the limit holds within the overflow window, a dataset keeps a
stable resident subset (epoch 2 hits), overflow paths live for a bounded count, dead processes'
overflow folders are swept, and two processes sharing a full cache never see a wrong or missing file."""

import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from air_magics.cache import FileCache
from air_magics.data import DataLoader, UCVolumeDataset
from air_magics.errors import AirError, CacheLimitError
from air_magics.volumes import VolumeStore
from air_magics.widgets.cache_view import advice
from benchmarks.scenarios.soak import cache_disk_bytes

SIZE = 16 * 1024
WINDOW = 1 << 30  # the overflow windows' share of the limit, given: these tests are about the files' share


def content(i: int) -> bytes:
    return i.to_bytes(4, "big") * (SIZE // 4)


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.big")
    for i in range(100):
        with s.open(f"/Volumes/main/raw/big/d/f{i:03d}.bin", "wb") as f:
            f.write(content(i))
    return s


def key(i: int) -> str:
    return f"/Volumes/main/raw/big/d/f{i:03d}.bin"


def disk_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p.suffix == ".bin")


def test_limit_holds_within_the_overflow_window_even_when_everything_is_pinned(vol):
    # everything handed out within the pin window: nothing may be evicted, so misses overflow
    c = FileCache(limit=50 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600, overflow_files=8)
    for i in range(100):
        p = c.get(key(i))
        assert open(p, "rb").read() == content(i)  # every path handed out is right when handed out
        assert c.info().bytes <= 50 * SIZE
        assert disk_bytes(c.root) <= 50 * SIZE + 8 * SIZE
    info = c.info()
    assert (info.entries, info.bytes, info.evictions, info.overflows) == (50, 50 * SIZE, 0, 50)
    assert info.misses == 100 and "50 served past the limit" in repr(info)


def test_an_overflow_path_keeps_its_name_and_lives_for_the_window(vol):
    c = FileCache(limit=2 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600, overflow_files=3)
    c.get(key(0)), c.get(key(1))
    p = c.get(key(2))  # the cache is full of pinned entries: served from the overflow window
    assert Path(p).name == "f002.bin" and "overflow" in p and open(p, "rb").read() == content(2)
    assert not c.local_path(key(2)).exists()  # not added to the cache
    c.get(key(0)), c.get(key(1))  # two more hand-outs (hits): still inside the window of 3
    assert os.path.exists(p)
    c.get(key(0))
    assert not os.path.exists(p)  # three hand-outs later it is gone
    with pytest.raises(CacheLimitError, match="overflow_files=0 must be at least 1") as e:
        FileCache(overflow_files=0)
    assert isinstance(e.value, AirError)


def test_unpinned_entries_are_still_evicted_lru_first(vol):
    c = FileCache(limit=5 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=0)
    for i in range(20):
        c.get(key(i))
    info = c.info()
    assert (info.entries, info.evictions, info.overflows) == (5, 15, 0)


def epoch_hits(ds: UCVolumeDataset, loader: DataLoader, epoch: int) -> tuple[int, int]:
    ds.set_epoch(epoch)
    before = ds.cache.info()
    got = [open(p, "rb").read() for p in loader]
    assert sorted(got) == sorted(content(i) for i in range(100))  # every file, right content, once
    after = ds.cache.info()
    return after.hits - before.hits, after.misses - before.misses


@pytest.mark.parametrize("workers", [0, 2])
def test_a_cache_of_half_the_data_keeps_a_stable_half_resident(vol, workers):
    """Plain LRU over a cyclic scan evicts every file just before it is read again (0% hits in
    epoch 2); the dataset's resident subset keeps the half that fits, so epoch 2 hits that half."""
    cache = FileCache(
        limit=50 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=0
    )  # no time pins: only the resident subset protects
    ds = UCVolumeDataset("/Volumes/main/raw/big/d", shuffle=True, seed=3, cache=cache, prefetch=4)
    loader = DataLoader(ds, batch_size=None, num_workers=workers)
    hits1, misses1 = epoch_hits(ds, loader, 0)
    assert (hits1, misses1) == (0, 100)
    for epoch in (1, 2):
        hits, misses = epoch_hits(ds, loader, epoch)
        assert hits + misses == 100 and hits >= 45, (epoch, hits, misses)
        # concurrent misses of several processes may each take the last free bytes: at most one
        # file per fetching thread over the limit (documented)
        assert cache.info().bytes <= (50 + max(workers, 1) * 4) * SIZE
    lines = advice(cache.info().to_dict(), None)
    assert any("did not fit" in line and "stable" in line for line in lines), lines


def test_a_dead_process_overflow_folder_is_swept(vol):
    c = FileCache(limit=SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600)
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; from air_magics.cache import FileCache\n"
            f"c = FileCache({str(c.root)!r}, limit={SIZE + WINDOW}, overflow_bytes={WINDOW}, pin_seconds=3600)\n"
            f"c.get({key(0)!r}); p = c.get({key(1)!r}); print(p, flush=True); os._exit(0)",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,
    )
    left = Path(child.stdout.strip())
    assert left.exists() and "overflow" in str(left)  # killed without cleanup: its folder stays
    c.get(key(2))  # this process overflows too, and sweeps the dead one's folder first
    assert not left.exists()
    assert len(os.listdir(c.root / "overflow")) == 2  # this process's folder and its lock file


def _reader(root: str, order: list[int], out) -> None:
    c = FileCache(root, limit=30 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=0.2, overflow_files=4)
    bad = [i for i in order if open(c.get(key(i)), "rb").read() != content(i)]
    out.put(bad)


def test_two_processes_share_a_full_cache_without_a_wrong_file(vol):
    root = str(FileCache().root)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    orders = [list(range(100)) * 2, list(reversed(range(100))) * 2]
    procs = [ctx.Process(target=_reader, args=(root, o, out)) for o in orders]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert results == [[], []]
    assert FileCache(root).info().bytes <= 32 * SIZE  # plus at most one in-flight file per process


@pytest.mark.parametrize("damage", ["delete the cache folder", "corrupt the index"])
def test_a_cache_damaged_while_a_loader_runs_never_yields_a_wrong_file(vol, damage):
    """Mid-epoch, the cache folder is deleted or its index overwritten with garbage. Paths already
    handed out may be gone (they were deleted with the folder), but no item is ever the wrong
    bytes, and the next epoch rebuilds the cache transparently (or stops with a clear error)."""
    import shutil

    cache = FileCache(pin_seconds=0)
    ds = UCVolumeDataset("/Volumes/main/raw/big/d", cache=cache, prefetch=4)
    loader = DataLoader(ds, batch_size=None, num_workers=2)

    def epoch(damage_at: int | None) -> tuple[list[bytes], int]:
        got, gone = [], 0
        for n, p in enumerate(loader):
            if n == damage_at:
                if damage == "delete the cache folder":
                    shutil.rmtree(cache.root, ignore_errors=True)  # workers may be writing into it
                else:
                    (cache.root / "index.sqlite").write_bytes(b"not a database" * 100)
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                gone += 1  # handed out before the folder was deleted
                continue
            assert len(data) == SIZE and data == content(int.from_bytes(data[:4], "big"))  # never a wrong file
            got.append(data)
        return got, gone

    got, gone = epoch(None)
    assert (len(got), gone) == (100, 0)
    got, gone = epoch(50)
    assert len(got) + gone == 100 and len(set(got)) == len(got)
    got, gone = epoch(None)  # rebuilt: every file again, right bytes
    assert (len(got), gone) == (100, 0) and len(set(got)) == 100


def test_a_loader_at_default_depth_never_outruns_the_overflow_window():
    """Everything a DataLoader hands out ahead of the loop (worker queues, chunks, prefetch) must
    stay within the overflow window, or an overflow path is deleted before the loop opens it."""
    s = VolumeStore()
    s.create("main.raw.many")
    n = 900
    for i in range(n):
        with s.open(f"/Volumes/main/raw/many/f{i:04d}.bin", "wb") as f:
            f.write(i.to_bytes(4, "big") * 256)
    cache = FileCache(
        limit=n // 2 * 1024 + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600
    )  # half fits: the rest overflows
    ds = UCVolumeDataset("/Volumes/main/raw/many", cache=cache)  # default prefetch
    loader = DataLoader(ds, batch_size=None)  # default workers, chunking and prefetch_factor
    for _ in range(2):
        got = []
        for p in loader:
            time.sleep(0.003)  # a loop slower than its workers: their queues fill up
            with open(p, "rb") as f:
                got.append(int.from_bytes(f.read(4), "big"))
        assert sorted(got) == list(range(n))
    assert cache.info().overflows > 0


def test_the_same_file_overflowing_twice_keeps_both_hand_outs(vol):
    """The first copy's expiry used to delete the second: a path handed out one get ago vanished."""
    c = FileCache(limit=25_000 + WINDOW, overflow_bytes=WINDOW, overflow_files=4, pin_seconds=600)
    c.get(key(0))  # the one file that fits
    for i in range(1, 6):
        c.get(key(i))  # overflow
    p = c.get(key(2))  # f002 again, while its first copy is about to leave the window
    assert os.path.exists(p) and open(p, "rb").read() == content(2)
    for _ in range(3):
        c.get(key(0))  # three more hand-outs: still inside the window of 4
        assert os.path.exists(p)
    c.get(key(0))
    assert not os.path.exists(p)  # four later it is gone: the window still frees its files


def _random_reader(root: str, seed: int, out) -> None:
    import random
    from collections import deque

    rng = random.Random(seed)
    c = FileCache(root, limit=30 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=600, overflow_files=8)
    recent: deque[str] = deque(maxlen=7)  # the last 7 hand-outs: all must still be there
    vanished = wrong = 0
    for _ in range(400):
        i = rng.randrange(60)
        p = c.get(key(i))
        try:
            wrong += open(p, "rb").read() != content(i)
        except FileNotFoundError:
            vanished += 1
        recent.append(p)
        vanished += sum(not os.path.exists(q) for q in recent)
    out.put((vanished, wrong, c.info().overflows))


def test_random_gets_from_two_processes_never_lose_a_path_inside_its_window(vol):
    root = str(FileCache().root)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_random_reader, args=(root, seed, out)) for seed in (1, 2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert [r[:2] for r in results] == [(0, 0), (0, 0)], results
    assert results[0][2] > 100  # most gets overflowed: the window was exercised


def test_a_live_process_folder_is_kept_whatever_its_pid_looks_like_here(vol):
    """A process in another pid namespace (a container sharing the cache folder) has a pid that
    means nothing here: liveness is its lock on the folder, not the number in the folder's name."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid number with no process behind it
    root = FileCache().root
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from air_magics.cache import FileCache\n"
            f"c = FileCache({str(root)!r}, limit={SIZE + WINDOW}, overflow_bytes={WINDOW}, pin_seconds=3600)\n"
            f"c.get({key(0)!r}); print(c.get({key(1)!r}), flush=True); sys.stdin.readline()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    try:
        held = Path(child.stdout.readline().strip())
        folder = held.parents[4]  # overflow/<pid>-<token>/main/raw/big/d/f001.bin
        assert folder.parent == root / "overflow" and held.exists()
        # seen from another namespace: the same folder under a pid that is dead here
        forged = folder.with_name(f"{dead.pid}-{folder.name.partition('-')[2]}")
        for old, new in [
            (folder, forged),
            *[
                (p, forged.with_name(forged.name + p.name[len(folder.name) :]))
                for p in folder.parent.iterdir()
                if p.name.startswith(folder.name + ".")
            ],
        ]:
            os.rename(old, new)
        mine = FileCache(root, limit=SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600)
        mine.get(key(0)), mine.get(key(2))  # this process overflows and sweeps dead folders first
        assert (forged / held.relative_to(folder)).exists()  # its owner is alive: kept
    finally:
        child.stdin.close()
        child.wait(30)
    later = FileCache(
        root, limit=SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600
    )  # a fresh process-level window sweeps again
    later.get(key(0)), later.get(key(3))
    assert not forged.exists()  # its owner has exited: swept


@pytest.fixture
def disk16(small_fs):
    """A real 16 MiB filesystem (see conftest's ``small_fs``)."""
    return small_fs("16m")


def test_on_a_small_disk_gets_keep_working_while_the_window_turns_over(disk16):
    """Issue 36 item 1: on a 16 MiB disk (limit 2 MiB, 60 pinned 500 kB files) half the gets failed
    while the count-bounded window grew. Now the window is 1/8 of the limit, by bytes: with a limit
    that holds the files and the window, every get is served, the window's oldest files go when
    its bytes are needed, the disk stays above the reserve and the cache root within the limit."""
    import shutil

    s = VolumeStore()
    s.create("main.raw.large")
    for i in range(60):
        with s.open(f"/Volumes/main/raw/large/f{i:02d}.bin", "wb") as f:
            f.write(bytes([i]) * 500_000)
    reserve = 1 << 20
    c = FileCache(disk16 / "cache", limit="8MiB", reserve=reserve, pin_seconds=600, overflow_files=8)
    assert c.window == 1 << 20  # 1/8 of the limit: two of these files at a time
    peak = 0
    for i in range(60):
        p = c.get(f"/Volumes/main/raw/large/f{i:02d}.bin")  # everything pinned: past 14 files, the window
        assert open(p, "rb").read() == bytes([i]) * 500_000
        assert shutil.disk_usage(disk16).free >= reserve, i
        peak = max(peak, cache_disk_bytes(c.root))
    assert c.info().overflows >= 40 and c.info().bytes <= c.files_limit
    assert peak <= c.limit, f"{peak} bytes under the cache root, limit {c.limit}"


def test_an_item_larger_than_the_window_is_refused_naming_it_and_the_setting(disk16):
    s = VolumeStore()
    s.create("main.raw.large")
    for i in range(5):
        with s.open(f"/Volumes/main/raw/large/f{i:02d}.bin", "wb") as f:
            f.write(bytes([i]) * 500_000)
    c = FileCache(disk16 / "cache", limit="2MiB", pin_seconds=600)  # 1.75 MiB for files, 256 KiB window
    for i in range(3):
        c.get(f"/Volumes/main/raw/large/f{i:02d}.bin")  # three fit in the files' share
    with pytest.raises(CacheLimitError) as e:
        c.get("/Volumes/main/raw/large/f03.bin")  # the files are pinned, and it can never fit the window
    msg = str(e.value)
    assert "/Volumes/main/raw/large/f03.bin" in msg and "488.3 KiB" in msg and "256.0 KiB" in msg
    assert "AIR_CACHE_LIMIT" in msg and "cache_limit" in msg
    with pytest.raises(CacheLimitError, match=r"f04\.bin is 488\.3 KiB .*AIR_CACHE_LIMIT"):
        FileCache(disk16 / "c2", limit="500KiB").get("/Volumes/main/raw/large/f04.bin")  # never fits at all


def test_overflow_bytes_bounds_the_window(vol):
    """The windows' bound, by bytes: the oldest files go when its bytes are needed (once handed out
    ``overflow_files // 8`` hand-outs ago); while every file in it is still in flight it goes past
    the bound rather than fail the loop."""
    c = FileCache(limit=4 * SIZE, pin_seconds=600, overflow_bytes=3 * SIZE, overflow_files=8)  # keep 1
    assert (c.window, c.files_limit) == (3 * SIZE, SIZE)
    for i in range(12):
        assert open(c.get(key(i)), "rb").read() == content(i)  # one in the files' share, the rest turn over
        assert c.window_bytes <= 3 * SIZE, i
    assert c.info().overflows == 11
    wide = FileCache(c.root, limit=4 * SIZE, pin_seconds=600, overflow_bytes=3 * SIZE)  # keep 128: all in flight
    for i in range(12, 17):
        assert open(wide.get(key(i)), "rb").read() == content(i)
    assert wide.window_bytes > 3 * SIZE  # past the bound, never a failed get


def test_a_path_a_worker_hands_out_past_a_full_cache_stays_until_the_loop_opens_it(tmp_path):
    """Issue 49 item 7: a DataLoader worker's messages wait in the loader's queue (prefetch_factor
    messages of up to 128 items, and the one being made), but a file in the worker's overflow window
    was released after 128 more hand-outs once the window's bytes were needed: the loop then opened a
    path that was gone (FileNotFoundError). The worker's window now keeps a file as long as the
    queue may hold it (``FileCache.hold_ahead``)."""
    import time as _time

    from air_magics.data import DataLoader, UCVolumeDataset

    s = VolumeStore()
    s.create("main.raw.ahead")
    n = 900
    for i in range(n):
        with s.open(f"/Volumes/main/raw/ahead/f{i:04d}.bin", "wb") as f:
            f.write(i.to_bytes(4, "big") * 1024)
    # files' share: 16 files; the windows: 32 files, far fewer than a worker keeps queued
    cache = FileCache(tmp_path / "c", limit=48 * 4096, overflow_bytes=32 * 4096, pin_seconds=600)
    ds = UCVolumeDataset("/Volumes/main/raw/ahead", cache=cache)
    seen = 0
    for i, p in enumerate(DataLoader(ds, batch_size=None, num_workers=2)):
        if i < 300:
            _time.sleep(0.002)  # a slow start: the workers fill the loader's queue
        with open(p, "rb") as f:
            seen += len(f.read()) == 4096
    assert seen == n
