"""The listing's two walks (volumes/walk.py): the serial one for local disk and the thread pool for
mounts give the same entries and report the same skipped ones, on a tree with every kind of entry."""

import os

import pytest

from air_magics.volumes import VolumeStore
from air_magics.volumes.walk import scan_local, scan_names


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "vol"
    for d in ("a", "a/b", "a/b/c", "e"):
        (root / d).mkdir(parents=True)
    for i, rel in enumerate(["top.bin", "a/1.bin", "a/b/2.bin", "a/b/c/3.bin", "e/4.bin"]):
        (root / rel).write_bytes(b"x" * (10 * i + 1))
    (root / "a" / ".x.air-tmp-1-2").write_bytes(b"temp")  # a leftover: never listed
    os.symlink("1.bin", root / "a" / "inside")  # a link inside the volume: listed
    os.symlink(str(tmp_path), root / "a" / "outside")  # a link to a folder out of it: skipped
    os.symlink(str(tmp_path / "secret"), root / "out.bin")  # a link to a file out of it: skipped
    (tmp_path / "secret").write_bytes(b"s")
    os.symlink("nowhere", root / "e" / "broken")
    os.symlink("loop", root / "e" / "loop")
    os.mkfifo(root / "e" / "pipe")
    return root


@pytest.mark.parametrize("stat", [True, False])
@pytest.mark.parametrize("recursive,with_dirs", [(True, False), (True, True), (False, True)])
def test_serial_walk_lists_what_the_pool_lists(tree, stat, recursive, with_dirs):
    runs = []
    for local_disk in (True, False):
        skipped: list[tuple[str, str]] = []
        out = scan_local(
            tree,
            recursive=recursive,
            with_dirs=with_dirs,
            confine=tree,
            stat=stat,
            skipped=skipped,
            local_disk=local_disk,
        )
        runs.append((out, skipped))
    assert runs[0] == runs[1]
    out, skipped = runs[0]
    names = [e.rel for e in out if not e.is_dir]
    if recursive:
        assert {"top.bin", "a/1.bin", "a/b/2.bin", "a/b/c/3.bin", "e/4.bin"} <= set(names)
        assert not [n for n in names if "air-tmp" in n]
        assert ("e/pipe", "FIFO") in skipped or not stat  # names only: a FIFO is not a regular file either way
        if stat:
            assert "a/inside" in names and "out.bin" not in names
            assert {r for r, _ in skipped} >= {"e/broken", "e/loop", "out.bin"}
    else:
        assert [e.rel for e in out if e.is_dir] == ["a", "e"]
    assert out == sorted(out, key=lambda e: e.rel)


def test_the_embedded_store_walks_serially_and_a_mount_does_not(tmp_path, monkeypatch, slowfs):
    import air_magics.volumes.walk as walk

    monkeypatch.setenv("AIR_VOLUMES_ROOT", str(tmp_path / "volumes"))
    monkeypatch.delenv("AIR_VOLUMES_MOUNT", raising=False)
    store = VolumeStore()
    store.create("main.w.v")
    with store.open("/Volumes/main/w/v/d/f.bin", "wb") as f:
        f.write(b"1")
    seen = []
    real = walk.scan_local

    def spy(*args, **kwargs):
        seen.append(kwargs.get("local_disk"))
        return real(*args, **kwargs)

    monkeypatch.setattr("air_magics.volumes.store.scan_local", spy)
    assert [e.rel for e in store.entries("/Volumes/main/w/v", recursive=True)] == ["d/f.bin"]
    backing = tmp_path / "backing"
    (backing / "main" / "w" / "v" / "d").mkdir(parents=True)
    (backing / "main" / "w" / "v" / "d" / "g.bin").write_bytes(b"2")
    with slowfs.mounted(backing, tmp_path / "mnt", op_latency_ms=1):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        monkeypatch.delenv("AIR_VOLUMES_ROOT")
        assert [e.rel for e in VolumeStore().entries("/Volumes/main/w/v", recursive=True)] == ["d/g.bin"]
    assert seen == [True, False]  # a mount's round trips overlap on the pool


