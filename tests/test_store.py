import os

import pytest

from air_magics.errors import RegistryError, VolumeExistsError, VolumeNotFoundError, VolumePathError
from air_magics.volumes import VolumePath, VolumeStore


@pytest.fixture
def store():
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(30):
        with s.open(f"/Volumes/main/raw/img/train/{i % 3}/f{i:02d}.jpg", "wb") as f:
            f.write(b"x" * (100 + i))
    with s.open("/Volumes/main/raw/img/README.txt", "wb") as f:
        f.write(b"hello")
    return s


def test_embedded_root_follows_air_home(air_home, monkeypatch, tmp_path):
    assert VolumeStore().root == air_home / "volumes"
    assert VolumeStore().kind == "embedded"
    monkeypatch.setenv("AIR_VOLUMES_ROOT", str(tmp_path / "elsewhere"))
    assert VolumeStore().root == tmp_path / "elsewhere"


def test_real_mount_preferred_when_present(monkeypatch, tmp_path):
    (tmp_path / "mnt").mkdir()
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
    s = VolumeStore()
    assert (s.root, s.kind) == (tmp_path / "mnt", "mount")


def test_create_and_list_volumes(store):
    assert [v.volume_id for v in store.volumes()] == ["main.raw.img"]
    with pytest.raises(VolumeExistsError, match="already exists"):
        store.create("main.raw.img")
    assert store.create("main.raw.img", exist_ok=True).volume_id == "main.raw.img"


def test_ls_stat_walk_glob(store):
    top = store.ls("/Volumes/main/raw/img")
    assert [(e.path.name, e.is_dir) for e in top] == [("README.txt", False), ("train", True)]
    files = store.ls("/Volumes/main/raw/img", recursive=True)
    assert len(files) == 31 and not any(f.is_dir for f in files)
    jpgs = store.ls("/Volumes/main/raw/img", recursive=True, pattern="*.jpg")
    assert len(jpgs) == 30
    assert len(store.ls("/Volumes/main/raw/img", recursive=True, pattern="train/1/*")) == 10
    assert store.stat("/Volumes/main/raw/img/train/0/f03.jpg").size == 103
    assert store.stat("/Volumes/main/raw/img/train").is_dir
    walked = list(store.walk("/Volumes/main/raw/img"))
    assert walked[0] == (VolumePath("main", "raw", "img"), ["train"], ["README.txt"])
    assert sum(len(files) for _, _, files in walked) == 31
    assert len(store.glob("/Volumes/main/raw/img/train/*/f1?.jpg")) == 10
    assert len(store.glob("/Volumes/main/raw/img/**/*.jpg")) == 30
    assert len(store.glob("/Volumes/main/raw/img/train/[01]")) == 20  # matched folders bring their files
    with store.open("/Volumes/main/raw/img/README.txt") as f:
        assert f.read() == b"hello"


def test_missing_things(store):
    with pytest.raises(VolumeNotFoundError, match="create it with"):
        store.ls("/Volumes/main/raw/nope")
    with pytest.raises(VolumeNotFoundError, match="does not exist"):
        store.stat("/Volumes/main/raw/img/nothing.txt")
    with pytest.raises(VolumeNotFoundError):
        store.ls("/Volumes/main/raw/img/nothing")


def test_symlink_out_of_volume_is_refused(store, tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "passwd").write_text("root")
    vol = store.root / "main" / "raw" / "img"
    os.symlink(secret, vol / "escape")
    os.symlink(secret / "passwd", vol / "train" / "leak.txt")
    os.symlink(vol / "README.txt", vol / "train" / "ok.txt")  # stays inside: fine
    with pytest.raises(VolumePathError, match="outside its volume"):
        store.locate("/Volumes/main/raw/img/escape/passwd")
    with pytest.raises(VolumePathError, match="outside its volume"):
        store.open("/Volumes/main/raw/img/train/leak.txt")
    names = {f.path.relpath for f in store.ls("/Volumes/main/raw/img", recursive=True)}
    assert "train/leak.txt" not in names and "escape/passwd" not in names
    assert "train/ok.txt" in names


def test_register_memory_volume(store):
    info = store.register("ext.mem.vol", "memory://air-test-vol")
    assert info.kind == "fsspec"
    with store.open("/Volumes/ext/mem/vol/a/b.txt", "wb") as f:
        f.write(b"abc")
    assert store.stat("/Volumes/ext/mem/vol/a/b.txt").size == 3
    assert [f.path.relpath for f in store.ls("/Volumes/ext/mem/vol", recursive=True)] == ["a/b.txt"]
    assert [f.path.name for f in store.ls("/Volumes/ext/mem/vol")] == ["a"]
    # the registry persists: a new store (a new process) sees the volume
    assert "ext.mem.vol" in [v.volume_id for v in VolumeStore().volumes()]
    assert store.unregister("ext.mem.vol")
    with pytest.raises(VolumeNotFoundError):
        VolumeStore().ls("/Volumes/ext/mem/vol")


