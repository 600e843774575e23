"""Warm hits served from process-local state: batched counters add up across processes, pins hold,
a deleted or changed local copy is never served. Real SQLite, real files, real subprocesses."""

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from air_magics.cache import FileCache
from air_magics.volumes import VolumeStore

N = 20


@pytest.fixture
def warm(tmp_path):
    s = VolumeStore()
    s.create("main.hits.v")
    root = Path(s.locate("/Volumes/main/hits/v").path)
    for i in range(N):
        (root / f"f{i:02d}.bin").write_bytes(os.urandom(1000 + i))
    files = [(f"/Volumes/main/hits/v/f{i:02d}.bin", os.stat(root / f"f{i:02d}.bin")) for i in range(N)]
    cache = FileCache(tmp_path / "cache", store=s)
    for key, st in files:
        cache.get(key, size=st.st_size, mtime=st.st_mtime)  # misses: fetched and recorded ...
    cache.flush_hits()  # ... their rows (written behind the fetches) in the index before a test reads it
    return s, cache, files


def index_access(cache: FileCache, key: str) -> float:
    db = sqlite3.connect(cache.root / "index.sqlite")
    try:
        return db.execute("SELECT last_access FROM entries WHERE key=?", (key,)).fetchone()[0]
    finally:
        db.close()


def age_index(cache: FileCache, seconds: float) -> None:
    db = sqlite3.connect(cache.root / "index.sqlite")
    with db:
        db.execute("UPDATE entries SET last_access = last_access - ?", (seconds,))
    db.close()


def test_batched_hits_add_up_across_processes(warm, tmp_path):
    s, cache, files = warm
    for _ in range(3):
        for key, st in files:
            assert cache.get(key, size=st.st_size, mtime=st.st_mtime) == str(cache.local_path(key))
    child = textwrap.dedent(f"""
        import os
        from air_magics.cache import FileCache
        from air_magics.volumes import VolumeStore
        c = FileCache({str(cache.root)!r}, store=VolumeStore())
        for i in range({N}):
            key = f"/Volumes/main/hits/v/f{{i:02d}}.bin"
            st = os.stat(c.store.locate(key).path)
            for _ in range(5):
                c.get(key, size=st.st_size, mtime=st.st_mtime)
        c.publish_status()  # as a dataset stream does at its end: the batch is written
    """)
    subprocess.run([sys.executable, "-c", child], check=True, env=os.environ.copy())
    info = cache.info()  # flushes this process's batch first
    assert (info.misses, info.hits) == (N, 3 * N + 5 * N)
    assert info.bytes_hit == 8 * sum(st.st_size for _, st in files)


def test_local_hits_reach_the_index_before_a_clear(warm):
    s, cache, files = warm
    age_index(cache, 3600)  # as after a long pause: nothing pinned in the index
    cache = FileCache(cache.root, store=s)  # a process that has validated nothing yet
    key, st = files[0]
    cache.get(key, size=st.st_size, mtime=st.st_mtime)  # old access time: the shared path renews it now
    assert index_access(cache, key) > index_access(cache, files[1][0]) + 3000
    other = FileCache(cache.root, store=s)  # a second cache object, as in another process
    report = other.clear()
    assert report.kept == 1 and Path(cache.local_path(key)).exists()  # the path just handed out survives
    assert not Path(cache.local_path(files[1][0])).exists()


def test_a_locally_known_entry_is_not_served_once_its_file_is_gone(warm):
    s, cache, files = warm
    key, st = files[2]
    local = cache.get(key, size=st.st_size, mtime=st.st_mtime)  # now known locally
    FileCache(cache.root, store=s).clear(force=True)  # another process removes everything
    assert not Path(local).exists()
    assert cache.try_hit(key, st.st_size, st.st_mtime) is None  # never a path to a missing file
    again = cache.get(key, size=st.st_size, mtime=st.st_mtime)  # fetched again
    assert Path(again).read_bytes() == Path(s.locate(key).path).read_bytes()


def test_a_changed_source_is_never_served_from_local_state(warm):
    s, cache, files = warm
    key, st = files[3]
    cache.get(key, size=st.st_size, mtime=st.st_mtime)
    src = Path(s.locate(key).path)
    src.write_bytes(b"new content of another size")
    st2 = os.stat(src)
    assert cache.try_hit(key, st2.st_size, st2.st_mtime) is None
    assert Path(cache.get(key, size=st2.st_size, mtime=st2.st_mtime)).read_bytes() == b"new content of another size"


def test_a_hand_out_renews_its_pin_only_once_it_is_an_eighth_of_the_window_old(warm):
    """A warm epoch writes nothing per hit: an entry's access time is written again only when the
    recorded one is pin_seconds/8 old (eviction spares 1.25 x pin_seconds: the guarantee holds)."""
    import time

    s, cache, files = warm
    cache = FileCache(cache.root, store=s, pin_seconds=0.8)  # renewal after 0.1 s
    key, st = files[4]
    cache.get(key, size=st.st_size, mtime=st.st_mtime)  # validated on the shared index, known locally now
    cache.get(key, size=st.st_size, mtime=st.st_mtime)  # served locally (schedules the batch's flush)
    cache.flush_hits()
    before = index_access(cache, key)
    for _ in range(50):  # served locally while the flush is scheduled and the pin fresh: nothing to write
        cache.get(key, size=st.st_size, mtime=st.st_mtime)
    cache.flush_hits()
    assert index_access(cache, key) == before
    time.sleep(0.15)
    cache.get(key, size=st.st_size, mtime=st.st_mtime)  # served locally, and its pin renewed
    cache.flush_hits()
    assert index_access(cache, key) > before
    assert cache.info().hits == 53  # each get a hit, counted though not every one wrote its access time


