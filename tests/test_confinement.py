"""Confinement: no read or write leaves its volume (or destination), nothing blocks on a special
file, loops and leftovers never break or pollute a listing. Real files, links and FIFOs throughout."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import air_magics
from air_magics.cache import FileCache
from air_magics.errors import ConfinementError, CopyPlanError, SpecialFileError, VolumePathError
from air_magics.io import is_leftover, open_file, open_read, owner_pid, sweep_stale
from air_magics.transfer import TEMP_MARK, copy_files, plan_copy
from air_magics.volumes import VolumeStore

pytestmark = pytest.mark.timeout(60)  # a FIFO that blocks would hang: fail instead


@pytest.fixture
def vols(tmp_path):
    s = VolumeStore()
    s.create("main.demo.images")
    s.create("main.demo.out")
    src = Path(s.locate("/Volumes/main/demo/images").path)
    (src / "train").mkdir()
    for i in range(5):
        (src / "train" / f"f{i}.txt").write_text(f"sample {i}")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    outside = tmp_path / "outside"
    outside.mkdir()
    return s, src, Path(s.locate("/Volumes/main/demo/out").path), secret, outside


def test_copy_never_writes_through_a_symlinked_destination_folder(vols):
    s, _, out, _, outside = vols
    os.symlink(outside, out / "train")
    r = air_magics.copy(["/Volumes/main/demo/images/train"], "/Volumes/main/demo/out", store=s)
    assert list(outside.iterdir()) == []  # nothing escaped
    assert r.failed and all("outside" in f.reason or "symlink" in f.reason for f in r.failed)


def test_copy_into_local_destination_never_follows_a_planted_subfolder_link(vols, tmp_path):
    s, _, _, _, outside = vols
    dest = tmp_path / "dest"
    dest.mkdir()
    os.symlink(outside, dest / "train")
    r = air_magics.copy(["/Volumes/main/demo/images/train"], str(dest), store=s)
    assert list(outside.iterdir()) == [] and len(r.failed) == 5


def test_swap_after_listing_is_refused_by_copy(vols, tmp_path):
    s, src, _, secret, _ = vols
    plan = plan_copy(["/Volumes/main/demo/images/train"], str(tmp_path / "dst"), store=s)
    (src / "train" / "f1.txt").unlink()
    os.symlink(secret, src / "train" / "f1.txt")
    r = copy_files(plan.tasks)
    assert r.copied == 4 and [Path(f.src).name for f in r.failed] == ["f1.txt"]
    assert "outside" in r.failed[0].reason and r.failed[0].attempts == 1
    assert not (tmp_path / "dst" / "train" / "f1.txt").exists()
    assert "TOP SECRET" not in "".join(p.read_text() for p in (tmp_path / "dst").rglob("*.txt"))


def test_swap_after_listing_is_refused_by_the_cache(vols, tmp_path):
    s, src, _, secret, _ = vols
    from air_magics.datasets.listing import list_files

    files = list_files(["/Volumes/main/demo/images/train"], pattern=None, recursive=True, store=s)
    (src / "train" / "f2.txt").unlink()
    os.symlink(secret, src / "train" / "f2.txt")
    cache = FileCache(tmp_path / "cache", store=s)
    f = next(f for f in files if f.key.endswith("f2.txt"))
    with pytest.raises(ConfinementError, match="outside"):
        cache.get(f.key, size=f.size, mtime=f.mtime, src=f.src)
    ok = next(f for f in files if f.key.endswith("f3.txt"))
    assert Path(cache.get(ok.key, size=ok.size, mtime=ok.mtime, src=ok.src)).read_text() == "sample 3"


def test_a_link_inside_the_volume_is_still_followed(vols, tmp_path):
    s, src, _, _, _ = vols
    os.symlink(src / "train" / "f0.txt", src / "train" / "alias.txt")
    r = air_magics.copy(["/Volumes/main/demo/images/train"], str(tmp_path / "d"), store=s)
    assert r.ok and (tmp_path / "d" / "train" / "alias.txt").read_text() == "sample 0"


def test_store_open_is_confined_for_reads_and_writes(vols):
    s, src, _, secret, outside = vols
    os.symlink(secret, src / "leak.txt")
    os.symlink(outside, src / "outdir")
    with pytest.raises(VolumePathError):  # the early check at locate time
        s.open("/Volumes/main/demo/images/leak.txt")
    loc = s.locate("/Volumes/main/demo/images/train/f0.txt")
    with pytest.raises(ConfinementError):  # the binding check on the opened descriptor
        open_file(str(src / "leak.txt"), loc.root)
    with pytest.raises(ConfinementError):
        open_file(str(src / "outdir" / "new.txt"), loc.root, "wb")
    assert list(outside.iterdir()) == []
    with s.open("/Volumes/main/demo/images/new/deep/x.txt", "w") as f:
        f.write("ok")
    assert (src / "new" / "deep" / "x.txt").read_text() == "ok"


def test_fifo_in_a_source_never_blocks(vols, tmp_path):
    s, src, _, _, _ = vols
    os.mkfifo(src / "train" / "pipe")
    with pytest.raises(SpecialFileError, match="FIFO"):
        open_read(str(src / "train" / "pipe"), str(src))
    skipped: list = []
    names = [e.rel for e in s.entries("/Volumes/main/demo/images/train", recursive=True, skipped=skipped)]
    assert "pipe" not in names and skipped == [("pipe", "FIFO")]
    r = air_magics.copy(["/Volumes/main/demo/images/train"], str(tmp_path / "d"), store=s)
    assert r.ok and r.copied == 5
    # named explicitly: refused at once, not hung
    r = air_magics.copy(["/Volumes/main/demo/images/train/pipe"], str(tmp_path / "d2"), store=s)
    assert len(r.failed) == 1 and "FIFO" in r.failed[0].reason
    torch = pytest.importorskip("torch")  # noqa: F841
    from air_magics.data import UCVolumeDataset

    ds = UCVolumeDataset("/Volumes/main/demo/images/train", cache=FileCache(tmp_path / "c", store=s), store=s)
    assert sorted(Path(p).name for p in ds) == [f"f{i}.txt" for i in range(5)]


def test_symlink_loop_is_reported_not_fatal(vols, tmp_path, caplog):
    s, src, _, _, _ = vols
    os.symlink("loop", src / "train" / "loop")
    os.symlink("b", src / "train" / "a")
    os.symlink("a", src / "train" / "b")
    with caplog.at_level("WARNING", logger="air_magics"):
        names = [f.path.name for f in s.ls("/Volumes/main/demo/images/train")]
    assert "loop" not in names and "f0.txt" in names
    assert "loop (symlink loop)" in caplog.text
    assert len(s.ls("/Volumes/main/demo/images", recursive=True)) == 5
    assert len(plan_copy(["/Volumes/main/demo/images/train"], str(tmp_path / "d"), store=s).tasks) == 5
    assert len(s.glob("/Volumes/main/demo/images/train/*")) == 5


def test_leftovers_are_hidden_and_swept_after_sigkill(vols, tmp_path):
    s, src, _, _, _ = vols
    dest = tmp_path / "dest"
    (src / "train" / "big.bin").write_bytes(os.urandom(1 << 20))
    child = textwrap.dedent(f"""
        import time, air_magics, air_magics.transfer.file as fc
        def stuck(fd, data):
            import os
            os.write(fd, data[:1000])
            time.sleep(120)
        def stuck_send(src, out, size):  # the kernel-side copy a small file takes
            stuck(out, b"x" * 1000)
        fc.write_all, fc._send_all = stuck, stuck_send
        air_magics.copy(["/Volumes/main/demo/images/train/big.bin"], {str(dest)!r}, workers=1)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], env=os.environ.copy())
    try:
        deadline = time.monotonic() + 30
        while not any(TEMP_MARK in p.name for p in dest.glob(".*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        temps = [p for p in dest.glob(".*") if TEMP_MARK in p.name]
        assert temps, "the child never started writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert owner_pid(temps[0].name) == proc.pid and is_leftover(temps[0].name)
    # a leftover in a volume is never listed (volume listings and datasets)
    os.link(temps[0], src / "train" / temps[0].name)
    assert temps[0].name not in [f.path.name for f in s.ls("/Volumes/main/demo/images/train", recursive=True)]
    r = air_magics.copy(["/Volumes/main/demo/images/train/big.bin"], str(dest), store=s)
    assert r.ok and not temps[0].exists()  # the next copy into that folder swept it
    live = dest / f".x{TEMP_MARK}{os.getpid()}-1"
    live.write_bytes(b"in flight")
    assert sweep_stale(str(dest)) == [] and live.exists()  # a live owner's temp file is kept


def test_plan_refuses_a_file_and_a_folder_of_one_name(vols, tmp_path):
    s, src, _, _, _ = vols
    other = src / "other"
    (other / "train").mkdir(parents=True)
    (other / "train" / "x.txt").write_text("x")
    (src / "single").mkdir()
    (src / "single" / "train").write_text("a file named train")
    with pytest.raises(CopyPlanError, match="needs a folder"):
        plan_copy(
            ["/Volumes/main/demo/images/single/train", "/Volumes/main/demo/images/other/train"],
            str(tmp_path / "d"),
            store=s,
        )


def test_volumes_root_skips_malformed_and_escaping_folders(vols, tmp_path):
    s, _, _, _, outside = vols
    (s.root / "bad.cat").mkdir()
    (outside / "sch" / "vol").mkdir(parents=True)
    os.symlink(outside, s.root / "linked")
    found, notes = s.scan_volumes()
    assert [v.volume_id for v in found] == ["main.demo.images", "main.demo.out"]
    assert any("bad.cat" in n and "not a valid catalog" in n for n in notes)
    assert any(n.startswith("linked:") and "outside" in n for n in notes)
    assert str(outside) not in " ".join(notes)
    with pytest.raises(VolumePathError, match="outside the volumes root"):
        s.locate("/Volumes/linked/sch/vol/x")
