"""datasets/feed.py, through UCVolumeDataset: the count is exact at every yield on each path an item
takes (cold through the prefetcher, warm runs, warm through ``ready``), and ``iter()`` alone plans
nothing (the stream is planned at its first ``next()``, as a generator ``__iter__``'s body was)."""

import os
import pickle

import pytest
from _seed import seeded_volume

from air_magics.data import UCVolumeDataset
from air_magics.datasets import feed as feed_module
from air_magics.datasets import prefetch as prefetch_module

N = 150  # more than two warm runs of 64


@pytest.fixture
def vol():
    return seeded_volume("main.raw.feed", {f"/Volumes/main/raw/feed/{i:03d}.bin": b"x%d" % i for i in range(N)})


@pytest.mark.parametrize("output", ["path", "bytes"])
def test_position_counts_every_item_before_it_leaves(vol, output):
    ds = UCVolumeDataset("/Volumes/main/raw/feed", output=output)
    for epoch in ("cold", "warm"):
        seen = [ds.position() for _ in ds]
        assert seen == [(0, k) for k in range(1, N + 1)], epoch


def test_iter_alone_plans_nothing(vol):
    ds = UCVolumeDataset("/Volumes/main/raw/feed")
    first = iter(ds)
    for _ in range(5):
        next(first)
    validation = ds.validation
    second = iter(ds)  # not started: the first stream's count and validation stand
    assert ds.position() == (0, 5) and ds.validation is validation
    assert ds.state_dict()["segments"][-1]["delivered"] == [5]
    next(second)
    assert ds.position() == (0, 1) and ds.validation is not validation


def test_the_count_and_skipped_files_travel_with_the_dataset(vol):
    ds = UCVolumeDataset("/Volumes/main/raw/feed", on_error="skip")
    it = iter(ds)
    for _ in range(7):
        next(it)
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.position() == (0, 7) and copy.skipped == [] and copy.skipped is not ds.skipped


def test_a_new_dataset_over_a_warm_cache_reads_the_index_a_window_at_a_time(monkeypatch):
    """The validation of a stream asks the cache's index for one window of its order at a time (at
    most ``ahead`` keys held), never a row per file of the whole folder, and still validates every
    cached file: what a DataLoader worker of a million-file epoch holds stays bounded."""
    from air_magics.cache.entries import Entries

    n = 1500
    seeded_volume("main.raw.many", {f"/Volumes/main/raw/many/{i:04d}.bin": b"y%d" % i for i in range(n)})
    assert len(list(UCVolumeDataset("/Volumes/main/raw/many"))) == n  # cold: every file cached
    asked: list[int] = []
    real = Entries.rows_for

    def spy(self, keys):
        asked.append(len(keys))
        return real(self, keys)

    monkeypatch.setattr(Entries, "rows_for", spy)
    ds = UCVolumeDataset("/Volumes/main/raw/many", shuffle=True, seed=3)  # a new list: nothing known
    assert sorted(open(p, "rb").read() for p in ds) == sorted(b"y%d" % i for i in range(n))
    assert ds.validation.done and ds.validation.valid == n
    assert sum(asked) == n and max(asked) <= 512 and len(asked) > 2


def test_a_warm_epoch_whose_pins_aged_waits_for_the_validation_instead_of_a_fetch_per_item(monkeypatch, tmp_path):
    """Files this process knows whose pins aged (an epoch longer than ``pin_seconds / 4``, as at a
    million files) are re-pinned by the validation, a batch per transaction, and then served on the
    consumer's thread: no fetch call per item (a thread and a transaction each, ~45 us a file)."""
    import time

    from air_magics.cache import FileCache
    from air_magics.cache.reads import Reads

    n = 300
    seeded_volume("main.raw.aged", {f"/Volumes/main/raw/aged/{i:04d}.bin": b"z%d" % i for i in range(n)})
    ds = UCVolumeDataset("/Volumes/main/raw/aged", cache=FileCache(tmp_path / "c", pin_seconds=0.4))
    assert len(list(ds)) == n  # cold: fetched
    fetches: list[str] = []
    real = Reads.fetch

    def spy(self, f, keep=None):
        fetches.append(f.key)
        return real(self, f, keep)

    monkeypatch.setattr(Reads, "fetch", spy)
    prefetchers: list[object] = []
    real_prefetcher = feed_module.Prefetcher

    def spy_prefetcher(*args, **kwargs):
        prefetchers.append(real_prefetcher(*args, **kwargs))
        return prefetchers[-1]

    monkeypatch.setattr(feed_module, "Prefetcher", spy_prefetcher)
    pools: list[tuple] = []
    real_pool = prefetch_module.job_pool
    monkeypatch.setattr(prefetch_module, "job_pool", lambda *a, **k: pools.append(a) or real_pool(*a, **k))
    time.sleep(0.2)  # past pin_seconds / 4: nothing is served from this process's state alone
    paths = list(ds)
    assert [open(p, "rb").read() for p in paths] == [b"z%d" % i for i in range(n)]
    assert ds.validation.valid == n and fetches == []
    # ... on the consumer's thread: each run waits for its re-pin, no item went to a fetch thread
    assert len(prefetchers) == 1 and pools == []


