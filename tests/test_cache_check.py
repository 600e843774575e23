"""Crash leftovers and the cache's self-check (issue 36): what a killed process leaves is found and
swept, a root swapped for a link is named, and ``FileCache.check`` reports (and repairs) every way
the index and the files can disagree."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from air_magics.cache import FileCache
from air_magics.errors import AirError, ConfinementError
from air_magics.volumes import VolumeStore

SIZE = 16 * 1024
WINDOW = 1 << 30  # the overflow windows' share of the limit, given: these tests are about the files' share


def content(i: int) -> bytes:
    return i.to_bytes(4, "big") * (SIZE // 4)


def key(i: int) -> str:
    return f"/Volumes/main/raw/ck/d/f{i:03d}.bin"


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.ck")
    for i in range(40):
        with s.open(key(i), "wb") as f:
            f.write(content(i))
    return s


def _killed_child(root: Path, code: str) -> str:
    """Run *code* in a child using the cache at *root* (``c``), then SIGKILL it; its stdout."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal; from air_magics.cache import FileCache\n"
            f"c = FileCache({str(root)!r}, limit={4 * SIZE + WINDOW}, overflow_bytes={WINDOW}, pin_seconds=3600)\n"
            f"{code}\n"
            "os.kill(os.getpid(), signal.SIGKILL)",
        ],
        capture_output=True,
        text=True,
        env=os.environ,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return proc.stdout


def test_a_killed_process_overflow_folder_is_swept_when_the_cache_is_next_opened(vol, tmp_path):
    root = tmp_path / "cache"
    out = _killed_child(root, f"for k in {[key(i) for i in range(6)]!r}: p = c.get(k)\nprint(p, flush=True)")
    left = Path(out.strip())
    assert "overflow" in str(left) and left.exists()  # killed: nothing removed it
    c = FileCache(root, limit=4 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600)
    assert open(c.get(key(0)), "rb").read() == content(0)  # a hit: no overflow in this process
    assert not left.exists() and not left.parents[4].exists()  # (the dead process's own folder)
    assert len(os.listdir(root / "overflow")) == 2  # this process's own folder and lock only


def test_a_root_swapped_for_a_link_is_named_and_nothing_is_written_through_it(vol, tmp_path):
    root = tmp_path / "cache"
    c = FileCache(root, limit=8 * SIZE, pin_seconds=0)
    for i in range(4):
        c.get(key(i))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep")
    os.rename(root, tmp_path / "cache-moved")
    os.symlink(elsewhere, root)
    with pytest.raises(ConfinementError, match="replaced while in use") as err:
        c.get(key(10))
    assert str(elsewhere) in str(err.value) and isinstance(err.value, AirError)
    with pytest.raises(ConfinementError):
        c.clear(force=True)
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["precious.txt"]


def test_a_clean_cache_checks_clean(vol, tmp_path):
    c = FileCache(tmp_path / "cache", limit=8 * SIZE, pin_seconds=0)
    for i in range(12):
        c.get(key(i))
    report = c.check()
    assert report.ok and not report.findings, str(report)


def test_check_reports_each_disagreement_and_repair_fixes_it(vol, tmp_path):
    root = tmp_path / "cache"
    c = FileCache(root, pin_seconds=0)
    paths = [Path(c.get(key(i))) for i in range(6)]
    paths[0].unlink()  # row without file
    paths[1].write_bytes(b"short")  # size mismatch
    os.utime(paths[2], (1, 1))  # mtime mismatch
    stray = paths[3].parent / "stray.bin"
    stray.write_bytes(b"x" * 100)  # file without row
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    temp = paths[3].parent / f".f003.bin.air-tmp-{dead.stdout.strip()}-1"
    temp.write_bytes(b"partial")  # a dead writer's temp file
    shard = root / "files/main/raw/ck/packed/shard-00001@0123abcd"
    (shard / "c0").mkdir(parents=True)
    (shard / "c0" / "m.bin").write_bytes(b"member")  # an extracted folder without its entry
    Path(f"{shard}.complete").touch()
    report = c.check()
    assert not report.ok
    kinds = report.kinds()
    assert kinds == {
        "row without file": 1,
        "size mismatch": 1,
        "mtime mismatch": 1,
        "file without row": 2,
        "temp file": 1,
        "orphan marker": 1,
    }, str(report)
    assert str(stray) in str(report) and "repair" in str(report)
    assert all(p.exists() for p in (paths[1], stray, temp, shard))  # a check alone touches nothing
    fixed = c.check(repair=True)
    assert fixed.ok and all(f.repaired for f in fixed.findings), str(fixed)
    assert not any(p.exists() for p in (paths[1], paths[2], stray, temp, shard))
    assert c.check().ok
    assert c.total_bytes == 3 * SIZE  # the three untouched files, recounted
    for i in range(6):
        assert open(c.get(key(i)), "rb").read() == content(i)  # fetched again where removed


def test_a_crash_mid_fetch_is_repaired_when_the_cache_is_next_opened(vol, tmp_path):
    """A process killed with a claim open (a shard's fetch never finished) and its overflow folder:
    the next process to open the cache detects the crash (the dead folder) and repairs both."""
    root = tmp_path / "cache"
    _killed_child(
        root,
        "slot = c.claims.claim('/Volumes/main/raw/ck/packed/shard-00002@89abcdef', 1000)\n"
        "os.makedirs(slot); open(slot + '/half.bin', 'wb').write(b'x' * 500)\n"
        "c.claims.overflow_folder()",
    )
    c = FileCache(root, limit=4 * SIZE + WINDOW, overflow_bytes=WINDOW, pin_seconds=3600)
    assert c.total_bytes == 0  # (opening repaired it: the claim is gone, its bytes given back)
    assert c.check().ok
    assert not (root / "files/main/raw/ck/packed/shard-00002@89abcdef").exists()
    assert len(os.listdir(root / "overflow")) == 2  # this process's own folder and lock only


def test_the_magic_checks_and_repairs(ip, vol):
    from IPython.core.error import UsageError

    c = FileCache(pin_seconds=0)
    p = Path(c.get(key(0)))
    (p.parent / "stray.bin").write_bytes(b"x")
    out = ip.run_line_magic("air_volume", "cache --check")
    assert "file without row" in str(out) and "stray.bin" in str(out) and "--repair" in str(out)
    out = ip.run_line_magic("air_volume", "cache --check --repair")
    assert "(repaired)" in str(out) and not (p.parent / "stray.bin").exists()
    assert "agree" in str(ip.run_line_magic("air_volume", "cache --check"))
    with pytest.raises(UsageError, match="--repair only"):
        ip.run_line_magic("air_volume", "cache --repair")
