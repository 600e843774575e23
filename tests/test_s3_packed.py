"""Packed folders on object storage (issue 51 items 2 and 7), on a real S3 server (SeaweedFS) reached
through a counting proxy: packing INTO a registered S3 volume and a local packed folder copied up,
both read with the defaults (the DataLoader's forked workers, ``iter()``), as paths and as bytes,
every member exactly once with its bytes (sha256); the first item arrives while the rest of its
shard's reads are held back at the proxy (what was fetched, not how long it took); a member changed
on the store is refused by name."""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter
from pathlib import Path

import pytest

from air_magics.errors import ShardError
from air_magics.volumes import VolumeStore
from benchmarks.harness.delayproxy import DelayProxy

SRC = "/Volumes/main/local/src"
PACKS = "/Volumes/main/s3/packs"
N_FILES = 240


def _files() -> dict[str, bytes]:
    rng = random.Random(51)
    return {f"c{i % 4}/f{i:04d}.bin": rng.randbytes(rng.randint(1, 160 * 1024)) for i in range(N_FILES)}


FILES = _files()
HASHES = {k: hashlib.sha256(v).hexdigest() for k, v in FILES.items()}


@pytest.fixture
def proxy(s3_server):
    with DelayProxy(("127.0.0.1", s3_server.port)) as p:
        yield p


@pytest.fixture
def stores(s3_env, s3_server, proxy, monkeypatch):
    """``main.local.src`` (a local volume holding the source files) and ``main.s3.packs`` registered to a
    fresh bucket through the proxy; returns ``(store, bucket)``."""
    bucket = s3_server.make_bucket()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    store = VolumeStore()
    store.register("main.s3.packs", f"s3://{bucket}")
    store.create("main.local.src")
    root = Path(store.locate(SRC).path)
    for name, data in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return store, bucket


def _check_paths(items: list) -> None:
    got = Counter(str(p) for p in items)
    assert len(got) == len(items) == N_FILES, "every member exactly once"
    by_name = {}
    for p in got:
        rel = "/".join(Path(p).parts[-2:])
        by_name[rel] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    assert by_name == HASHES


def _check_bytes(items: list) -> None:
    assert sorted(hashlib.sha256(bytes(b)).hexdigest() for b in items) == sorted(HASHES.values())


def _tar_gets(proxy: DelayProxy) -> list[str]:
    return [path for method, path in proxy.log if method == "GET" and path.split("?")[0].endswith(".tar")]


def test_pack_into_an_s3_volume_and_read_it_with_the_defaults(stores, proxy, s3_server):
    from air_magics.data import DataLoader, UCVolumeDataset
    from air_magics.shards import pack

    store, bucket = stores
    report = pack(SRC, f"{PACKS}/train", shard_size="4MiB")
    assert report.files == N_FILES and report.shards_written >= 4
    names = {p.rsplit("/", 1)[1] for p in s3_server.admin.ls(f"{bucket}/train")}
    assert "air-shards.json" in names and sum(n.endswith(".tar") for n in names) == report.shards_written

    ds = UCVolumeDataset(f"{PACKS}/train")
    proxy.reset()
    _check_paths(list(DataLoader(ds, batch_size=None)))  # the default output: a local file per member
    assert _tar_gets(proxy), "the members came from the shards on the store"
    _check_bytes(list(DataLoader(UCVolumeDataset(f"{PACKS}/train", output="bytes"), batch_size=None)))


def test_a_local_packed_folder_copied_up_reads_with_iter(stores):
    import air_magics
    from air_magics.data import UCVolumeDataset
    from air_magics.shards import pack

    store, _ = stores
    store.create("main.local.packed")
    pack(SRC, "/Volumes/main/local/packed/train", shard_size="4MiB")
    report = air_magics.copy(["/Volumes/main/local/packed/train"], f"{PACKS}/")
    assert report.ok
    _check_paths(list(UCVolumeDataset(f"{PACKS}/train", shuffle=True, seed=3)))
    _check_bytes(list(UCVolumeDataset(f"{PACKS}/train", output="bytes")))


