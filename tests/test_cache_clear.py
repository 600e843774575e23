"""Clearing a cache of many files reports its progress: ``FileCache.clear(progress=...)`` rises
monotonically to the total, ``%air_volume cache --clear`` shows a progress line and the final count."""

import os
import time

import pytest

from air_magics.cache import ClearProgress, FileCache
from air_magics.volumes import VolumeStore

N = 300  # more than one batch of stripes (256): the progress is reported more than once


@pytest.fixture
def cached():
    s = VolumeStore()
    s.create("main.raw.many")
    for i in range(N):
        with s.open(f"/Volumes/main/raw/many/d{i % 7}/{i:04d}.bin", "wb") as f:
            f.write(b"x" * (100 + i))
    c = FileCache()
    paths = [c.get(f"/Volumes/main/raw/many/d{i % 7}/{i:04d}.bin") for i in range(N)]
    return c, paths, sum(100 + i for i in range(N))


def test_clear_reports_progress_monotonically_to_the_total(cached):
    c, paths, nbytes = cached
    seen: list[ClearProgress] = []
    report = c.clear(force=True, progress=seen.append)
    assert (report.removed, report.bytes, report.kept) == (N, nbytes, 0)
    assert len(seen) >= 3 and seen[0] == ClearProgress(0, N, 0, 0, nbytes)
    assert all(p.total == N and p.bytes_total == nbytes for p in seen)
    for a, b in zip(seen, seen[1:], strict=False):
        assert b.done >= a.done and b.removed >= a.removed and b.bytes >= a.bytes
    assert (seen[-1].done, seen[-1].removed, seen[-1].bytes) == (N, N, nbytes)
    assert f"{N:,} / {N:,} entries" in str(seen[-1])
    assert not any(os.path.exists(p) for p in paths)


def test_clear_keeping_pinned_files_still_reaches_the_total(cached):
    c, paths, _ = cached
    seen: list[ClearProgress] = []
    report = c.clear(progress=seen.append)  # all were just handed out: kept, and counted as looked at
    assert (report.removed, report.kept) == (0, N)
    assert seen[-1].done == N and seen[-1].removed == 0 and all(os.path.exists(p) for p in paths)


def test_the_magic_shows_a_progress_line_and_the_final_count(ip, cached, capsys):
    capsys.readouterr()
    ip.run_line_magic("air_volume", "cache --clear --force")
    out = capsys.readouterr().out
    assert f"\rclearing cache {cached[0].root}: {N:,} / {N:,} entries" in out
    assert f"\ncache {cached[0].root}: removed {N:,} cached files" in out  # on its own line, after it


def test_a_second_cache_on_the_same_root_counts_the_rows_still_queued_by_the_first(tmp_path, monkeypatch):
    """The rows of one ``FileCache``'s fetches are committed behind them; a clear through another
    object on the same root (what ``%air_volume cache --clear`` opens) waits for them, so it removes
    and counts every file (before, it saw only the rows that had landed: 296 of 300). The second
    spells the folder otherwise: it is the same cache."""
    s = VolumeStore()
    s.create("main.raw.late")
    for i in range(20):
        with s.open(f"/Volumes/main/raw/late/{i:02d}.bin", "wb") as f:
            f.write(b"y" * 50)
    first = FileCache(tmp_path / "c")
    write_rows = first._entries.write_rows

    def slow_write_rows(rows):  # the writer thread takes its time: the rows are still queued below
        time.sleep(0.5)
        return write_rows(rows)

    monkeypatch.setattr(first._entries, "write_rows", slow_write_rows)
    paths = [first.get(f"/Volumes/main/raw/late/{i:02d}.bin") for i in range(20)]
    report = FileCache(tmp_path / ".." / tmp_path.name / "c").clear(force=True)
    assert (report.removed, report.bytes) == (20, 20 * 50)
    assert not any(os.path.exists(p) for p in paths)
