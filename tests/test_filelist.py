"""The compact file list (issue 35): a dataset over one volume folder keeps its files as a
``FileList`` (one string of names, arrays of versions) with the same items, order, fingerprint and
resume behaviour as a list of ``VolumeFile`` values, and what an epoch learns stays known."""

import hashlib
import os
import pickle

import pytest

from air_magics.cache import FileCache
from air_magics.data import DataLoader, UCVolumeDataset
from air_magics.datasets.listing import list_files
from air_magics.volumes import VolumeStore
from air_magics.volumes.filelist import FileList, ListedFile
from air_magics.volumes.location import Location
from air_magics.volumes.resolved import VolumeFile

FOLDER = "/Volumes/main/raw/many"
N = 120


@pytest.fixture
def store():
    s = VolumeStore()
    s.create("main.raw.many")
    for i in range(N):
        with s.open(f"{FOLDER}/d{i % 4}/s{i % 3}/f{i:04d}.{'jpg' if i % 2 else 'txt'}", "wb") as f:
            f.write(bytes([i]) * (10 + i))
    return s


def test_a_folder_is_listed_compactly_with_the_items_of_a_full_listing(store, tmp_path):
    ds = UCVolumeDataset(FOLDER, cache=FileCache(tmp_path / "c"), store=store)
    full = list_files([FOLDER], pattern=None, recursive=True, store=store, stat=True)
    assert isinstance(ds.files, FileList) and not isinstance(full, FileList)
    assert [f.key for f in ds.files] == [f.key for f in full]
    assert [f.src.path for f in ds.files] == [f.src.path for f in full]
    assert all(f.src.root == g.src.root for f, g in zip(ds.files, full, strict=True))
    assert ds.files[-1].key == full[-1].key and [f.key for f in ds.files[2:5]] == [f.key for f in full[2:5]]
    old = hashlib.sha1("\n".join(f.key for f in full).encode()).hexdigest()[:16]
    assert ds.fingerprint == old  # a state saved by an earlier version resumes
    with pytest.raises(IndexError, match=f"index {N} out of range"):
        ds.files[N]


def test_what_an_epoch_learns_of_each_file_stays_known(store, tmp_path):
    ds = UCVolumeDataset(FOLDER, cache=FileCache(tmp_path / "c"), store=store)
    assert ds.files[7].size is None and ds.files[7].mtime is None
    paths = list(ds)
    assert len(paths) == N and all(p.startswith(str(tmp_path / "c")) for p in paths)
    full = {f.key: f for f in list_files([FOLDER], pattern=None, recursive=True, store=store, stat=True)}
    for f in ds.files:
        assert (f.size, f.mtime) == (full[f.key].size, full[f.key].mtime), f
    assert sorted(open(p, "rb").read() for p in paths) == sorted(bytes([i]) * (10 + i) for i in range(N))


def test_a_pattern_filters_the_names_and_a_glob_or_two_folders_take_the_full_listing(store, tmp_path):
    cache = FileCache(tmp_path / "c")
    ds = UCVolumeDataset(FOLDER, pattern="*.jpg", cache=cache, store=store)
    assert isinstance(ds.files, FileList) and len(ds) == N // 2
    assert all(f.key.endswith(".jpg") for f in ds.files)
    globbed = UCVolumeDataset(f"{FOLDER}/d1/**/*.jpg", cache=cache, store=store)
    assert not isinstance(globbed.files, FileList)
    assert [f.key for f in globbed.files] == [f.key for f in ds.files if "/d1/" in f.key]
    two = UCVolumeDataset([f"{FOLDER}/d0", f"{FOLDER}/d1"], cache=cache, store=store)
    assert not isinstance(two.files, FileList) and len(two) == N // 2


def test_a_resumed_compact_dataset_yields_exactly_the_rest(store, tmp_path):
    cache = FileCache(tmp_path / "c")
    ds = UCVolumeDataset(FOLDER, cache=cache, store=store, shuffle=True, seed=3)
    it = iter(ds)
    first = [next(it) for _ in range(45)]
    state = ds.state_dict()
    again = UCVolumeDataset(FOLDER, cache=cache, store=store, shuffle=True, seed=3)
    again.load_state_dict(state)
    rest = list(again)
    assert len(rest) == N - 45 and not set(rest) & set(first)
    assert sorted(first + rest) == sorted(f.slot for f in ds.files)


def test_the_list_travels_to_workers_as_flat_buffers_and_an_item_alone_as_a_plain_file(store, tmp_path):
    ds = UCVolumeDataset(FOLDER, cache=FileCache(tmp_path / "c"), store=store)
    blob = pickle.dumps(ds.files)
    assert len(blob) < 60 * N  # names (~20 B), offset, size and mtime (8 B each) per file; no object per file
    back = pickle.loads(blob)
    assert [f.key for f in back] == [f.key for f in ds.files] and back.slot_root == ds.files.slot_root
    item = ds.files[5]
    item.size, item.mtime = 15, 1.5
    alone = pickle.loads(pickle.dumps(item))
    assert type(alone) is VolumeFile and (alone.key, alone.size, alone.mtime, alone.slot) == (
        item.key,
        15,
        1.5,
        item.slot,
    )
    back5 = pickle.loads(pickle.dumps(ds.files))[5]  # a pickled list keeps what is known (spawned workers)
    assert (back5.size, back5.mtime) == (15, 1.5)
    loader = DataLoader(ds, batch_size=8, num_workers=2)
    assert sorted(p for batch in loader for p in batch) == sorted(f.slot for f in ds.files)


def test_versions_a_forked_worker_learns_are_shared_pages_not_copies(store, tmp_path):
    """What a forked DataLoader worker learns of each file (its size and mtime, filled in as it
    fetches) lands in memory shared with the main process: no private copy of those pages per
    worker (the per-file growth issue 35 measured), and the main process sees it."""
    ds = UCVolumeDataset(FOLDER, cache=FileCache(tmp_path / "c"), store=store)
    assert all(f.size is None for f in ds.files)
    loader = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context="fork")
    assert sum(len(batch) for batch in loader) == N
    assert [(f.size, f.mtime) for f in ds.files] == [
        (st.st_size, st.st_mtime) for st in (os.stat(f.src.path) for f in ds.files)
    ]


def test_names_that_cannot_be_a_listing_are_refused():
    base = Location("/tmp/x")
    with pytest.raises(ValueError, match="without NUL"):
        FileList("/Volumes/c/s/v", base, ["a", "b\0c"])
    with pytest.raises(ValueError, match="non-empty"):
        FileList("/Volumes/c/s/v", base, ["", "b"])
    empty = FileList("/Volumes/c/s/v", base, [])
    h = hashlib.sha1()
    empty.hash_keys(h)
    assert len(empty) == 0 and list(empty) == [] and h.hexdigest() == hashlib.sha1(b"").hexdigest()
    one = FileList("/Volumes/c/s/v/", base, ["x/y.bin"])
    assert isinstance(one[0], ListedFile) and one[-1].key == "/Volumes/c/s/v/x/y.bin" and one[0].slot == ""
