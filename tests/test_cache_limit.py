"""The cache's byte limit holds exactly under concurrent fetches: room is claimed in the same index
transaction that checks the limit, so prefetch threads in two processes never take the cache past
it (what does not fit goes to the bounded overflow window, which is not the cache)."""

import multiprocessing as mp
import os
import threading
import time
from pathlib import Path

from air_magics.cache import FileCache
from air_magics.data import UCVolumeDataset
from air_magics.volumes import VolumeStore

SIZE = 64 * 1024
FILES = 120
LIMIT = FILES // 2 * SIZE  # half the data fits


def _seed() -> None:
    s = VolumeStore()
    s.create("main.raw.lim")
    for i in range(FILES):
        with s.open(f"/Volumes/main/raw/lim/d/f{i:03d}.bin", "wb") as f:
            f.write(i.to_bytes(4, "big") * (SIZE // 4))


def _epochs(root: str, seed: int) -> int:
    cache = FileCache(root, limit=LIMIT, pin_seconds=0.5)
    ds = UCVolumeDataset("/Volumes/main/raw/lim/d", cache=cache, prefetch=16, shuffle=True, seed=seed)
    n = 0
    for epoch in range(3):
        ds.set_epoch(epoch)
        for p in ds:
            with open(p, "rb") as f:
                n += len(f.read()) == SIZE
    return n


def _files_bytes(root: Path) -> int:
    """Bytes of the cache's own files on disk (temp files of fetches under way included)."""
    total = 0
    for dirpath, _, names in os.walk(root / "files"):
        for name in names:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                pass
    return total


def test_two_processes_with_prefetch_never_take_the_cache_past_its_limit(tmp_path):
    _seed()
    root = tmp_path / "cache"
    seen_index, seen_disk, stop = [], [], threading.Event()
    FileCache(root, limit=LIMIT).info()  # the index exists before the sampler reads it

    cache = FileCache(root, limit=LIMIT)  # made and opened here: no lock of it is held when the pool forks
    cache.info()

    def sample() -> None:
        while not stop.is_set():
            seen_index.append(cache.total_bytes)
            seen_disk.append(_files_bytes(root))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with mp.get_context("fork").Pool(2) as pool:
            counts = pool.starmap(_epochs, [(str(root), 1), (str(root), 2)])
    finally:
        stop.set()
        sampler.join()
    assert counts == [3 * FILES, 3 * FILES]  # every item read, right size, in both processes
    assert len(seen_index) > 20 and max(seen_index) > LIMIT // 2  # the sampler saw the cache fill up
    assert max(seen_index) <= LIMIT, f"index counted {max(seen_index)} bytes over a limit of {LIMIT}"
    assert max(seen_disk) <= LIMIT, f"{max(seen_disk)} bytes on disk over a limit of {LIMIT}"
    info = FileCache(root, limit=LIMIT).info()
    assert info.overflows > 0  # the rest was served past the cache, not into it
