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
            f"c = FileCache({str(root)!r}, limit={4 * SIZE}, pin_seconds=3600)\n"
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
    c = FileCache(root, limit=4 * SIZE, pin_seconds=3600)
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
