"""pack(engine="spark") against the embedded local Spark Connect server: Spark tasks write the
same shards (names, members, bytes) as the local engine, incrementally, and a task's failure
publishes nothing."""

import hashlib
import json
import os
from pathlib import Path

import pytest

from air_magics.data import UCVolumeDataset
from air_magics.errors import PackError
from air_magics.shards import MANIFEST_NAME, pack
from air_magics.volumes import VolumeStore

pytestmark = pytest.mark.spark

SRC = "/Volumes/main/raw/img/train"
LOCAL, SPARK = "/Volumes/main/raw/img/packed_local", "/Volumes/main/raw/img/packed_spark"
N = 90


@pytest.fixture
def vol(shared_spark):
    """Spark tasks on the run's shared embedded server (conftest ``spark_server``)."""
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(N):
        _write(s, f"c{i % 4}/{i:03d}.bin", f"item {i} ".encode() * (i * 37 + 3))
    return s


def _write(store, rel, data):
    with store.open(f"{SRC}/{rel}", "wb") as f:
        f.write(data)


def _folder(store, path):
    return Path(store.locate(path).path)


def _shards(store, path):
    """Each shard's name, member names and sizes, and its bytes' SHA-256, from the manifest."""
    root = _folder(store, path)
    doc = json.loads((root / MANIFEST_NAME).read_text())
    out = []
    for s in doc["shards"]:
        ix = json.loads((root / s["index"]).read_text())
        members = [(m[0], m[2]) for m in ix["members"]]
        out.append((s["name"], members, hashlib.sha256((root / s["name"]).read_bytes()).hexdigest()))
    return out


def _content(paths):
    return {"/".join(Path(p).parts[-2:]): hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths}


def test_spark_packs_the_same_members_as_local(vol):
    a = pack(SRC, LOCAL, shard_size="32KiB", engine="local")
    progress = []
    b = pack(SRC, SPARK, shard_size="32KiB", engine="spark", listeners=[lambda e: progress.append(e.progress)])
    assert b.files == a.files == N and b.shards == a.shards > 3 and b.shards_written == b.shards
    assert _shards(vol, SPARK) == _shards(vol, LOCAL)  # same shard names, members, sizes and bytes
    assert progress[-1].files_done == N and progress[-1].shards_done == b.shards
    got = _content(UCVolumeDataset(SPARK))
    assert got == _content(UCVolumeDataset(SRC)) and len(got) == N
    assert not [n for n in os.listdir(_folder(vol, SPARK)) if ".air-tmp-" in n]


def test_spark_repack_is_incremental(vol):
    pack(SRC, SPARK, shard_size="32KiB", engine="spark")
    pack(SRC, LOCAL, shard_size="32KiB", engine="local")
    assert pack(SRC, SPARK, shard_size="32KiB", engine="spark").unchanged
    for i in range(5):
        _write(vol, f"zz/new{i}.bin", os.urandom(3000))
    r = pack(SRC, SPARK, shard_size="32KiB", engine="spark")
    assert r.generation == 2 and r.files == N + 5 and r.shards_kept == r.shards - r.shards_written > 0
    assert pack(SRC, LOCAL, shard_size="32KiB", engine="local").shards_written == r.shards_written
    assert sorted(_shards(vol, SPARK)) == sorted(_shards(vol, LOCAL))


def test_a_failing_spark_task_publishes_nothing(vol, monkeypatch):
    from air_magics.shards import writer

    pack(SRC, SPARK, shard_size="32KiB", engine="spark")
    before = (_folder(vol, SPARK) / MANIFEST_NAME).read_bytes()
    _write(vol, "c0/new.bin", b"new")
    real = writer._list_source

    def list_then_change(*a, **k):
        files = real(*a, **k)
        (_folder(vol, SRC) / "c0/new.bin").write_bytes(b"grown meanwhile")
        return files

    monkeypatch.setattr(writer, "_list_source", list_then_change)
    with pytest.raises(PackError, match=r"Spark task packing shard-\w+\.tar failed: .*c0/new\.bin changed"):
        pack(SRC, SPARK, shard_size="32KiB", engine="spark")
    assert (_folder(vol, SPARK) / MANIFEST_NAME).read_bytes() == before


def test_unknown_engine_is_one_clear_error(vol):
    with pytest.raises(PackError, match=r"engine='dask': use one of 'local', 'spark'"):
        pack(SRC, SPARK, engine="dask")


def test_magic_packs_with_the_spark_engine(vol, ip, capsys):
    ip.run_line_magic("config", "AirMagics.widgets = False")
    try:
        r = ip.run_line_magic("air_volume", f"pack {SRC} {SPARK} --shard-size 32KiB --engine spark -o rep")
    finally:
        ip.run_line_magic("config", "AirMagics.widgets = True")
    out = capsys.readouterr().out
    assert r.files == N and r.shards_written == r.shards > 3 and str(r) in out
    assert len(list(UCVolumeDataset(SPARK))) == N
