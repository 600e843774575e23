"""Volumes resolved through a connected Unity Catalog (the run's real server, ``uc_server``): a UC
volume on a ``file://`` folder is listed, read by ``UCVolumeDataset`` and copied from; one on
``s3://`` is read from the real S3 server with the keys the catalog vends (none in the environment)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import uuid
from pathlib import Path

import pytest

import air_magics
from air_magics.errors import CatalogUnavailableError
from air_magics.volumes import VolumeStore, catalog_volumes


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def catalog(uc_server, monkeypatch):
    """This test's own catalog on the run's server, connected for this test's AIR_HOME."""
    monkeypatch.delenv("AIR_UC_URL", raising=False)
    monkeypatch.delenv("AIR_UC_TOKEN", raising=False)
    client = uc_server.client()
    name = f"c{uuid.uuid4().hex[:8]}"
    client.create_catalog(name)
    client.create_schema(name, "raw")
    catalog_volumes.connect(uc_server.url)
    yield client, name
    catalog_volumes.disconnect()
    client.delete_catalog(name, force=True)


@pytest.fixture
def file_volume(catalog, tmp_path):
    """``<catalog>.raw.img``: an external UC volume on a local folder of 12 files."""
    client, name = catalog
    folder = tmp_path / "img"
    (folder / "train").mkdir(parents=True)
    hashes = {}
    for i in range(12):
        data = os.urandom(1000 + i)
        (folder / "train" / f"{i:02d}.bin").write_bytes(data)
        hashes[f"{i:02d}.bin"] = _sha(data)
    client.create_volume(name, "raw", "img", storage_location=folder.as_uri())
    return f"/Volumes/{name}/raw/img", folder, hashes


def test_a_catalog_volume_is_listed_and_located_at_its_storage_location(file_volume):
    path, folder, hashes = file_volume
    store = VolumeStore()
    vid = path.removeprefix("/Volumes/").replace("/", ".")
    listed = {v.volume_id: v for v in store.volumes()}
    assert listed[vid].kind == "catalog" and listed[vid].location == folder.as_uri()
    assert store.locate(f"{path}/train/00.bin").path == str(folder / "train" / "00.bin")
    assert sorted(f.path.name for f in store.ls(f"{path}/train")) == sorted(hashes)


def test_a_catalog_volume_is_read_by_the_dataset(file_volume):
    from air_magics.data import UCVolumeDataset

    path, _, hashes = file_volume
    got = {Path(p).name: _sha(Path(p).read_bytes()) for p in UCVolumeDataset(f"{path}/train")}
    assert got == hashes


def test_a_catalog_volume_is_copied_from(file_volume, tmp_path):
    path, _, hashes = file_volume
    report = air_magics.copy([f"{path}/train"], str(tmp_path / "out"))
    assert report.ok
    assert {p.name: _sha(p.read_bytes()) for p in (tmp_path / "out" / "train").iterdir()} == hashes


def test_a_volume_the_catalog_lacks_resolves_as_without_one(catalog):
    store = VolumeStore()
    store.create("local.s.v")
    assert store.volume_info("local.s.v").kind == "embedded"


def test_an_s3_volume_is_read_with_the_keys_the_catalog_vends(catalog, uc_server, s3_server, monkeypatch):
    from conftest import UC_BUCKET

    client, name = catalog
    prefix = f"{UC_BUCKET}/{name}"
    s3_server.admin.pipe_file(f"{prefix}/a.txt", b"alpha")
    s3_server.admin.pipe_file(f"{prefix}/d/b.txt", b"beta")
    client.create_volume(name, "raw", "s3v", storage_location=f"s3://{prefix}")
    for k in list(os.environ):  # no key of our own: only the vended ones can reach the bucket
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    catalog_volumes.connect(uc_server.url, s3_endpoint=s3_server.endpoint)
    store = VolumeStore()
    info = store.volume_info(f"{name}.raw.s3v")
    assert info.kind == "catalog" and info.options["key"] == s3_server.key
    with store.open(f"/Volumes/{name}/raw/s3v/a.txt") as f:
        assert f.read() == b"alpha"
    assert sorted(f.path.name for f in store.ls(f"/Volumes/{name}/raw/s3v", recursive=True)) == ["a.txt", "b.txt"]


