"""The cache's entry count is kept by the index (triggers on its rows), not counted per report: it
stays exact through fetches, re-fetches of a changed source (a REPLACE), evictions, failed fetches
and clears, and an index made before the count is counted once when a process opens it."""

import os
import sqlite3
import time

from _seed import seeded_volume

from air_magics.cache import FileCache

V = "/Volumes/main/raw/cnt"


def _rows(cache: FileCache) -> int:
    cache.flush_hits()  # this process's rows (written behind its fetches) are in the index first
    with sqlite3.connect(cache.root / "index.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]


def test_the_count_follows_every_change_of_the_rows(tmp_path):
    store = seeded_volume("main.raw.cnt", {f"{V}/f{i}.bin": bytes([i]) * 1000 for i in range(12)})
    cache = FileCache(tmp_path / "c", limit="8000B", overflow_bytes="2000B", pin_seconds=0)
    for i in range(6):
        cache.get(f"{V}/f{i}.bin")
    assert cache.info().entries == _rows(cache) == 6
    with store.open(f"{V}/f0.bin", "wb") as f:  # a new version: its row is replaced, not added
        f.write(b"x" * 900)
    os.utime(store.locate(f"{V}/f0.bin").path, (time.time() + 5, time.time() + 5))
    assert open(cache.get(f"{V}/f0.bin"), "rb").read() == b"x" * 900
    assert cache.info().entries == _rows(cache) == 6
    for i in range(6, 12):  # past the limit: older entries are evicted as newer ones come in
        cache.get(f"{V}/f{i}.bin")
    info = cache.info()
    assert info.evictions > 0 and info.entries == _rows(cache) < 12
    cache.clear(force=True)
    assert cache.info().entries == _rows(cache) == 0


def test_an_index_made_before_the_count_is_counted_when_opened(tmp_path):
    seeded_volume("main.raw.cnt", {f"{V}/f{i}.bin": b"a" * 10 for i in range(5)})
    cache = FileCache(tmp_path / "c")
    for i in range(5):
        cache.get(f"{V}/f{i}.bin")
    with sqlite3.connect(cache.root / "index.sqlite") as db:  # as an older version left it
        db.execute("DROP TRIGGER entries_added")
        db.execute("DROP TRIGGER entries_removed")
        db.execute("DELETE FROM counters WHERE name = 'entries'")
    assert FileCache(tmp_path / "c").info().entries == 5