def test_an_aged_entry_evicted_meanwhile_is_fetched_again_never_handed_out_gone(tmp_path):
    """An entry this process validated, whose pin aged and which another process then evicted (row
    and file), is not re-pinned (the pin finds its row inside one transaction) and is fetched anew:
    its path is never handed out missing."""
    import time

    from air_magics.cache import FileCache

    n = 200
    seeded_volume("main.raw.gone", {f"/Volumes/main/raw/gone/{i:04d}.bin": b"g%d" % i for i in range(n)})
    ds = UCVolumeDataset("/Volumes/main/raw/gone", cache=FileCache(tmp_path / "c", pin_seconds=0.4))
    assert len(list(ds)) == n
    time.sleep(0.6)  # past PIN_MARGIN x pin_seconds: evictable by anyone
    other = FileCache(tmp_path / "c", pin_seconds=0.4)  # another handle: this process's hits unknown to it
    assert other.clear().removed == n  # (the others' pins aged: nothing is kept)
    seen = []
    for p in ds:
        assert os.path.exists(p), p  # at the moment it is handed out
        seen.append(open(p, "rb").read())
    assert seen == [b"g%d" % i for i in range(n)]
    assert ds.validation.valid == 0 and ds.cache.info().misses == 2 * n


def test_a_pin_takes_only_rows_present_at_the_version_wanted(tmp_path):
    """``Entries.pin`` finds and pins rows in one transaction: a row missing or of another version is
    left alone (its access time too); *checked* is recorded only for keys pinned (a sibling trusts a checked row's version)."""
    from air_magics.cache.entries import Entries

    e = Entries(tmp_path, 0)
    e.write_rows([("a", "/x/a", 3, 10.0, True), ("b", "/x/b", 4, 20.0, True)])
    before = {k: e.row(k) for k in "ab"}
    pinned = e.pin({"a": (3, 10.0), "b": (4, 21.0), "c": (1, 1.0)}, before["a"][2] + 100, checked=["a", "b"])
    assert pinned == ["a"]
    assert e.row("a")[2] == before["a"][2] + 100 and e.row("a")[3] == before["a"][2] + 100
    assert e.row("b") == before["b"] and e.row("c") is None
    assert e.pin({"b": None}, before["b"][2] + 5) == ["b"] and e.row("b")[2] == before["b"][2] + 5
    assert e.pin({}, 0.0) == []


def test_a_worker_chunk_that_leaves_items_behind_still_resumes_exactly():
    """A persistent worker's warm epoch cuts its chunks (129 items at batch 3) from runs of 64
    looked up at once: the items a chunk leaves for the next one are not delivered, so the
    position the chunk carries must not count them (it did: 212 delivered after 150, and a resume
    skipped 62 files)."""
    from air_magics.data import DataLoader

    n = 600
    files = {f"/Volumes/main/raw/chunks/{i:04d}.bin": b"c%d" % i for i in range(n)}
    seeded_volume("main.raw.chunks", files)
    dl = DataLoader(UCVolumeDataset("/Volumes/main/raw/chunks"), batch_size=3, num_workers=1)
    assert sum(len(b) for b in dl) == n  # cold
    assert sum(len(b) for b in dl) == n  # warm: the worker knows every file now
    first = []
    for k, batch in enumerate(dl):  # warm again, stopped inside the worker's second chunk
        first += batch
        if k + 1 == 50:
            break
    state = dl.state_dict()
    assert state["dataset"]["segments"][-1]["delivered"] == [150]
    dl2 = DataLoader(UCVolumeDataset("/Volumes/main/raw/chunks"), batch_size=3, num_workers=1)
    dl2.load_state_dict(state)
    rest = [p for batch in dl2 for p in batch]
    got = sorted(open(p, "rb").read() for p in first + rest)
    assert got == sorted(files.values())
