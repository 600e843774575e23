import errno
import os
import time

import pytest
from conftest import make_tree, sha

import air_magics
from air_magics.transfer import TEMP_MARK, CopyProgress, copy_files, is_transient, plan_copy
from air_magics.volumes import VolumeStore


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    root = s.root / "main" / "raw" / "img"
    hashes = make_tree(root / "data", n_dirs=6, per_dir=20, size=2048)
    return s, hashes


def check_dest(dest, hashes):
    got = {os.path.relpath(os.path.join(d, f), dest): sha(os.path.join(d, f)) for d, _, fs in os.walk(dest) for f in fs}
    assert got == {f"data/{k}": v for k, v in hashes.items()}


def test_copy_then_skip_unchanged_then_recopy_changed(vol, tmp_path):
    store, hashes = vol
    dest = tmp_path / "out"
    seen: list[CopyProgress] = []
    r = air_magics.copy(
        ["/Volumes/main/raw/img/data"], str(dest), store=store, workers=8, listeners=[lambda e: seen.append(e.progress)]
    )
    assert (
        r.ok
        and r.copied == 120
        and r.skipped == 0
        and r.bytes_copied == sum(os.path.getsize(p) for p in dest.rglob("*.bin"))
    )
    check_dest(dest, hashes)
    assert seen[-1].files_done == 120 and seen[-1].bytes_done == seen[-1].bytes_total
    assert [p.files_done for p in seen] == sorted(p.files_done for p in seen)
    src = store.locate("/Volumes/main/raw/img/data/part0/d0/f0000.bin").path
    assert os.stat(dest / "data/part0/d0/f0000.bin").st_mtime == pytest.approx(os.stat(src).st_mtime, abs=1e-6)

    r2 = air_magics.copy(["/Volumes/main/raw/img/data"], str(dest), store=store)
    assert (r2.copied, r2.skipped) == (0, 120)

    with open(src, "wb") as f:  # same size, new content and mtime: must be copied again
        f.write(os.urandom(os.path.getsize(dest / "data/part0/d0/f0000.bin")))
    os.utime(src, (time.time() + 5, time.time() + 5))
    r3 = air_magics.copy(["/Volumes/main/raw/img/data"], str(dest), store=store)
    assert (r3.copied, r3.skipped) == (1, 119)
    assert sha(dest / "data/part0/d0/f0000.bin") == sha(src)

    r4 = air_magics.copy(["/Volumes/main/raw/img/data"], str(dest), store=store, overwrite=True)
    assert r4.copied == 120


def test_dry_run_writes_nothing(vol, tmp_path):
    store, _ = vol
    r = air_magics.copy(["/Volumes/main/raw/img/data"], str(tmp_path / "out"), store=store, dry_run=True)
    assert r.dry_run and r.copied == 120 and "would copy" in r.summary()
    assert not (tmp_path / "out").exists()


def test_vanished_source_is_reported_others_land(vol, tmp_path):
    store, hashes = vol
    plan = plan_copy(["/Volumes/main/raw/img/data"], str(tmp_path / "out"), store=store)
    gone = plan.tasks[7].src.path
    os.unlink(gone)
    r = copy_files(plan.tasks, workers=4, dest=plan.dest)
    assert not r.ok and r.copied == 119
    assert [f.src for f in r.failed] == [gone] and "FileNotFoundError" in r.failed[0].reason
    assert r.failed[0].attempts == 1  # permanent errors are not retried
    assert gone in str(r) and "FAILED" in r.summary() and gone in r._repr_html_()
    assert not list((tmp_path / "out").rglob(f"*{TEMP_MARK}*"))


def test_volume_to_volume_through_fsspec(vol, tmp_path):
    store, hashes = vol
    store.register("ext.mem.copy", "memory://air-transfer-test")
    r = air_magics.copy(["/Volumes/main/raw/img/data"], "/Volumes/ext/mem/copy/backup", store=store)
    assert r.ok and r.copied == 120
    r = air_magics.copy(["/Volumes/main/raw/img/data"], "/Volumes/ext/mem/copy/backup", store=store)
    assert r.skipped == 120
    # and back out of the fsspec volume to local disk, content intact
    r = air_magics.copy(["/Volumes/ext/mem/copy/backup/data"], str(tmp_path / "back"), store=store)
    assert r.copied == 120
    check_dest(tmp_path / "back", hashes)


def test_bad_worker_count(vol, tmp_path):
    with pytest.raises(ValueError, match="workers"):
        copy_files([], workers=0)


def test_is_transient():
    assert is_transient(OSError(errno.EIO, "io"))
    assert is_transient(TimeoutError()) and is_transient(ConnectionResetError())
    assert not is_transient(FileNotFoundError(errno.ENOENT, "x"))
    assert not is_transient(PermissionError(errno.EACCES, "x"))


