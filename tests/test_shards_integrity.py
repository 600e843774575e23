"""Packed shards under damage and crafted input: no byte that does not match the index is ever
served, every failure is one ShardError naming the shard or member, paths already handed out keep
working, internal names never share the members' namespace, and two packers of one folder (from
different AIR_HOMEs) cannot break it."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest

from air_magics.cache import FileCache
from air_magics.data import UCVolumeDataset
from air_magics.errors import PackError, ShardError
from air_magics.shards import MANIFEST_NAME, open_packed, pack
from air_magics.volumes import VolumeStore

SRC, DEST = "/Volumes/main/raw/img/train", "/Volumes/main/raw/img/packed"
N = 40


def _write(store, rel, data):
    with store.open(f"{SRC}/{rel}", "wb") as f:
        f.write(data)


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(N):
        _write(s, f"c{i % 3}/{i:03d}.bin", hashlib.sha256(b"%d" % i).digest() * (i * 20 + 1))
    return s


def _dir(store, path):
    return Path(store.locate(path).path)


def _manifest(store):
    return json.loads((_dir(store, DEST) / MANIFEST_NAME).read_text())


def _source(store):
    src = _dir(store, SRC)
    return {p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*") if p.is_file()}


def _served(paths):
    """Yielded paths -> their member names (the path below the shard's extracted folder)."""
    out = {}
    for p in paths:
        parts = Path(p).parts
        i = next(k for k, part in enumerate(parts) if part.startswith("shard-"))
        out["/".join(parts[i + 1 :])] = p
    return out


def _loop(ds):
    """Iterate *ds* until it fails; returns (paths handed out, the error)."""
    got = []
    try:
        for p in ds:
            got.append(p)
    except Exception as exc:  # noqa: BLE001 - the test inspects which kind it is
        return got, exc
    return got, None


def _damage(store, shard, member_index, same_mtime=True):
    """Flip one byte in the data of member *member_index* (offset order) of shard *shard*: same size."""
    m = _manifest(store)["shards"][shard]
    d = _dir(store, DEST)
    ix = json.loads((d / m["index"]).read_text())
    name, offset, size = ix["members"][member_index][:3]
    tar = d / m["name"]
    st = tar.stat()
    raw = bytearray(tar.read_bytes())
    raw[offset + size // 2] ^= 0x01
    tar.write_bytes(raw)
    if same_mtime:
        os.utime(tar, ns=(st.st_atime_ns, st.st_mtime_ns))
    return name


def _craft(store, shard, edit):
    """Rewrite shard *shard*'s index with *edit(members, raw shard)*, then make the manifest agree
    (index checksum, counts, totals), as an attacker who can write the folder would."""
    d = _dir(store, DEST)
    doc = _manifest(store)
    s = doc["shards"][shard]
    ix = json.loads((d / s["index"]).read_text())
    ix["members"] = edit(ix["members"], (d / s["name"]).read_bytes())
    raw = json.dumps(ix).encode()
    (d / s["index"]).write_bytes(raw)
    s["index_crc32"] = zlib.crc32(raw)
    s["members"] = len(ix["members"])
    s["data_bytes"] = sum(m[2] for m in ix["members"])
    doc["files"] = sum(x["members"] for x in doc["shards"])
    doc["bytes"] = sum(x["data_bytes"] for x in doc["shards"])
    (d / MANIFEST_NAME).write_text(json.dumps(doc))


# -- 6: every member verified before it is handed out ---------------------------------------------
@pytest.mark.parametrize("which", [0, 3, -2])
def test_a_damaged_member_is_refused_by_name_and_never_served(vol, which):
    pack(SRC, DEST, shard_size="64KiB")
    assert _manifest(vol)["shards"][0]["members"] > 4
    bad = _damage(vol, 0, which)
    got, err = _loop(UCVolumeDataset(DEST))
    assert isinstance(err, ShardError) and f"member {bad!r}" in str(err) and "pack the source again" in str(err)
    served = _served(got)
    assert bad not in served
    src = _source(vol)
    assert all(Path(p).read_bytes() == src[name] for name, p in served.items())  # only bytes that match


def test_a_shard_swapped_after_the_manifest_was_read_serves_nothing_of_it(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    folder = open_packed(vol, DEST)  # manifest and indexes read now
    s = folder.manifest.shards[0]
    tar = _dir(vol, DEST) / s.name
    raw = bytearray(tar.read_bytes())
    for m in folder.shard_members[0]:  # the same size, every member's bytes different
        raw[m.offset : m.offset + m.size] = bytes(b ^ 0x55 for b in raw[m.offset : m.offset + m.size])
    tar.write_bytes(raw)
    cache = FileCache(root=tmp_path / "cache")
    refs = [r for r in folder.members if r.shard == 0]
    for r in refs:
        with pytest.raises(ShardError, match=r"shard .*/shard-\w+\.tar: member .* pack the source again"):
            r.local_path(cache)
    assert not [p for p in folder.extracted_dir(cache, 0).rglob("*") if p.is_file()]


# -- 7: a failed shard keeps the paths it handed out ----------------------------------------------
@pytest.mark.parametrize("where", ["last member", "end of archive"])
def test_paths_handed_out_before_a_shard_fails_stay_readable(vol, where):
    pack(SRC, DEST, shard_size="64KiB")
    shard = _manifest(vol)["shards"][0]
    if where == "last member":
        _damage(vol, 0, -1)
    else:  # outside every member: only the shard's checksum can tell
        tar = _dir(vol, DEST) / shard["name"]
        raw = bytearray(tar.read_bytes())
        raw[-10] ^= 0xFF
        tar.write_bytes(raw)
    got, err = _loop(UCVolumeDataset(DEST))
    assert isinstance(err, ShardError), repr(err)
    assert f"{DEST}/{shard['name']}" in str(err) and "pack the source again" in str(err)
    src = _source(vol)
    served = _served(got)
    assert len(served) >= shard["members"] - 1
    assert all(Path(p).read_bytes() == src[name] for name, p in served.items())


# -- 8: internal names never share the members' namespace ------------------------------------------
def test_members_named_like_internal_files_read_back_intact(vol, tmp_path):
    for name in (".air-complete", "c0/.air-complete", "c1/x.tmp", "x.lock", "x.complete"):
        _write(vol, name, b"user data in " + name.encode())
    pack(SRC, DEST, shard_size="1MiB")
    folder = open_packed(vol, DEST)
    assert len(folder.manifest.shards) == 1
    cache = FileCache(root=tmp_path / "cache")
    src = _source(vol)
    paths = {r.member.name: r.local_path(cache) for r in folder.members}
    folder.extractor(cache)._drivers.shutdown(wait=True)  # the fetch has finished: marker written
    assert {n: Path(p).read_bytes() for n, p in paths.items()} == src
    final = folder.extracted_dir(cache, 0)
    on_disk = sorted(p.relative_to(final).as_posix() for p in final.rglob("*") if p.is_file())
    assert on_disk == sorted(src)  # the extracted folder holds the members and nothing else


def test_a_fresh_reader_does_not_take_a_member_for_the_completion_marker(vol, tmp_path):
    _write(vol, "!first", b"sorted first, so fetched first")  # before '.air-complete' in the shard
    _write(vol, ".air-complete", b"not a marker")
    pack(SRC, DEST, shard_size="1MiB")
    cache = FileCache(root=tmp_path / "cache")
    folder = open_packed(vol, DEST)
    ref = next(r for r in folder.members if r.member.name == ".air-complete")
    assert Path(ref.local_path(cache)).read_bytes() == b"not a marker"
    folder.extractor(cache)._drivers.shutdown(wait=True)
    other = open_packed(vol, DEST)  # another reader of the same cache sees every member
    src = _source(vol)
    assert {r.member.name: Path(r.local_path(cache)).read_bytes() for r in other.members} == src


@pytest.mark.parametrize("length", [244, 255])
def test_a_longest_legal_file_name_packs_and_reads(vol, length):
    name = "n" * (length - 4) + ".bin"
    _write(vol, f"c0/{name}", b"long name")
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.files == N + 1
    got = {Path(p).name: Path(p).read_bytes() for p in UCVolumeDataset(DEST)}
    assert got[name] == b"long name" and len(got) == N + 1


# -- 9: tar headers checked against the index -----------------------------------------------------
def test_a_crafted_index_with_swapped_names_serves_nothing_foreign(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")

    def swap(members, raw):
        members[1][0], members[2][0] = members[2][0], members[1][0]
        return members

    _craft(vol, 0, swap)
    folder = open_packed(vol, DEST)
    cache = FileCache(root=tmp_path / "cache")
    src, errors = _source(vol), []
    for r in (r for r in folder.members if r.shard == 0):
        try:
            assert Path(r.local_path(cache)).read_bytes() == src[r.member.name]
        except ShardError as exc:
            errors.append(str(exc))
    assert errors and "tar header" in errors[0] and "pack the source again" in errors[0]


def test_a_crafted_offset_into_the_next_member_is_refused(vol, tmp_path):
    pack(SRC, DEST, shard_size="64KiB")
    hit = {}

    def shift(members, raw):  # member k now points at member k+1's data (dropped from the index)
        k = next(i for i in range(len(members) - 2) if members[i][2] <= members[i + 1][2] and members[i][2] < 512)
        nxt = members.pop(k + 1)
        members[k][1] = nxt[1]
        members[k][5] = zlib.crc32(raw[nxt[1] : nxt[1] + members[k][2]])  # checksum recomputed to match
        hit["name"] = members[k][0]
        return members

    _craft(vol, 0, shift)
    folder = open_packed(vol, DEST)
    ref = next(r for r in folder.members if r.member.name == hit["name"])
    with pytest.raises(ShardError, match=rf"member {hit['name']!r} .*tar header.*pack the source again"):
        ref.local_path(FileCache(root=tmp_path / "cache"))


# -- 10: crafted names and documents are ShardErrors ----------------------------------------------
def test_a_member_that_is_also_a_folder_is_refused(vol):
    pack(SRC, DEST, shard_size="64KiB")

    def clash(members, raw):
        members[0][0], members[1][0] = "a", "a/b"
        return members

    _craft(vol, 0, clash)
    with pytest.raises(ShardError, match=r"member 'a' is both a file and the folder of other members"):
        list(UCVolumeDataset(DEST))


@pytest.mark.parametrize("doc", ["manifest", "index"])
def test_deeply_nested_json_is_a_shard_error(vol, doc):
    pack(SRC, DEST, shard_size="64KiB")
    bomb = b"[" * 200_000 + b"]" * 200_000
    d = _dir(vol, DEST)
    if doc == "manifest":
        (d / MANIFEST_NAME).write_bytes(bomb)
    else:
        m = _manifest(vol)
        (d / m["shards"][0]["index"]).write_bytes(bomb)
        m["shards"][0]["index_crc32"] = zlib.crc32(bomb)
        (d / MANIFEST_NAME).write_text(json.dumps(m))
    with pytest.raises(ShardError, match=rf"{doc} {DEST}/\S+ is corrupt .*pack the source again"):
        UCVolumeDataset(DEST)
    if doc == "manifest":
        with pytest.raises(ShardError, match=r"is corrupt .*delete it and pack again"):
            pack(SRC, DEST, shard_size="64KiB")
    else:  # pack rewrites the damaged shard
        assert pack(SRC, DEST, shard_size="64KiB").shards_written == 1
        assert len(list(UCVolumeDataset(DEST))) == N


def test_a_folder_packed_in_format_version_1_is_refused_then_repacked(vol):
    pack(SRC, DEST, shard_size="64KiB")
    d = _dir(vol, DEST)
    m = _manifest(vol)
    m["version"] = 1
    (d / MANIFEST_NAME).write_text(json.dumps(m))
    with pytest.raises(ShardError, match=r"format version 1; .*reads version 2: pack the source again"):
        UCVolumeDataset(DEST)
    r = pack(SRC, DEST, shard_size="64KiB")
    assert r.generation == 2 and r.shards_written + r.shards_reused == r.shards
    got = {n: Path(p).read_bytes() for n, p in _served(UCVolumeDataset(DEST)).items()}
    assert got == _source(vol)


# -- 11: two packers of one folder ---------------------------------------------------------------
_PACK_AND_WAIT = textwrap.dedent("""
    import sys
    from air_magics.shards import writer
    real = writer.write_shard
    def paused(*a, **k):
        ix = real(*a, **k)
        print("shard", flush=True)
        sys.stdin.readline()  # hold the pack (and its lock) until the test says go
        return ix
    writer.write_shard = paused
    writer.pack(sys.argv[1], sys.argv[2], shard_size="64KiB")
    print("done", flush=True)
""")


def test_the_pack_lock_is_on_the_volume(vol, tmp_path, monkeypatch):
    script = tmp_path / "pack_and_wait.py"
    script.write_text(_PACK_AND_WAIT)
    root = Path(vol.locate("/Volumes/main/raw/img").root).parents[2]  # the volumes both packers see
    monkeypatch.setenv("AIR_VOLUMES_ROOT", str(root))
    env = dict(os.environ, AIR_HOME=str(tmp_path / "home-a"))  # another AIR_HOME, as on another machine
    proc = subprocess.Popen(
        [sys.executable, str(script), SRC, DEST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout.readline().strip() == "shard"
        monkeypatch.setenv("AIR_HOME", str(tmp_path / "home-b"))
        with pytest.raises(PackError, match=rf"another pack is writing {DEST} right now.*wait for it to finish"):
            pack(SRC, DEST, shard_size="64KiB")
        out, _ = proc.communicate("\n" * 100, timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and out.strip().endswith("done")
    got = {n: Path(p).read_bytes() for n, p in _served(UCVolumeDataset(DEST)).items()}
    assert got == _source(vol)


def test_publishing_never_deletes_another_packers_fresh_shards(vol):
    other = "/Volumes/main/raw/img/other"
    pack(SRC, DEST, shard_size="64KiB")
    gen1 = {s["name"] for s in _manifest(vol)["shards"]}
    (_dir(vol, SRC) / "c0/000.bin").write_bytes(b"changed")
    # packer B (another machine, its lock not seen here) has written its shards, not yet its manifest
    pack(SRC, other, shard_size="32KiB")
    b_dir, d = _dir(vol, other), _dir(vol, DEST)
    b_files = sorted(n.name for n in b_dir.iterdir() if n.name.startswith("shard-"))
    for n in b_files:
        shutil.copy2(b_dir / n, d / n)
    r = pack(SRC, DEST, shard_size="64KiB")  # packer A publishes between B's shards and B's manifest
    assert r.generation == 2 and r.shards_removed >= 1
    left = {n.name for n in d.iterdir()}
    assert set(b_files) <= left  # B's shards are fresh and named by no manifest A read: kept
    assert not (gen1 - {s["name"] for s in _manifest(vol)["shards"]}) & left  # what A superseded: gone
    shutil.copy2(b_dir / MANIFEST_NAME, d / MANIFEST_NAME)  # B publishes
    got = {n: Path(p).read_bytes() for n, p in _served(UCVolumeDataset(DEST)).items()}
    assert got == _source(vol)


def test_unnamed_shards_older_than_the_grace_period_are_removed(vol):
    from air_magics.shards.dest import GRACE

    other = "/Volumes/main/raw/img/other"
    pack(SRC, DEST, shard_size="64KiB")
    pack(SRC, other, shard_size="32KiB")
    b_dir, d = _dir(vol, other), _dir(vol, DEST)
    stale = sorted(n.name for n in b_dir.iterdir() if n.name.startswith("shard-"))
    old = time.time() - GRACE - 60
    for n in stale:
        shutil.copy2(b_dir / n, d / n)
        os.utime(d / n, (old, old))
    (_dir(vol, SRC) / "c0/000.bin").write_bytes(b"changed")
    r = pack(SRC, DEST, shard_size="64KiB")
    named = {x for s in _manifest(vol)["shards"] for x in (s["name"], s["index"])}
    assert not (set(stale) - named) & {n.name for n in d.iterdir()}
    assert r.shards_removed >= len([n for n in set(stale) - named if n.endswith(".tar")])


@pytest.mark.parametrize("which", ["name", "index"])
def test_a_shard_or_index_that_is_a_folder_is_a_shard_error(vol, which):
    pack(SRC, DEST, shard_size="64KiB")
    target = _dir(vol, DEST) / _manifest(vol)["shards"][0][which]
    target.unlink()
    target.mkdir()
    with pytest.raises(ShardError, match=r"shard-\w+\.(tar|idx\.json)\S* .*not a regular file.*pack the source again"):
        list(UCVolumeDataset(DEST))


def test_verify_member_checks_bytes_read_by_offset(vol):
    """The one check a reader by offset reuses: header bytes from header_start, data at the offset."""
    from air_magics.shards.verify import header_start, verify_member

    pack(SRC, DEST, shard_size="64KiB")
    folder = open_packed(vol, DEST)
    raw = (_dir(vol, DEST) / folder.manifest.shards[0].name).read_bytes()
    members = folder.shard_members[0]
    for j, m in enumerate(members):
        verify_member("s", m, raw[header_start(members, j) : m.offset], raw[m.offset : m.offset + m.size])
    m = members[1]
    head, data = raw[header_start(members, 1) : m.offset], bytearray(raw[m.offset : m.offset + m.size])
    data[0] ^= 1
    with pytest.raises(ShardError, match=rf"shard s: member {m.name!r} does not match"):
        verify_member("s", m, head, data)
    with pytest.raises(ShardError, match="tar header says"):
        verify_member("s", members[2], head, raw[m.offset : m.offset + m.size])


@pytest.mark.parametrize("name", ["nl\nname.bin", "tab\there.bin"])
def test_a_name_with_a_control_character_is_refused_at_pack_time_by_name(vol, name):
    """One rule for pack and read (issue 36): a file whose name no volume path can hold used to be
    packed, and then reading the packed folder refused it; now pack refuses it, naming the file,
    and writes nothing."""
    (_dir(vol, SRC) / "c0" / name).write_bytes(b"x" * 10)
    with pytest.raises(PackError, match=r"control character") as err:
        pack(SRC, DEST)
    assert repr(f"c0/{name}") in str(err.value)
    assert not (_dir(vol, DEST) / MANIFEST_NAME).exists()