@pytest.mark.parametrize("local_disk", [True, False])
def test_names_alone_are_the_sorted_names_of_the_full_walk(tree, local_disk):
    """``scan_names`` (a dataset's listing) gives what ``scan_local`` gives, names only, in the same
    order, and skips the same entries: on local disk it walks folders in name order (a folder ``a``
    placed as ``a/`` among ``a.txt`` and ``a-b``) instead of sorting everything at the end."""
    for rel in ("a.txt", "a-b", "a0", ".hidden", "e/.x.air-tmp-3-4", "z/.pending-export-1-abcdefabcdef/p.bin"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(b"n")
    os.symlink("4.bin", tree / "e" / ".y.air-tmp-5-6")  # a leftover's name on a link: never listed either
    full_skipped: list[tuple[str, str]] = []
    full = scan_local(tree, confine=tree, stat=False, skipped=full_skipped, local_disk=True)
    skipped: list[tuple[str, str]] = []
    names = scan_names(tree, confine=tree, skipped=skipped, local_disk=local_disk)
    assert names == [e.rel for e in full] == sorted(names)
    assert {"a.txt", "a-b", "a0", ".hidden", "a/inside", "a/b/c/3.bin"} <= set(names)
    assert not [n for n in names if "air-tmp" in n or "pending-export" in n]
    assert names.index("a-b") < names.index("a.txt") < names.index("a/1.bin") < names.index("a0")
    assert skipped == full_skipped and {r for r, _ in skipped} >= {"e/broken", "e/loop", "out.bin"}
    assert scan_names(tree / "e", confine=tree, local_disk=local_disk, recursive=False) == ["4.bin"]


def _rows(stats):
    return sorted((stats.names[i], stats.sizes[i], stats.mtimes[i]) for i in range(len(stats)))


@pytest.mark.parametrize("by_find", [True, False])
def test_file_stats_are_the_full_walks_files_by_find_or_not(tree, by_find, monkeypatch):
    """``ls -r``'s listing (GNU find, or the Python walk where find is not GNU's) has exactly the
    files, sizes, mtimes and skipped entries of the serial walk; its rows come out in name order."""
    from air_magics.volumes import filestats

    if not by_find:
        monkeypatch.setattr(filestats, "_gnu_find", lambda: None)
    else:
        assert filestats._gnu_find(), "GNU find is part of the test environment (findutils)"
    walked: list[tuple[str, str]] = []
    full = scan_local(tree, confine=tree, skipped=walked, local_disk=True)
    skipped: list[tuple[str, str]] = []
    told: list[int] = []
    stats = filestats.file_stats(str(tree), confine=str(tree), skipped=skipped, progress=told.append)
    assert _rows(stats) == sorted((e.rel, e.size, pytest.approx(e.mtime, abs=1e-6)) for e in full)
    assert skipped == walked and {why for _, why in skipped} >= {"FIFO", "broken link", "symlink loop"}
    assert list(stats) == sorted(stats, key=lambda e: e.rel) and stats[:2] == list(stats)[:2]
    assert [e.rel for e in stats[:50]] == sorted(e.rel for e in full)
    assert "a/.x.air-tmp-1-2" not in stats.names
    dropped = filestats.file_stats(str(tree), confine=str(tree), drop=("2.bin", "4.bin"))
    assert sorted(dropped.names) == sorted(e.rel for e in full if not e.rel.endswith(("/2.bin", "/4.bin")))


def test_file_stats_fall_back_to_the_python_walk_where_find_says_anything(tree):
    """find that prints a message (here: the folder is gone) gives no listing of its own; the
    Python walk's answer stands (a gone root raises, as every listing's does)."""
    from air_magics.volumes import filestats

    gone = tree / "gone"
    names, odd, sizes, mtimes = [], [], filestats.array("q"), filestats.array("d")
    run = filestats._start(str(tree), ["./a", "./gone"], str(tree.parent / "cols"), ())
    assert not filestats._collect(*run, names, sizes, mtimes, odd)
    assert "No such file" in open(run[1]["err"]).read()
    with pytest.raises(FileNotFoundError):
        filestats.file_stats(str(gone))