@pytest.mark.parametrize("output", ["path", "bytes"])
def test_the_first_item_arrives_while_the_rest_of_its_shard_is_held_back(stores, proxy, output):
    """One 19 MiB shard: every read of it past the first item's member is held at the proxy; the first
    item still arrives (its bytes checked), then the held reads go and the epoch completes."""
    from air_magics.data import UCVolumeDataset
    from air_magics.shards import pack

    pack(SRC, f"{PACKS}/one", shard_size="64MiB")
    ds = UCVolumeDataset(f"{PACKS}/one", output=output)
    first = ds.files[0].member.member
    shard_bytes = ds.files[0].member.folder.manifest.shards[0].bytes
    assert first.offset + first.size < shard_bytes - (1 << 20), "the data leaves a block after the first item"

    def held(method: str, path: str, headers: dict[str, str]) -> bool:
        if method != "GET" or not path.split("?")[0].endswith(".tar"):
            return False
        start = int(headers.get("range", "bytes=0-").split("=")[1].split("-")[0])
        return start >= first.offset + first.size

    proxy.hold(held)
    guard = threading.Timer(120, proxy.release)  # never the test's answer: a hang fails below, not forever
    guard.start()
    try:
        it = iter(ds)
        item = next(it)
        released_by_guard = proxy.holding is None
        held_reads = list(proxy.held)
    finally:
        proxy.release()
        guard.cancel()
    assert not released_by_guard, "the first item waited for reads past its own member"
    assert held_reads, "the rest of the shard was still being fetched when the first item arrived"
    data = Path(item).read_bytes() if output == "path" else bytes(item)
    assert hashlib.sha256(data).hexdigest() == HASHES[first.name]
    rest = list(it)
    (_check_paths if output == "path" else _check_bytes)([item, *rest])


def test_a_first_item_deep_in_its_shard_is_read_by_its_own_range(stores, proxy):
    """The first item lies past ``JUMP_AHEAD`` in its shard: every read of the shard but the one of
    that member's own range is held back, and the item still arrives (then the stream steps over it)."""
    from air_magics.data import UCVolumeDataset
    from air_magics.shards import pack
    from air_magics.shards.fetch import JUMP_AHEAD
    from air_magics.shards.verify import header_start

    pack(SRC, f"{PACKS}/deep", shard_size="64MiB")
    ds = UCVolumeDataset(f"{PACKS}/deep")
    ref = ds.files[0].member
    members = ref.folder.shard_members[ref.shard]
    j = members.index(ref.member)
    assert ref.member.offset >= JUMP_AHEAD and j < len(members) - 1, "the data puts the first item deep in"
    own = header_start(members, j)

    def held(method: str, path: str, headers: dict[str, str]) -> bool:
        if method != "GET" or not path.split("?")[0].endswith(".tar"):
            return False
        return int(headers.get("range", "bytes=0-").split("=")[1].split("-")[0]) != own

    proxy.hold(held)
    guard = threading.Timer(120, proxy.release)  # a hang fails below instead of hanging the run
    guard.start()
    try:
        it = iter(ds)
        item = next(it)
        released_by_guard = proxy.holding is None
    finally:
        proxy.release()
        guard.cancel()
    assert not released_by_guard, "the first item waited for its shard's stream"
    assert hashlib.sha256(Path(item).read_bytes()).hexdigest() == HASHES[ref.member.name]
    _check_paths([item, *it])
    assert ref.folder.extractor(ds.cache).jumps >= 1


@pytest.mark.parametrize("output", ["path", "bytes"])
def test_a_member_changed_on_the_store_is_refused_by_name(stores, s3_server, output):
    from air_magics.data import UCVolumeDataset
    from air_magics.shards import pack

    _, bucket = stores
    pack(SRC, f"{PACKS}/bad", shard_size="64MiB")
    ds = UCVolumeDataset(f"{PACKS}/bad", output=output)
    folder = ds.files[0].member.folder
    victim = folder.shard_members[0][len(folder.shard_members[0]) // 2]
    key = f"{bucket}/bad/{folder.manifest.shards[0].name}"
    raw = bytearray(s3_server.admin.cat_file(key))
    raw[victim.offset + victim.size // 2] ^= 0xFF  # same size, one byte of one member changed
    s3_server.admin.pipe_file(key, bytes(raw))
    with pytest.raises(ShardError, match=rf"{victim.name}.*pack the source again"):
        list(ds)