def test_a_last_local_hit_reaches_the_index_without_another_hit(warm):
    """A loop that stops reading: its last hand-outs are written by the timer within the interval,
    so they stay pinned in the index (another process's clear keeps them)."""
    import time

    s, cache, files = warm
    cache = FileCache(cache.root, store=s, pin_seconds=0.8)  # renewal after 0.1 s
    key, st = files[5]
    cache.get(key, size=st.st_size, mtime=st.st_mtime)  # known locally now
    before = index_access(cache, key)
    time.sleep(0.15)
    cache.get(key, size=st.st_size, mtime=st.st_mtime)  # served locally, no further hit follows
    deadline = time.monotonic() + 10
    while index_access(cache, key) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert index_access(cache, key) > before


def test_pickled_cache_starts_with_no_local_state(warm):
    import pickle

    s, cache, files = warm
    clone = pickle.loads(pickle.dumps(cache))
    key, st = files[5]
    assert not clone._hits.serve(key, st.st_size, st.st_mtime)
    assert clone.get(key, size=st.st_size, mtime=st.st_mtime) == str(cache.local_path(key))


def _files(s, cache, files):
    from air_magics.volumes.resolved import VolumeFile

    fs = [VolumeFile(key, s.locate(key), st.st_size, st.st_mtime) for key, st in files]
    cache.reads.bind(fs)
    return fs


def test_a_warm_run_is_served_up_to_the_first_file_not_at_hand(warm):
    """``hit_paths`` (a dataset's warm path, many items per call): the leading files this process
    validated for their version; a changed source or a file never validated here ends the run, and
    every file served is counted once."""
    s, cache, files = warm
    fs = _files(s, cache, files)
    assert _served(cache, fs) == N  # all validated by the fixture's fetches
    fs[7].size += 1  # as if the listing saw another version of file 7
    assert _served(cache, fs) == 7
    assert _served(cache, fs[7:]) == 0
    fresh = FileCache(cache.root, store=s)  # another process: nothing validated there yet
    assert _served(fresh, _files(s, fresh, files)) == 0
    assert cache.info().hits == N + 7


def test_a_warm_run_renews_old_pins_and_reaches_the_index(warm):
    import time

    s, cache, files = warm
    cache = FileCache(cache.root, store=s, pin_seconds=4)  # renewal after 0.5 s, served while < 1 s
    fs = _files(s, cache, files)
    for f in fs:
        cache.get(f.key, size=f.size, mtime=f.mtime)  # validated on the shared index here
    before = [index_access(cache, f.key) for f in fs]
    time.sleep(0.6)
    assert _served(cache, fs) == N
    cache.flush_hits()
    assert all(index_access(cache, f.key) > b for f, b in zip(fs, before, strict=True))  # each hand-out pinned anew
    time.sleep(1.05)  # past pin_seconds / 4 since the renewal: no longer served from local state
    assert _served(cache, fs) == 0


def test_overflows_are_batched_and_reach_the_index_by_the_flush_timer(tmp_path):
    """A file served past a full cache writes no transaction of its own: its counts ride with the
    next flush, which the process's timer makes within a moment even if nothing else happens."""
    s = VolumeStore()
    s.create("main.hits.over")
    root = Path(s.locate("/Volumes/main/hits/over").path)
    for i in range(6):
        (root / f"f{i}.bin").write_bytes(bytes([i]) * 4000)
    # the files' share holds one file, pinned for a minute: the rest go past it
    cache = FileCache(tmp_path / "cache", store=s, limit="12000B", overflow_bytes="8000B", pin_seconds=60)
    for i in range(6):
        assert Path(cache.get(f"/Volumes/main/hits/over/f{i}.bin")).read_bytes() == bytes([i]) * 4000
    with sqlite3.connect(tmp_path / "cache" / "index.sqlite") as db:  # another reader's view: no flush of ours
        counted = dict(db.execute("SELECT name, value FROM counters").fetchall())
    assert counted["overflows"] + counted["misses"] >= 1  # the first miss was recorded with its row
    for _ in range(100):  # the flush timer fires within its interval (0.25 s); 5 s at most here
        with sqlite3.connect(tmp_path / "cache" / "index.sqlite") as db:
            counted = dict(db.execute("SELECT name, value FROM counters").fetchall())
        if counted["overflows"] == 5:
            break
        time.sleep(0.05)
    assert counted["overflows"] == 5 and counted["misses"] == 6
    assert cache.info().overflows == 5  # and the process's own view agrees


def _served(cache, files) -> int:
    """How many of *files*, from the first, the warm path serves."""
    return len(cache.reads.hit_paths(files, range(len(files))))
