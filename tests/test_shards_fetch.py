"""Fetching shards for a dataset: members served before their shard has fully arrived (on a slow
FUSE volume), the next shard read ahead, and processes sharing one fetch per shard."""

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from air_magics.cache import FileCache
from air_magics.shards import open_packed, pack
from air_magics.volumes import VolumeStore

SRC, DEST = "/Volumes/main/raw/img/train", "/Volumes/main/raw/img/packed"


def _seed(root: Path, n: int, size: int) -> dict[str, str]:
    out = {}
    for i in range(n):
        data = hashlib.sha256(str(i).encode()).digest() * (size // 32)
        p = root / f"d{i % 3}" / f"{i:04d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        out[f"d{i % 3}/{i:04d}.bin"] = hashlib.sha256(data).hexdigest()
    return out


@pytest.mark.fuse
def test_first_member_is_served_before_its_shard_has_arrived(slowfs, tmp_path, monkeypatch):
    backing = tmp_path / "backing"
    hashes = _seed(backing / "main" / "raw" / "img" / "train", 200, 128 << 10)  # 25 MiB: one shard
    with slowfs.mounted(backing, tmp_path / "mnt", op_latency_ms=2, read_latency_ms=2, mbps=40):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        store = VolumeStore()
        pack(SRC, DEST, store=store)
        folder = open_packed(store, DEST)
        assert len(folder.manifest.shards) == 1
        cache = FileCache(root=tmp_path / "cache", store=store)
        first = folder.members[0]
        p = first.local_path(cache)
        ex = folder.extractor(cache)
        assert not ex.complete(0)  # served while the rest of the shard is still on its way
        assert hashlib.sha256(Path(p).read_bytes()).hexdigest() == hashes[first.member.name]
        got = {
            r.member.name: hashlib.sha256(Path(r.local_path(cache)).read_bytes()).hexdigest() for r in folder.members
        }
        assert got == hashes
        deadline = time.monotonic() + 30  # the marker is written just after the last member is handed out
        while not ex.complete(0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ex.complete(0)


def test_asking_for_a_shard_reads_the_next_one_ahead(tmp_path):
    s = VolumeStore()
    s.create("main.raw.img")
    _seed(Path(s.locate(SRC).path), 30, 4096)
    pack(SRC, DEST, shard_size="32KiB")
    folder = open_packed(s, DEST)
    assert len(folder.manifest.shards) > 3
    cache = FileCache(root=tmp_path / "cache")
    order = [r.shard for r in folder.members]
    first, second = order[0], next(i for i in order if i != order[0])
    assert folder.next_shard[first] == second
    folder.members[0].local_path(cache)
    ex = folder._extractor
    ex._drivers.shutdown(wait=True)  # let the fetches started so far finish
    done = {i for i in range(len(folder.manifest.shards)) if ex.complete(i)}
    assert done == {first, second}


_READ_ALL = textwrap.dedent("""
    import hashlib, json, sys
    from air_magics.cache import FileCache
    from air_magics.shards import open_packed
    from air_magics.volumes import VolumeStore
    folder = open_packed(VolumeStore(), sys.argv[1])
    cache = FileCache(root=sys.argv[2])
    got = {r.member.name: hashlib.sha256(open(r.local_path(cache), "rb").read()).hexdigest() for r in folder.members}
    ex = folder._extractor
    ex._drivers.shutdown(wait=True)  # a read-ahead fetch still running counts once it is done
    print(json.dumps({"got": got, "fetched": ex.shards_fetched}))
""")


def test_processes_share_one_fetch_per_shard(tmp_path):
    s = VolumeStore()
    s.create("main.raw.img")
    hashes = _seed(Path(s.locate(SRC).path), 60, 20000)
    r = pack(SRC, DEST, shard_size="128KiB")
    script = tmp_path / "read_all.py"
    script.write_text(_READ_ALL)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), DEST, str(tmp_path / "cache")],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ,
        )
        for _ in range(3)
    ]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(o["got"] == hashes for o in outs)
    assert sum(o["fetched"] for o in outs) == r.shards  # each shard fetched by exactly one of them


def test_prune_extracted_frees_folders_and_their_locks(tmp_path):
    from air_magics.shards import prune_extracted

    s = VolumeStore()
    s.create("main.raw.img")
    hashes = _seed(Path(s.locate(SRC).path), 30, 4096)
    pack(SRC, DEST, shard_size="32KiB")
    cache = FileCache(root=tmp_path / "cache")
    folder = open_packed(s, DEST)
    for r in folder.members:
        r.local_path(cache)
    folder._extractor._drivers.shutdown(wait=True)  # fetches finished (staging folders gone)
    shards = len(folder.manifest.shards)
    root = tmp_path / "cache" / "files"
    assert prune_extracted(cache, keep=[folder]) == 0
    assert len([p for p in root.rglob("shard-*") if p.is_dir()]) == shards
    assert prune_extracted(cache) == shards
    assert not list(root.rglob("shard-*"))  # folders and their .lock and .complete files
    again = open_packed(s, DEST)  # a new reader fetches again
    got = {r.member.name: hashlib.sha256(Path(r.local_path(cache)).read_bytes()).hexdigest() for r in again.members}
    again._extractor._drivers.shutdown(wait=True)  # a fetch counts once its last member is in
    assert got == hashes and again._extractor.shards_fetched == shards


def test_a_plan_makes_extraction_fetch_ahead_in_its_order(tmp_path):
    from air_magics.shards.shard_source import PLANNED_AHEAD

    s = VolumeStore()
    s.create("main.raw.img")
    _seed(Path(s.locate(SRC).path), 40, 4096)
    pack(SRC, DEST, shard_size="16KiB")
    folder = open_packed(s, DEST)
    n = len(folder.manifest.shards)
    assert n > PLANNED_AHEAD + 2
    cache = FileCache(root=tmp_path / "cache")
    seq = list(range(n))[::-1]
    folder.plan_reads(cache, seq, paths=True)
    ex = folder.extractor(cache)
    deadline = time.monotonic() + 30
    want = set(seq[: 1 + PLANNED_AHEAD])
    while not all(ex.complete(i) for i in want) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert {i for i in range(n) if ex.complete(i)} == want  # fetched before any path was asked for
    ref = next(r for r in folder.members if r.shard == seq[2])
    assert Path(ref.local_path(cache)).is_file()
    want = set(seq[: 3 + PLANNED_AHEAD])
    while not all(ex.complete(i) for i in want) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert {i for i in range(n) if ex.complete(i)} == want
    assert not folder.reader(cache).complete(seq[0])  # the reads by offset were not planned: nothing cached
