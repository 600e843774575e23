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

SIZE = 16 * 1024


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
    c = FileCache(limit=50 * SIZE, pin_seconds=3600, overflow_files=8)
    for i in range(100):
        p = c.get(key(i))
        assert open(p, "rb").read() == content(i)  # every path handed out is right when handed out
        assert c.info().bytes <= 50 * SIZE
        assert disk_bytes(c.root) <= 50 * SIZE + 8 * SIZE
    info = c.info()
    assert (info.entries, info.bytes, info.evictions, info.overflows) == (50, 50 * SIZE, 0, 50)
    assert info.misses == 100 and "50 served past the limit" in repr(info)


def test_an_overflow_path_keeps_its_name_and_lives_for_the_window(vol):
    c = FileCache(limit=2 * SIZE, pin_seconds=3600, overflow_files=3)
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
    c = FileCache(limit=5 * SIZE, pin_seconds=0)
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
    cache = FileCache(limit=50 * SIZE, pin_seconds=0)  # no time pins: only the resident subset protects
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
    c = FileCache(limit=SIZE, pin_seconds=3600)
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os; from air_magics.cache import FileCache\n"
            f"c = FileCache({str(c.root)!r}, limit={SIZE}, pin_seconds=3600)\n"
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
    assert len(os.listdir(c.root / "overflow")) == 1


def _reader(root: str, order: list[int], out) -> None:
    c = FileCache(root, limit=30 * SIZE, pin_seconds=0.2, overflow_files=4)
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
                    shutil.rmtree(cache.root)
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
    cache = FileCache(limit=n // 2 * 1024, pin_seconds=3600)  # half fits: the rest overflows
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
