"""A volume registered to ``s3://`` on a real S3 server (SeaweedFS, signatures checked): the default
DataLoader (forked workers), spawned workers, ``output="bytes"``, one GET and no HEAD per file in a cold
epoch (counted by a proxy in front of the server), ``%air_volume ls``, ``%%air_copy`` to a local volume,
and a one-line error when the store refuses a read."""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from air_magics.errors import AirError, StorageAccessError
from air_magics.volumes import VolumeStore
from benchmarks.harness.delayproxy import DelayProxy

N_FILES = 1000
VOLUME = "/Volumes/main/s3/raw"


def _content(i: int) -> bytes:
    return f"file {i:05d} ".encode() * (3 + i % 17)


@pytest.fixture(scope="module")
def populated(s3_server):
    """A bucket holding ``raw/train/d<k>/f<i>.bin`` (1,000 small files) and ``raw/other.txt``; read-only
    for the tests of this module. Returns ``(bucket, {relative name under train/: sha256})``."""
    bucket = s3_server.make_bucket()
    files = {f"d{i % 10}/f{i:05d}.bin": _content(i) for i in range(N_FILES)}
    fs = s3_server.admin
    fs.pipe({f"{bucket}/raw/train/{k}": v for k, v in files.items()})
    fs.pipe(f"{bucket}/raw/other.txt", b"other")
    return bucket, {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}


@pytest.fixture
def proxy(s3_server):
    with DelayProxy(("127.0.0.1", s3_server.port)) as p:
        yield p


@pytest.fixture
def s3_volume(s3_env, populated, proxy, monkeypatch):
    """``main.s3.raw`` registered to the populated bucket, reached through the counting proxy (by the
    standard AWS environment, as a user sets it). Returns ``(store, hashes)``."""
    bucket, hashes = populated
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    store = VolumeStore()
    store.register("main.s3.raw", f"s3://{bucket}/raw")
    return store, hashes


def _object_requests(proxy: DelayProxy) -> Counter[tuple[str, str]]:
    """``(method, object key)`` -> count, for requests on objects (listings, whose query names the
    listing, and bucket-level requests left out)."""
    out: Counter[tuple[str, str]] = Counter()
    for method, path in proxy.log:
        target, _, query = path.partition("?")
        if "list-type" in query or target.count("/") < 2:
            continue
        out[(method, target.split("/", 2)[2])] += 1
    return out


def _check_paths(items: list, hashes: dict[str, str]) -> None:
    got = Counter(str(p) for p in items)
    assert len(got) == len(items) == len(hashes), "every file exactly once"
    by_name = {}
    for p in got:
        rel = p.split("/train/", 1)[1]
        by_name[rel] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    assert by_name == hashes


def test_default_loader_reads_every_file_once_with_one_get_and_no_head(s3_volume, proxy):
    from air_magics.data import DataLoader, UCVolumeDataset

    _, hashes = s3_volume
    ds = UCVolumeDataset(f"{VOLUME}/train")
    loader = DataLoader(ds, batch_size=None)
    assert loader.num_workers >= 2 and loader.multiprocessing_context is None  # the defaults: forked workers
    proxy.reset()  # the cold epoch only (the listing was made above)
    items = list(loader)
    _check_paths(items, hashes)
    per_object = _object_requests(proxy)
    assert not [k for k in per_object if k[0] == "HEAD"], per_object
    gets = Counter(key for (method, key), n in per_object.items() for _ in range(n) if method == "GET")
    assert len(gets) == N_FILES and max(gets.values()) == 1, gets.most_common(3)
    assert proxy.unparsed == 0


def test_spawned_workers_read_every_file_once(s3_volume, proxy):
    from air_magics.data import DataLoader, UCVolumeDataset

    _, hashes = s3_volume
    ds = UCVolumeDataset(f"{VOLUME}/train/d2", output="bytes")  # (a spawned worker imports torch: seconds)
    proxy.reset()
    items = list(DataLoader(ds, batch_size=None, multiprocessing_context="spawn"))
    want = sorted(v for k, v in hashes.items() if k.startswith("d2/"))
    assert sorted(hashlib.sha256(bytes(b)).hexdigest() for b in items) == want
    assert not [k for k in _object_requests(proxy) if k[0] == "HEAD"]


def test_default_loader_bytes_output(s3_volume):
    from air_magics.data import DataLoader, UCVolumeDataset

    _, hashes = s3_volume
    items = list(DataLoader(UCVolumeDataset(f"{VOLUME}/train", output="bytes"), batch_size=None))
    assert sorted(hashlib.sha256(bytes(b)).hexdigest() for b in items) == sorted(hashes.values())


def test_volume_ls_and_copy_to_a_local_volume(ip, s3_volume):
    store, hashes = s3_volume
    listing = ip.run_line_magic("air_volume", f"ls {VOLUME}")
    text = str(listing) if listing is not None else ""
    assert "train" in text and "other.txt" in text, text
    store.create("main.local.copy")
    report = ip.run_cell_magic("air_copy", "--to /Volumes/main/local/copy -q", f"{VOLUME}/train/d3")
    assert report.ok and report.copied == N_FILES // 10
    local = store.locate("/Volumes/main/local/copy").path
    copied = {
        f"d3/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest() for p in Path(local, "d3").iterdir() if p.is_file()
    }
    assert copied == {k: v for k, v in hashes.items() if k.startswith("d3/")}


def test_a_refused_read_is_one_line_naming_the_file_and_the_fix(s3_server, s3_volume, monkeypatch):
    from air_magics.data import UCVolumeDataset

    for k, v in s3_server.list_only_env().items():  # an identity that may list the bucket, not read it
        if k != "AWS_ENDPOINT_URL":
            monkeypatch.setenv(k, v)
    store = VolumeStore()
    assert len(store.ls(f"{VOLUME}/train/d1")) == N_FILES // 10  # the listing is allowed
    # a dataset: refused at its first read (the folder's packing manifest, looked for as it is made)
    with pytest.raises(StorageAccessError) as info:
        next(iter(UCVolumeDataset(f"{VOLUME}/train/d1", store=store)))
    _one_line_naming(info.value, r"s3://\S+/raw/train/d1/\S+")
    # the GET of a listed file, as the cache's miss path makes it
    loc = store.locate(f"{VOLUME}/train/d1/f00001.bin")
    with pytest.raises(StorageAccessError) as info:
        loc.fs.cat_file(loc.path)
    _one_line_naming(info.value, r"s3://\S+/raw/train/d1/f00001\.bin")


def _one_line_naming(exc: BaseException, url: str) -> None:
    message = str(exc)
    assert isinstance(exc, AirError) and isinstance(exc, PermissionError)
    assert "\n" not in message
    assert re.search(url, message), message
    assert re.search("AccessDenied|Access Denied|Forbidden", message), message
    assert "AWS_ACCESS_KEY_ID" in message


def test_workers_do_not_share_the_parents_connections(s3_volume):
    """The filesystem a listed file carries is made anew in a forked child (a fork-unsafe backend's
    instance never crosses the fork)."""
    store, _ = s3_volume
    loc = store.locate(f"{VOLUME}/train/d0/f00000.bin")
    parent = loc.fs.instance
    assert loc.fs.cat_file(loc.path) == _content(0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            ok = loc.fs.instance is not parent and loc.fs.cat_file(loc.path) == _content(0)
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    os.waitpid(pid, 0)
    assert loc.fs.instance is parent