def test_large_file_is_copied_in_parallel_ranges_intact(tmp_path):
    store = VolumeStore()
    store.create("main.raw.big")
    src = store.locate("/Volumes/main/raw/big/blob.bin").path
    with open(src, "wb") as f:  # above the one-read limit: ranged copy, never whole in memory
        for _ in range(9):
            f.write(os.urandom(8 << 20))
    r = air_magics.copy(["/Volumes/main/raw/big/blob.bin"], str(tmp_path / "out"), store=store)
    assert r.ok and r.bytes_copied == 72 << 20
    assert sha(tmp_path / "out" / "blob.bin") == sha(src)
    assert os.stat(tmp_path / "out" / "blob.bin").st_mtime == pytest.approx(os.stat(src).st_mtime, abs=1e-6)
    store.register("ext.mem.big", "memory://air-big")  # and streamed to an fsspec volume
    r = air_magics.copy(["/Volumes/main/raw/big/blob.bin"], "/Volumes/ext/mem/big", store=store)
    assert r.ok and store.stat("/Volumes/ext/mem/big/blob.bin").size == 72 << 20
    # back from the fsspec volume (streamed): the listing's mtime is stamped, so a re-run skips it
    back = tmp_path / "back"
    r = air_magics.copy(["/Volumes/ext/mem/big/blob.bin"], str(back), store=store)
    assert r.ok and r.copied == 1 and sha(back / "blob.bin") == sha(src)
    assert os.stat(back / "blob.bin").st_mtime == pytest.approx(
        store.stat("/Volumes/ext/mem/big/blob.bin").mtime, abs=1e-3
    )
    r = air_magics.copy(["/Volumes/ext/mem/big/blob.bin"], str(back), store=store)
    assert (r.copied, r.skipped) == (0, 1)


def test_named_copy_publishes_a_job_document(vol, tmp_path):
    from air_magics.status import read_status

    r = air_magics.copy(["/Volumes/main/raw/img/data"], str(tmp_path / "j"), store=vol[0], job="abc")
    doc = read_status("job-copy-abc")
    assert doc["kind"] == "copy" and doc["state"] == "done" and doc["files_done"] == r.copied == 120


def test_a_file_with_a_244_character_name_is_copied(tmp_path):
    """A legal long name used to fail: its temp name passed the 255-byte NAME_MAX."""
    store = VolumeStore()
    store.create("main.raw.long")
    name = "n" * 240 + ".bin"
    with store.open(f"/Volumes/main/raw/long/d/{name}", "wb") as f:
        f.write(b"x" * 5000)
    r = air_magics.copy(["/Volumes/main/raw/long/d"], str(tmp_path / "out"), store=store)
    assert r.ok and r.copied == 1, r.summary()
    assert os.listdir(tmp_path / "out" / "d") == [name] and (tmp_path / "out" / "d" / name).read_bytes() == b"x" * 5000
    r = air_magics.copy(["/Volumes/main/raw/long/d"], "/Volumes/main/raw/long/back", store=store)  # volume to volume
    assert r.ok and r.copied == 1, r.summary()


def test_a_forgotten_folder_descriptor_stays_open_for_whoever_holds_it(tmp_path):
    """A kept folder's descriptor is dropped (its folder removed since) while another thread may be
    creating a file through it: it must stay open until the DirMaker closes (it was closed at once,
    and a copy in another thread failed with EBADF, or could have written through a reused number)."""
    from air_magics.transfer.file import DirMaker
    from air_magics.volumes.location import Location

    dst = Location(str(tmp_path / "d" / "f.bin"), root=str(tmp_path))
    dirs = DirMaker()
    with dirs.folder(dst) as fd:
        dirs.forget(dst)
        os.fstat(fd)  # still ours
        with dirs.folder(dst) as again:
            assert again != fd  # opened anew for the next user
    dirs.close()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_missing_source_does_not_drop_the_destination_folder(tmp_path):
    from air_magics.transfer import CopyTask, copy_one
    from air_magics.transfer.file import DirMaker
    from air_magics.volumes.location import Location
    from air_magics.volumes.resolved import VolumeFile

    dirs = DirMaker()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.bin").write_bytes(b"a")
    dst = lambda n: Location(str(tmp_path / "dst" / n), root=str(tmp_path / "dst"))  # noqa: E731
    copy_one(
        CopyTask(VolumeFile(str(tmp_path / "src" / "a.bin"), Location(str(tmp_path / "src" / "a.bin"))), dst("a.bin")),
        dirs=dirs,
    )
    with dirs.folder(dst("x")) as held:
        with pytest.raises(FileNotFoundError):
            copy_one(
                CopyTask(
                    VolumeFile(str(tmp_path / "src" / "gone.bin"), Location(str(tmp_path / "src" / "gone.bin"))),
                    dst("gone.bin"),
                ),
                dirs=dirs,
            )
        with dirs.folder(dst("y")) as same:
            assert same == held  # still the kept descriptor
        os.fstat(held)
    dirs.close()