def test_without_a_connection_nothing_is_asked(monkeypatch):
    monkeypatch.delenv("AIR_UC_URL", raising=False)
    assert catalog_volumes.connection() is None
    assert catalog_volumes.volumes() == []
    store = VolumeStore()
    store.create("main.s.v")
    assert store.volume_info("main.s.v").kind == "embedded"


def test_a_failed_connect_stores_nothing(air_home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(CatalogUnavailableError, match=str(port)):
        catalog_volumes.connect(f"http://127.0.0.1:{port}")
    assert catalog_volumes.connection() is None
    assert not (air_home / "uc" / "connection.json").exists()


def test_the_token_stays_off_disk(uc_server, air_home, monkeypatch):
    monkeypatch.delenv("AIR_UC_TOKEN", raising=False)
    monkeypatch.delenv("AIR_UC_URL", raising=False)
    catalog_volumes.connect(uc_server.url, token="tok-s3cr3t")
    try:
        assert os.environ["AIR_UC_TOKEN"] == "tok-s3cr3t"
        written = (air_home / "uc" / "connection.json").read_text()
        assert "s3cr3t" not in written and json.loads(written)["url"] == uc_server.url
    finally:
        catalog_volumes.disconnect()
    assert catalog_volumes.connection() is None


def test_the_environment_names_the_catalog(uc_server, monkeypatch):
    monkeypatch.setenv("AIR_UC_URL", uc_server.url)
    assert catalog_volumes.connection().url == uc_server.url


def test_the_magic_connects_creates_lists_and_disconnects(ip, uc_server, tmp_path, air_home, monkeypatch):
    from IPython.core.error import UsageError

    monkeypatch.delenv("AIR_UC_URL", raising=False)
    name = f"m{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "x.txt").write_text("x")
    ip.run_line_magic("air_volume", f"connect {uc_server.url}")
    try:
        made = ip.run_line_magic("air_volume", f"create {name}.raw.data --location {folder.as_uri()}")
        assert made is None  # printed; the value only with -o
        assert uc_server.client().get_volume(name, "raw", "data")["storage_location"].rstrip("/") == folder.as_uri()
        with pytest.raises(UsageError, match="already exists"):
            ip.run_line_magic("air_volume", f"create {name}.raw.data --location {folder.as_uri()}")
        ip.run_line_magic("air_volume", f"create {name}.raw.data --location {folder.as_uri()} --exist-ok")
        assert name in str(ip.run_line_magic("air_volume", "ls /Volumes"))
        assert "data" in str(ip.run_line_magic("air_volume", f"ls /Volumes/{name}/raw"))
        assert "x.txt" in str(ip.run_line_magic("air_volume", f"ls /Volumes/{name}/raw/data"))
        with pytest.raises(UsageError, match="--token only applies to `connect`"):
            ip.run_line_magic("air_volume", "ls /Volumes --token t")
        with pytest.raises(UsageError, match="a catalog URL .* or --embedded"):
            ip.run_line_magic("air_volume", f"connect {uc_server.url} --embedded")
    finally:
        ip.run_line_magic("air_volume", "disconnect")
        uc_server.client().delete_catalog(name, force=True)
    assert catalog_volumes.connection() is None
    with pytest.raises(UsageError, match="connect one first"):
        ip.run_line_magic("air_volume", f"create {name}.raw.data --location {folder.as_uri()}")


def test_a_bad_catalog_url_setting_is_one_line_naming_it(monkeypatch):
    from air_magics.errors import SettingError

    monkeypatch.setenv("AIR_UC_URL", "ftp://host")
    with pytest.raises(SettingError, match="AIR_UC_URL.*http://host:8080"):
        catalog_volumes.connection()


def test_a_deleted_volume_stops_resolving_once_the_answer_is_stale(catalog, tmp_path, monkeypatch):
    client, name = catalog
    store = VolumeStore()
    monkeypatch.setattr(catalog_volumes, "_TTL", 1e6)  # answers stay fresh: the cached one is served
    client.create_volume(name, "raw", "kept", storage_location=tmp_path.as_uri())
    assert store.volume_info(f"{name}.raw.kept").kind == "catalog"
    client.delete_volume(name, "raw", "kept")
    assert store.volume_info(f"{name}.raw.kept").kind == "catalog"
    monkeypatch.setattr(catalog_volumes, "_TTL", -1.0)  # answers are stale at once: the catalog is asked again
    client.create_volume(name, "raw", "gone", storage_location=tmp_path.as_uri())
    assert store.volume_info(f"{name}.raw.gone").kind == "catalog"
    client.delete_volume(name, "raw", "gone")
    with pytest.raises(FileNotFoundError):
        store.volume_info(f"{name}.raw.gone")


def test_connect_embedded_uses_the_air_homes_running_server(ip, uc_server, monkeypatch):
    """``connect --embedded`` in the AIR_HOME whose ``uc/`` the run's server lives in: that server, no new JVM."""
    monkeypatch.delenv("AIR_UC_URL", raising=False)
    monkeypatch.setenv("AIR_HOME", str(uc_server.state.parent))
    conn = ip.run_line_magic("air_volume", "connect --embedded -o conn")
    try:
        assert (conn.url, conn.embedded) == (uc_server.url, True)
        assert catalog_volumes.connection() == conn
    finally:
        catalog_volumes.disconnect()


def test_loader_workers_read_a_catalog_volume_on_s3(catalog, uc_server, s3_server, monkeypatch):
    """Forked DataLoader workers resolve the catalog's s3:// volume themselves (connection file, vended keys)."""
    from conftest import UC_BUCKET

    from air_magics.data import DataLoader, UCVolumeDataset

    client, name = catalog
    blobs = {f"f{i}.bin": os.urandom(500 + i) for i in range(8)}
    for n, b in blobs.items():
        s3_server.admin.pipe_file(f"{UC_BUCKET}/{name}-w/{n}", b)
    client.create_volume(name, "raw", "w", storage_location=f"s3://{UC_BUCKET}/{name}-w")
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    catalog_volumes.connect(uc_server.url, s3_endpoint=s3_server.endpoint)
    ds = UCVolumeDataset(f"/Volumes/{name}/raw/w", output="bytes")
    got = [bytes(b) for b in DataLoader(ds, batch_size=None, num_workers=2)]
    assert sorted(map(_sha, got)) == sorted(map(_sha, blobs.values()))


def test_a_catalog_that_stops_answering_is_a_note_in_the_listing_and_an_error_on_use(file_volume, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    store = VolumeStore()
    store.create("local.s.v")
    monkeypatch.setenv("AIR_UC_URL", dead)
    volumes, notes = store.scan_volumes()
    assert [v.volume_id for v in volumes] == ["local.s.v"]
    assert len(notes) == 1 and notes[0].startswith("Unity Catalog: cannot reach") and dead in notes[0]
    path, _, _ = file_volume
    with pytest.raises(CatalogUnavailableError, match=dead):
        store.locate(f"{path}/train/00.bin")


def test_ls_above_volumes_shows_the_catalogs_and_schemas_that_hold_none_yet(ip, catalog):
    client, name = catalog  # <name>.raw exists and holds no volume
    client.create_schema(name, "empty")
    store = VolumeStore()
    store.create("local.s.v")
    top = ip.run_line_magic("air_volume", "ls /Volumes")
    assert {f"/Volumes/{name}", "/Volumes/local"} <= {p for p, _ in top.rows}
    assert dict(top.rows)[f"/Volumes/{name}"] == "no volumes yet"
    inside = ip.run_line_magic("air_volume", f"ls /Volumes/{name}")
    assert dict(inside.rows) == {f"/Volumes/{name}/empty": "no volumes yet", f"/Volumes/{name}/raw": "no volumes yet"}
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="no catalog 'nosuch'"):  # the magic's one line of the store's error
        ip.run_line_magic("air_volume", "ls /Volumes/nosuch")
