"""Validation of names and URLs: no newline slips through a ``$`` anchor, no URL resolves to the cwd."""

import json

import pytest

from air_magics.errors import AirError, RegistryError, TableNameError, VolumePathError
from air_magics.tablefiles.names import TableName
from air_magics.volumes import VolumePath, VolumeStore
from air_magics.volumes.registry import VolumeRegistry, normalise_url


@pytest.mark.parametrize(
    "build",
    [
        lambda: VolumePath("main", "raw", "nl\n"),
        lambda: VolumePath("main\n", "raw", "img"),
        lambda: VolumePath.parse("/Volumes/main/raw/nl\n"),
        lambda: VolumePath.parse("/Volumes/main/raw\n/img/x"),
        lambda: VolumePath.parse("main.raw.nl\n"),
        lambda: VolumePath.parse("main.raw.img/a\n", default=VolumePath("c", "s", "v")),
        lambda: VolumePath.parse("train\n", default=VolumePath("c", "s", "v")),
        lambda: VolumePath.parse_volume("main.raw.nl\n"),
    ],
)
def test_volume_names_and_paths_refuse_a_trailing_newline(build):
    with pytest.raises(VolumePathError, match=r"\\n"):
        build()


def test_create_refuses_a_newline_and_makes_nothing(air_home):
    store = VolumeStore()
    with pytest.raises(VolumePathError, match="control character"):
        store.create("/Volumes/main/raw/nl\n")
    with pytest.raises(VolumePathError):
        store.create("main.raw.nl\n")
    assert not (store.root / "main" / "raw").exists()


@pytest.mark.parametrize("name", ["a\n.b", "main.raw\n.t", "t\n\n.x", "a.b.c\nd"])
def test_table_names_refuse_a_newline_inside(name):
    with pytest.raises(TableNameError, match="invalid table name"):
        TableName.parse(name)


def test_table_names_still_parse():
    assert TableName.parse(" main.raw.t ") == TableName("main", "raw", "t")  # surrounding blanks are trimmed


@pytest.mark.parametrize(
    "url,stored",
    [
        ("s3://bucket/prefix/", "s3://bucket/prefix"),
        ("memory://", "memory://"),
        ("memory://vol//", "memory://vol"),
        ("file:///data/vol/", "file:///data/vol"),
        ("gs://bucket", "gs://bucket"),
    ],
)
def test_urls_are_stored_normalised(tmp_path, url, stored):
    reg = VolumeRegistry(tmp_path / "reg.json")
    assert reg.set("a.b.c", url) == stored
    assert reg.get("a.b.c") == stored and normalise_url(stored) == stored


@pytest.mark.parametrize(
    "url,needle",
    [
        ("file:///", "whole filesystem"),
        ("file:////", "whole filesystem"),
        ("local:///", "whole filesystem"),
        ("file:", "not a storage URL"),
        ("file://data/vol", "absolute"),
        ("file://localhost/data", "absolute"),
        ("s3://bucket\n", "control character"),
        ("s3://bu\x00cket", "control character"),
        ("bucket/prefix", "not a storage URL"),
        ("\ns3://bucket", "not a storage URL"),
    ],
)
def test_bad_urls_are_refused_and_nothing_is_stored(tmp_path, url, needle):
    reg = VolumeRegistry(tmp_path / "reg.json")
    with pytest.raises(RegistryError, match=needle) as info:
        reg.set("a.b.c", url)
    assert repr(url) in str(info.value) and isinstance(info.value, ValueError)
    assert reg.load() == {}


def test_register_file_root_is_refused_by_the_store(air_home):
    store = VolumeStore()
    with pytest.raises(RegistryError, match="whole filesystem"):
        store.register("x.y.z", "file:///")
    assert store.registry.load() == {}


def test_register_local_folder_resolves_there(air_home, tmp_path):
    store = VolumeStore()
    store.register("x.y.z", f"file://{tmp_path}/vol/")
    assert store.registry.get("x.y.z") == f"file://{tmp_path}/vol"
    assert store.locate("/Volumes/x/y/z/a.txt").path == str(tmp_path / "vol" / "a.txt")


def test_a_stored_url_that_would_resolve_to_the_cwd_is_refused(air_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = VolumeStore()
    store.registry.file.parent.mkdir(parents=True, exist_ok=True)
    store.registry.file.write_text(json.dumps({"x.y.z": "file:"}))  # as an older version stored file:///
    with pytest.raises(RegistryError, match="register it again") as info:
        store.locate("/Volumes/x/y/z/a.txt")
    assert "'file:'" in str(info.value) and isinstance(info.value, AirError)
