"""``UCVolumeDataset(output=...)``: paths (the reference's behaviour), bytes or file objects, over a
raw folder and over a packed one (members read from the cached shard by offset: no file each)."""

import io
import os
import sys
import time
from pathlib import Path

import pytest
from _seed import seeded_volume

from air_magics.cache import FileCache
from air_magics.data import DataLoader, UCVolumeDataset
from air_magics.errors import DatasetError
from air_magics.shards import pack

SRC, DEST = "/Volumes/main/raw/out/src", "/Volumes/main/raw/out/packed"
N = 40


def content(i: int) -> bytes:
    return f"file {i:03d} ".encode() * (50 + i)


@pytest.fixture
def vol():
    return seeded_volume("main.raw.out", {f"{SRC}/c{i % 4}/f{i:03d}.bin": content(i) for i in range(N)})


def _files_under(root: Path) -> int:
    """Files under *root* but fetch locks (a cached shard's ``.lock`` sidecar)."""
    return sum(len([n for n in names if not n.endswith(".lock")]) for _, _, names in os.walk(root))


@pytest.mark.parametrize("folder", [SRC, DEST], ids=["raw", "packed"])
@pytest.mark.parametrize("output", ["bytes", "file"])
def test_every_item_is_its_file_content_cold_and_warm(vol, tmp_path, folder, output):
    if folder == DEST:
        pack(SRC, DEST, shard_size="4KiB")
    cache = FileCache(tmp_path / "c")
    ds = UCVolumeDataset(folder, output=output, cache=cache, shuffle=True)
    want = sorted(content(i) for i in range(N))
    for _epoch in range(2):  # cold, then warm (served inline from the cache)
        items = list(ds)
        if output == "file":
            assert all(isinstance(f, io.IOBase) for f in items)
            got = []
            for f in items:
                with f:
                    got.append(f.read())
        else:
            got = items
        assert sorted(got) == want
    if folder == DEST:  # read by offset: the cache holds the shards, no extracted file per member
        # (a shard's members are served as they arrive: the epoch can end before its fetch has
        # renamed it into place and recorded its entry, on a thread of the reader's own)
        deadline = time.monotonic() + 30
        while _files_under(cache.root / "files") != cache.info().entries and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _files_under(cache.root / "files") == cache.info().entries < N


@pytest.mark.parametrize("output", ["path", "bytes", "file"])
def test_a_local_folder_read_in_place_gives_every_output(tmp_path, output):
    """A local folder's files are served where they lie (no cache copy) in each output; its first
    warm item with ``output="file"`` failed (the in-place file had no ``name``)."""
    folder = tmp_path / "local"
    for i in range(5):
        (folder / f"f{i}.bin").parent.mkdir(exist_ok=True)
        (folder / f"f{i}.bin").write_bytes(content(i))
    items = list(UCVolumeDataset(str(folder), output=output, cache=FileCache(tmp_path / "c")))
    if output == "path":
        assert sorted(items) == [str(folder / f"f{i}.bin") for i in range(5)]
        return
    if output == "file":
        assert sorted(f.name.rsplit("/", 1)[-1] for f in items) == [f"f{i}.bin" for i in range(5)]
        items = [f.read() for f in items]
    assert sorted(items) == sorted(content(i) for i in range(5))


_OPENED: list[str] | None = None  # paths opened while a test listens (see _listen)


def _listen(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str):
        _OPENED.append(args[0])


sys.addaudithook(_listen)  # (a hook cannot be removed: it records only while _OPENED is a list)


@pytest.mark.parametrize("limits", [{}, {"limit": "16KiB", "overflow_bytes": "8KiB"}], ids=["no-limit", "overflowing"])
def test_bytes_over_a_raw_folder_read_each_file_once(vol, tmp_path, limits):
    """A cold epoch yields the bytes its fetch read from the source: the cached copy (or the
    overflow window's) is written, never read back; warm, the cached copy is read once."""
    global _OPENED
    cache = FileCache(tmp_path / "c", **limits)
    ds = UCVolumeDataset(SRC, output="bytes", cache=cache, shuffle=True)
    want = sorted(content(i) for i in range(N))
    for epoch in range(2):
        _OPENED = []
        try:
            got = sorted(ds)
        finally:
            opened, _OPENED = _OPENED, None
        assert got == want
        copies = [p for p in opened if p.startswith(str(cache.root)) and p.endswith(".bin")]
        if epoch == 0:
            assert cache.info().misses == N and (cache.info().overflows > 0) == bool(limits)
            assert copies == [], f"a cold epoch read {len(copies)} copies back, e.g. {copies[:2]}"
        else:  # warm: each file the cache kept is read once, and nothing twice
            assert len(copies) == len(set(copies)) and copies


def test_bytes_travel_from_workers_and_files_need_a_transform(vol, tmp_path):
    cache = FileCache(tmp_path / "c")
    dl = DataLoader(UCVolumeDataset(SRC, output="bytes", cache=cache), batch_size=None, num_workers=2)
    assert sorted(dl) == sorted(content(i) for i in range(N))
    ds = UCVolumeDataset(SRC, output="file", cache=cache, transform=lambda f: len(f.read()))
    assert sorted(DataLoader(ds, batch_size=None, num_workers=2)) == sorted(len(content(i)) for i in range(N))
    bare = DataLoader(UCVolumeDataset(SRC, output="file", cache=cache), batch_size=None, num_workers=1)
    with pytest.raises(DatasetError, match="output='file'.*transform"):
        list(bare)


def test_a_bad_output_is_refused_with_the_choices(vol):
    with pytest.raises(DatasetError, match="output='paths'.*'path'.*'bytes'.*'file'"):
        UCVolumeDataset(SRC, output="paths")


class _FailWhileMarked:
    """A transform that fails on one file while *marker* exists (it runs in the workers: a file is
    what the test can take away between two epochs)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __call__(self, path: str) -> bytes:
        if path.endswith("f017.bin") and self.marker.exists():
            raise ValueError(f"cannot decode {path}")
        with open(path, "rb") as f:
            return f.read()


def test_an_error_from_the_workers_stops_them_then_and_the_next_iter_goes_on(vol, tmp_path):
    """An error that ends the loop stops the workers right then. Left to the garbage collector (the
    error's traceback holds torch's iterator), the iterator's queues could be finalized before it, so
    each worker missed its stop message and was waited for 5 s, then killed, in whatever cell ran the
    collection. The next ``iter`` starts new workers and delivers the rest of the epoch, each file once."""
    import multiprocessing as mp

    marker = tmp_path / "broken"
    marker.touch()
    before = {p.pid for p in mp.active_children()}
    dl = DataLoader(
        UCVolumeDataset(SRC, transform=_FailWhileMarked(marker), cache=FileCache(tmp_path / "c")),
        batch_size=None,
        num_workers=2,
    )
    got = []
    with pytest.raises(ValueError, match="cannot decode .*f017.bin") as failed:
        for item in dl:
            got.append(item)
    assert failed.value is not None  # the traceback (and with it torch's iterator) is still held here
    assert {p.pid for p in mp.active_children()} <= before  # ... and its workers are gone all the same
    marker.unlink()
    rest = list(dl)
    assert len(got) + len(rest) == N and sorted(got + rest) == sorted(content(i) for i in range(N))
