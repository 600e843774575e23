"""Members read straight from the cached shard by offset: the same bytes as the source, no local
file per member, a file object PIL decodes, the warm no-wait path, processes sharing one fetch, and
every damage (on the volume, in the cached copy, in a crafted index) one ShardError naming the shard."""

import hashlib
import io
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

from air_magics.cache import FileCache
from air_magics.errors import ShardError
from air_magics.shards import MANIFEST_NAME, open_packed, pack, prune_extracted
from air_magics.shards.shard_order import shard_sequence
from air_magics.shards.shard_source import PLANNED_AHEAD
from air_magics.volumes import VolumeStore

SRC, DEST = "/Volumes/main/raw/img/train", "/Volumes/main/raw/img/packed"
N = 40


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    root = Path(s.locate(SRC).path)
    for i in range(N):
        p = root / f"c{i % 3}" / f"{i:03d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(hashlib.sha256(b"%d" % i).digest() * (i * 20))  # member 0 is empty
    return s


def _source(store):
    src = Path(store.locate(SRC).path)
    return {p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*") if p.is_file()}


def _dest(store):
    return Path(store.locate(DEST).path)


def _flip(path: Path, offset: int) -> None:
    st = path.stat()
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0x01
    path.write_bytes(raw)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _read_all(folder, cache):
    for ref in folder.members:
        ref.read_bytes(cache)
    n = len(folder.manifest.shards)  # a shard's last member is served just before its file is renamed
    rd = folder.reader(cache)
    assert _wait_complete(rd, range(n)) == set(range(n))
    # and its index entry is written just after: a fetch is done when its driver thread is (a prune
    # that ran between the rename and the entry missed that shard: 9 of 10, seen once under load)
    rd._drivers.shutdown(wait=True)  # noqa: SLF001


def test_read_bytes_gives_every_member_without_a_file_per_member(vol, tmp_path):
    r = pack(SRC, DEST, shard_size="64KiB")
    folder = open_packed(vol, DEST)
    cache = FileCache(root=tmp_path / "cache")
    assert {ref.name: ref.read_bytes(cache) for ref in folder.members} == _source(vol)
    # a shard's last member is served as soon as it verifies, just before the file is renamed
    assert _wait_complete(folder.reader(cache), range(r.shards)) == set(range(r.shards))
    files = [p for p in (tmp_path / "cache" / "files").rglob("*") if p.is_file()]
    tars = [p for p in files if re.search(r"\.tar@[0-9a-f]{8}$", p.name)]
    assert len(tars) == r.shards  # one cached file per shard, nothing per member
    assert not [p for p in files if p not in tars and not p.name.endswith(".lock")]
    assert cache.total_bytes == sum(s.bytes for s in folder.manifest.shards)  # each an entry of the cache
    for i in range(r.shards):  # each cached file is the shard, byte for byte
        assert folder.cached_shard(cache, i).read_bytes() == (_dest(vol) / folder.manifest.shards[i].name).read_bytes()
    assert folder.reader(cache).shards_fetched == r.shards


def test_open_is_a_seekable_read_only_file_over_the_member(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    ref = next(r for r in folder.members if r.member.size > 1000)
    want = _source(vol)[ref.name]
    with ref.open(cache) as f:
        assert f.name == ref.name and f.readable() and f.seekable() and not f.writable()
        assert f.read(10) == want[:10] and f.tell() == 10
        f.seek(-5, io.SEEK_END)
        assert f.read() == want[-5:] and f.read() == b""
        f.seek(3)
        buf = bytearray(7)
        assert f.readinto(buf) == 7 and bytes(buf) == want[3:10]
        f.seek(0)
        assert f.read() == want
        with pytest.raises(OSError):
            f.write(b"x")
    assert f.closed


def test_pil_decodes_a_member_from_its_file_object_and_its_bytes(vol, tmp_path):
    Image = pytest.importorskip("PIL.Image")
    img = Image.new("RGB", (23, 17), (200, 30, 90))
    png = io.BytesIO()
    img.save(png, format="PNG")
    (Path(vol.locate(SRC).path) / "img.png").write_bytes(png.getvalue())
    pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    ref = next(r for r in folder.members if r.name == "img.png")
    with Image.open(ref.open(cache)) as a:
        assert a.size == (23, 17) and a.convert("RGB").getpixel((5, 5)) == (200, 30, 90)
    with Image.open(io.BytesIO(ref.read_bytes(cache))) as b:
        assert b.size == (23, 17)


def test_ready_bytes_is_none_until_this_process_has_the_member(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    ref = folder.members[5]
    assert ref.ready_bytes() is None
    data = ref.read_bytes(cache)
    assert ref.ready_bytes() == data
    again = pickle.loads(pickle.dumps(folder))  # a worker's copy starts without this process's maps
    ref2 = again.members[5]
    assert ref2.ready_bytes() is None
    assert ref2.read_bytes(cache) == data and ref2.ready_bytes() == data  # from the cached file, checked
    assert again.reader(cache).shards_fetched == 0  # nothing fetched again


def test_a_damaged_shard_on_the_volume_is_a_shard_error_naming_it(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    folder = open_packed(vol, DEST)
    i, members = 0, folder.shard_members[0]
    bad = members[3]
    _flip(_dest(vol) / folder.manifest.shards[i].name, bad.offset + bad.size // 2)
    cache, src = FileCache(root=tmp_path / "cache"), _source(vol)
    for m in members[:3]:  # verified before the damage: served
        ref = next(r for r in folder.members if r.name == m.name)
        assert ref.read_bytes(cache) == src[m.name]
    ref = next(r for r in folder.members if r.name == bad.name)
    with pytest.raises(ShardError, match=rf"shard {DEST}/{folder.manifest.shards[i].name}: member {bad.name!r}"):
        ref.read_bytes(cache)
    with pytest.raises(ShardError, match="pack the source again"):  # and every later member of it
        next(r for r in folder.members if r.name == members[-1].name).read_bytes(cache)
    assert not folder.cached_shard(cache, i).exists()  # nothing damaged is left in the cache


def test_a_cached_copy_damaged_on_local_disk_is_refused_by_name(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    _read_all(folder, cache)
    i, m = 1, folder.shard_members[1][2]
    tar = folder.cached_shard(cache, i)
    _flip(tar, m.offset + m.size // 2)
    fresh = open_packed(vol, DEST)  # another process: checks each member once before serving it
    ref = next(r for r in fresh.members if r.name == m.name)
    with pytest.raises(
        ShardError, match=rf"shard {DEST}/.*member {m.name!r} in the cached copy {re.escape(str(tar))} .*delete"
    ):
        ref.read_bytes(cache)
    with pytest.raises(ShardError):
        ref.open(cache)
    other = next(r for r in fresh.members if r.shard == i and r.name != m.name)
    assert other.read_bytes(cache) == _source(vol)[other.name]  # the rest of the shard is intact
    prune_extracted(cache)
    assert fresh.members[0].read_bytes(cache) == _source(vol)[fresh.members[0].name]
    assert ref.read_bytes(cache) == _source(vol)[m.name]  # pruned: fetched again, whole


def test_a_crafted_index_pointing_a_name_at_another_members_bytes_serves_nothing_foreign(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    d = _dest(vol)
    doc = json.loads((d / MANIFEST_NAME).read_text())
    s = doc["shards"][0]
    ix = json.loads((d / s["index"]).read_text())
    ms = ix["members"]
    ms[1][0], ms[2][0] = ms[2][0], ms[1][0]  # names swapped, checksums kept with their names' bytes
    raw = json.dumps(ix).encode()
    (d / s["index"]).write_bytes(raw)
    s["index_crc32"] = zlib.crc32(raw)
    (d / MANIFEST_NAME).write_text(json.dumps(doc))
    folder, cache, src = open_packed(vol, DEST), FileCache(root=tmp_path / "cache"), _source(vol)
    errors = []
    for ref in (r for r in folder.members if r.shard == 0):
        try:
            assert ref.read_bytes(cache) == src[ref.name]
        except ShardError as exc:
            errors.append(str(exc))
    assert errors and "tar header" in errors[0] and "pack the source again" in errors[0]


def test_prune_extracted_removes_cached_shards_but_keeps_those_asked_for(vol, tmp_path):
    r = pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    _read_all(folder, cache)
    assert prune_extracted(cache, keep=[folder]) == 0
    assert all(folder.cached_shard(cache, i).exists() for i in range(r.shards))
    assert prune_extracted(cache) == r.shards
    assert not [p for p in (tmp_path / "cache" / "files").rglob("shard-*")]
    assert cache.total_bytes == 0


_READ_ALL = textwrap.dedent("""
    import hashlib, json, sys
    from air_magics.cache import FileCache
    from air_magics.shards import open_packed
    from air_magics.volumes import VolumeStore
    folder = open_packed(VolumeStore(), sys.argv[1])
    cache = FileCache(root=sys.argv[2])
    got = {r.name: hashlib.sha256(r.read_bytes(cache)).hexdigest() for r in folder.members}
    rd = folder.reader(cache)
    rd._drivers.shutdown(wait=True)  # noqa: SLF001 - a read-ahead fetch still running counts once done
    print(json.dumps({"got": got, "fetched": rd.shards_fetched}))
""")


def test_processes_share_one_fetch_per_shard(vol, tmp_path):
    hashes = {k: hashlib.sha256(v).hexdigest() for k, v in _source(vol).items()}
    r = pack(SRC, DEST, shard_size="64KiB")
    script = tmp_path / "read_all.py"
    script.write_text(_READ_ALL)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), DEST, str(tmp_path / "cache")], stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(o["got"] == hashes for o in outs)
    assert sum(o["fetched"] for o in outs) == r.shards  # each shard fetched by exactly one of them


def _wait_complete(reader, shards, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not all(reader.complete(i) for i in shards) and time.monotonic() < deadline:
        time.sleep(0.01)
    return {i for i in range(len(reader.source.shards)) if reader.complete(i)}


def test_plan_reads_fetches_ahead_in_the_planned_order(vol, tmp_path):
    r = pack(SRC, DEST, shard_size="16KiB")
    assert r.shards > PLANNED_AHEAD + 2
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    seq = list(range(r.shards))[::-1]  # the order a stream will need them in
    items = [k for s in seq for k, ref in enumerate(folder.members) if ref.shard == s]
    assert shard_sequence([ref.shard for ref in folder.members], items) == seq
    folder.plan_reads(cache, seq)
    reader = folder.reader(cache)
    assert _wait_complete(reader, seq[: 1 + PLANNED_AHEAD]) == set(seq[: 1 + PLANNED_AHEAD])  # nothing read yet
    ref = next(x for x in folder.members if x.shard == seq[2])
    assert ref.read_bytes(cache) == _source(vol)[ref.name]
    want = set(seq[: 3 + PLANNED_AHEAD])  # reading plan[2] keeps PLANNED_AHEAD shards ahead of it
    assert _wait_complete(reader, want) == want


def test_a_truncated_shard_on_the_volume_serves_nothing_of_it(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    name = folder.manifest.shards[0].name
    tar = _dest(vol) / name
    tar.write_bytes(tar.read_bytes()[:-2048])
    for ref in (r for r in folder.members if r.shard == 0):
        with pytest.raises(
            ShardError, match=rf"shard {DEST}/{name} is \d+ bytes but its index says .*pack the source again"
        ):
            ref.read_bytes(cache)
    assert not folder.cached_shard(cache, 0).exists()
    other = next(r for r in folder.members if r.shard == 1)
    assert other.read_bytes(cache) == _source(vol)[other.name]  # the other shards are unaffected


def test_numpy_and_torch_load_a_member_from_its_file_object(vol, tmp_path):
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    root = Path(vol.locate(SRC).path)
    np.save(root / "a.npy", np.arange(12).reshape(3, 4))
    torch.save({"w": torch.ones(2, 3)}, root / "t.pt")
    pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    by_name = {r.name: r for r in folder.members}
    assert np.load(by_name["a.npy"].open(cache)).tolist() == np.arange(12).reshape(3, 4).tolist()
    assert torch.equal(torch.load(by_name["t.pt"].open(cache))["w"], torch.ones(2, 3))
    t = torch.frombuffer(bytearray(by_name["a.npy"].read_bytes(cache)), dtype=torch.uint8)  # decode_image's input
    assert t.numel() == by_name["a.npy"].member.size


@pytest.mark.timeout(60)  # a reader that only waited for the lock would hang here
def test_members_are_read_from_another_processs_part_file_as_they_verify(vol, tmp_path):
    """Another process holds the fetch lock and writes the part file: members whose bytes are in
    (and verify) are served from it; one whose bytes are not in yet (zeros, or half written) waits,
    and is served once the holder finishes."""
    from concurrent.futures import ThreadPoolExecutor

    from air_magics.io.locks import ProcessFileLock

    pack(SRC, DEST, shard_size="64KiB")
    folder, cache = open_packed(vol, DEST), FileCache(root=tmp_path / "cache")
    i, members = 0, folder.shard_members[0]
    raw = (_dest(vol) / folder.manifest.shards[i].name).read_bytes()
    final = folder.cached_shard(cache, i)
    final.parent.mkdir(parents=True, exist_ok=True)
    holder = ProcessFileLock(f"{final}.lock")  # another open file: flock excludes this process's reader too
    holder.acquire()
    key = folder.source.cache_key(i)
    assert cache.claims.claim(key, len(raw)) == str(final)  # as a fetching process does: the room claimed first
    try:
        early, late = members[1], members[-1]
        part = bytearray(len(raw))
        cut = late.offset + late.size // 2  # the last member half written
        part[:cut] = raw[:cut]
        Path(f"{final}.part").write_bytes(part)
        src, refs = _source(vol), {r.name: r for r in folder.members}
        assert refs[early.name].read_bytes(cache) == src[early.name]
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(refs[late.name].read_bytes, cache)
            time.sleep(0.3)
            assert not waiting.done()  # not served: its bytes do not verify yet
            Path(f"{final}.part").write_bytes(raw)
            os.replace(f"{final}.part", final)
            cache.claims.commit(key, len(raw))
            holder.release()
            assert waiting.result(timeout=30) == src[late.name]
    finally:
        holder.close()
    assert final.read_bytes() == raw  # the holder's file, untouched: this process fetched nothing of it


def test_a_packed_folder_on_an_fsspec_volume_is_read_by_offset(vol, tmp_path):
    """A remote (fsspec) volume: the shard's ranges come from ``cat_file`` and are copied into the
    cached shard; the same bytes, the same checks."""
    import uuid

    import fsspec

    pack(SRC, DEST, shard_size="64KiB")
    url = f"memory://packed-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    for p in _dest(vol).iterdir():
        if p.is_file() and not p.name.startswith("."):
            fs.pipe_file(f"{url}/packed/{p.name}", p.read_bytes())
    vol.register("ext.mem.v", url)
    folder = open_packed(vol, "/Volumes/ext/mem/v/packed")
    cache = FileCache(root=tmp_path / "cache", store=vol)
    assert {r.name: r.read_bytes(cache) for r in folder.members} == _source(vol)
    name = folder.manifest.shards[1].name
    raw = bytearray(fs.cat_file(f"{url}/packed/{name}"))
    m = folder.shard_members[1][0]
    raw[m.offset] ^= 0x01
    fs.pipe_file(f"{url}/packed/{name}", bytes(raw))
    fresh = open_packed(vol, "/Volumes/ext/mem/v/packed")
    ref = next(r for r in fresh.members if r.name == m.name)
    with pytest.raises(ShardError, match=rf"member {m.name!r} does not match the checksum"):
        ref.read_bytes(FileCache(root=tmp_path / "cache2", store=vol))


def test_a_finished_shard_from_elsewhere_is_checked_once_however_many_threads_ask(vol, tmp_path, monkeypatch):
    """Another process's finished cached shard is checked whole on first use: by one thread, while
    the others asking for its members meanwhile wait and find it done (32 prefetch threads each
    checked the whole shard again)."""
    from concurrent.futures import ThreadPoolExecutor

    from air_magics.shards import shard_reader as cached

    pack(SRC, DEST, shard_size="1MiB")  # one shard
    cache = FileCache(root=tmp_path / "cache")
    _read_all(open_packed(vol, DEST), cache)  # "another process" fetched it
    calls = []
    real = cached.ShardReader._verify_all

    def counted(self, *a):
        calls.append(a[0])
        time.sleep(0.05)  # long enough for every thread to arrive while it runs
        return real(self, *a)

    monkeypatch.setattr(cached.ShardReader, "_verify_all", counted)
    fresh = open_packed(vol, DEST)
    with ThreadPoolExecutor(16) as ex:
        got = dict(
            zip([r.name for r in fresh.members], ex.map(lambda r: r.read_bytes(cache), fresh.members), strict=True)
        )
    assert got == _source(vol)
    assert calls == [0]