def test_register_file_url_takes_local_path(store, tmp_path):
    target = tmp_path / "ext-data"
    store.register("ext.files.vol", target.as_uri())
    with store.open("/Volumes/ext/files/vol/x/y.bin", "wb") as f:
        f.write(b"1234")
    assert (target / "x" / "y.bin").read_bytes() == b"1234"
    loc = store.locate("/Volumes/ext/files/vol/x/y.bin")
    assert loc.is_local and loc.path == str(target / "x" / "y.bin")


def test_register_rejects_bad_urls(store):
    with pytest.raises(RegistryError, match="scheme"):
        store.register("ext.bad.vol", "not-a-url")
    with pytest.raises(RegistryError, match="fsspec backend|cannot open"):
        store.register("ext.bad.vol", "nosuchproto://bucket/x")
    assert "ext.bad.vol" not in [v.volume_id for v in store.volumes()]


def test_corrupt_registry_is_reported(store, air_home):
    (air_home / "volume_registry.json").write_text("{not json")
    with pytest.raises(RegistryError, match="fix or delete"):
        store.volumes()


# -- a real volumes mount is detected by what it is, not by existence -------------------------------------


def _mount_at(tmp_path, monkeypatch, *dirs):
    mount = tmp_path / "fake-Volumes"
    mount.mkdir()
    for d in dirs:
        (mount / d).mkdir(parents=True)
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(mount))
    return mount


def test_mac_disk_folder_is_not_a_volumes_mount(tmp_path, monkeypatch, air_home):
    from air_magics.volumes import detect
    from air_magics.volumes.summary import VolumesOverview

    mount = _mount_at(tmp_path, monkeypatch, "Macintosh HD/Users", "main/demo/images")
    assert detect.volumes_mount() is None
    store = VolumeStore()
    assert store.kind == "embedded" and store.root == air_home / "volumes"
    assert "holds 'Macintosh HD', which is not a catalog name" in store.why
    overview = VolumesOverview(str(store.root), store.kind, str(store.registry.file), None, store.volumes())
    assert "(embedded)" in repr(overview) and "Macintosh HD" in repr(overview)
    assert store.create("main.demo.images").location.startswith(str(air_home))  # the fake mount is untouched
    assert sorted(os.listdir(mount / "main/demo/images")) == []


@pytest.mark.parametrize(
    "dirs,file,needle",
    [
        (["main/demo/images"], "notes", "'notes' is a file, not a catalog folder"),
        (["main/demo/images", "main/bad name"], None, "'main/bad name', which is not a schema name"),
        (["main/demo/images"], "main/demo/readme", "'main/demo/readme' is a file, not a volume folder"),
    ],
)
def test_folder_holding_other_things_is_not_a_volumes_mount(tmp_path, monkeypatch, dirs, file, needle):
    mount = _mount_at(tmp_path, monkeypatch, *dirs)
    if file:
        (mount / file).write_text("x")
    store = VolumeStore()
    assert store.kind == "embedded" and needle in store.why


def test_catalog_schema_volume_folders_are_a_mount(tmp_path, monkeypatch):
    mount = _mount_at(tmp_path, monkeypatch, "main/demo/images", "main/demo/audio", "raw/x/y", ".hidden stuff")
    store = VolumeStore()
    assert (store.kind, store.root) == ("mount", mount) and "catalog/schema/volume" in store.why
    assert [v.volume_id for v in store.volumes()] == ["main.demo.audio", "main.demo.images", "raw.x.y"]
    (tmp_path / "e").mkdir()
    _mount_at(tmp_path / "e", monkeypatch)
    assert VolumeStore().kind == "mount" and "empty" in VolumeStore().why  # an empty folder holds no disks


def test_missing_mount_and_link_to_the_embedded_root_are_embedded(tmp_path, monkeypatch, air_home):
    store = VolumeStore()  # conftest points AIR_VOLUMES_MOUNT at a missing path
    assert store.kind == "embedded" and "is not a folder" in store.why
    (air_home / "volumes" / "main" / "demo" / "images").mkdir(parents=True)
    os.symlink(air_home / "volumes", tmp_path / "linked")
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "linked"))
    store = VolumeStore()
    assert store.kind == "embedded" and "leads to the embedded root" in store.why


def test_disk_mounted_below_is_not_a_volumes_mount(tmp_path, monkeypatch):
    if not os.path.ismount("/proc") or os.stat("/proc").st_dev == os.stat("/").st_dev:
        pytest.skip("needs /proc as a separate mount to stand in for a disk")
    mount = _mount_at(tmp_path, monkeypatch)
    os.symlink("/proc", mount / "disk")  # a folder on another device, as a disk under macOS /Volumes
    store = VolumeStore()
    assert store.kind == "embedded" and "is a disk mounted there" in store.why
