"""``%air_volume mount``: ``/Volumes/...`` paths in plain Python, through a link to the embedded root (issue 12, item 1)."""

import os
import shutil

import pytest
from IPython.core.error import UsageError

from air_magics.errors import VolumeExistsError
from air_magics.volumes import VolumeStore, detect, mount, mount_status, unmount


@pytest.fixture
def point(tmp_path, monkeypatch):
    """A private mount point (the setting the store probes), missing until mounted."""
    p = tmp_path / "Volumes"
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(p))
    return p


def test_mount_makes_plain_python_work_on_volume_paths(point, air_home):
    root = air_home / "volumes"
    assert not root.exists()  # a fresh AIR_HOME: the embedded root is made by mount
    status = mount()
    assert (status.mode, status.changed, status.plain_python) == ("symlink", True, True)
    assert point.is_symlink() and os.path.realpath(point) == os.path.realpath(root)

    VolumeStore().create("main.ds.files")
    vol = point / "main" / "ds" / "files"
    with open(vol / "notes.txt", "w") as f:  # the runtime's raw-path snippets, unchanged
        f.write("hello")
    assert os.listdir(vol) == ["notes.txt"]
    shutil.copytree(vol, vol / "copy")
    assert (vol / "copy" / "notes.txt").read_text() == "hello"

    import torch

    torch.save({"w": torch.arange(3)}, str(vol / "model.pt"))
    assert torch.load(str(vol / "model.pt"))["w"].tolist() == [0, 1, 2]

    from PIL import Image

    Image.new("RGB", (4, 3), (255, 0, 0)).save(vol / "red.png")
    with Image.open(vol / "red.png") as im:
        assert im.size == (4, 3) and im.getpixel((0, 0)) == (255, 0, 0)

    # the store sees the very same files once, through the embedded root, never as a second mount
    store = VolumeStore()
    assert store.kind == "embedded" and store.root == root
    assert [v.volume_id for v in store.volumes()] == ["main.ds.files"]
    assert {f.path.name for f in store.ls("/Volumes/main/ds/files")} == {"notes.txt", "copy", "model.pt", "red.png"}
    assert detect.volumes_mount() is None and "leads to the embedded root" in detect.volumes_mount_status()[1]
    with store.open("/Volumes/main/ds/files/notes.txt") as f:
        assert f.read() == b"hello"

    again = mount()  # idempotent
    assert (again.mode, again.changed) == ("symlink", False)
    gone = unmount()
    assert gone.changed and gone.mode == "store" and not os.path.lexists(point)
    assert (root / "main" / "ds" / "files" / "notes.txt").read_text() == "hello"  # the files stay
    assert unmount().changed is False  # nothing left to remove


@pytest.mark.parametrize("kind", ["folder", "file", "link"])
def test_mount_refuses_an_existing_point_and_changes_nothing(point, tmp_path, kind):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("not a catalog")  # an empty folder would count as a volumes mount
    if kind == "folder":
        point.mkdir()
        (point / "Macintosh HD").mkdir()  # a Mac's /Volumes: not a volumes mount
    elif kind == "file":
        point.write_text("x")
    else:
        point.symlink_to(elsewhere)
    before = (point.is_symlink(), point.is_dir(), sorted(os.listdir(point)) if point.is_dir() else None)
    with pytest.raises(VolumeExistsError, match=f"cannot mount: {point} already exists as .*nothing changed") as info:
        mount()
    assert "\n" not in str(info.value) and ("rm " in str(info.value)) == (kind == "link")  # never rm a folder
    assert (point.is_symlink(), point.is_dir(), sorted(os.listdir(point)) if point.is_dir() else None) == before
    assert mount_status().mode == "store" and "left as it is" in mount_status().hint
    with pytest.raises(VolumeExistsError, match=f"cannot unmount {point}: .*not a link made by"):
        unmount()  # removes only its own link
    assert os.path.lexists(point)


def test_a_real_volumes_mount_is_left_alone(point):
    (point / "main" / "default" / "vol").mkdir(parents=True)  # looks like a volumes mount
    status = mount()
    assert (status.mode, status.changed, status.plain_python) == ("mount", False, True)
    assert point.is_dir() and not point.is_symlink()
    with pytest.raises(VolumeExistsError, match="not a link made by .* but a folder"):
        unmount()


def test_where_the_link_may_not_be_made_the_status_says_the_one_command(air_home):
    target = f"/sys/air-mount-test-{os.getpid()}"  # /sys refuses new entries even to root
    if not os.path.isdir("/sys"):
        pytest.skip("no /sys here: no point this process may not create")
    status = mount(target)
    if os.path.lexists(target):  # pragma: no cover - a /sys that takes links
        os.unlink(target)
        pytest.skip("this /sys accepted a link")
    assert (status.mode, status.changed) == ("store", False)
    root = os.path.realpath(air_home / "volumes")
    assert status.hint == f"run `sudo ln -s {root} {target}` once for /Volumes paths in plain Python"
    assert "keep working through the store" in status.detail


@pytest.fixture
def read_only(tmp_path):
    """A folder that becomes read-only for everyone, root included (a read-only bind mount of itself)."""
    import subprocess

    folder = tmp_path / "ro"
    folder.mkdir()

    sealed: list[bool] = []

    def seal() -> None:
        for cmd in (["mount", "--bind", str(folder), str(folder)], ["mount", "-o", "remount,bind,ro", str(folder)]):
            if subprocess.run(cmd, capture_output=True).returncode != 0:
                pytest.skip("cannot make a read-only bind mount here (needs root and mount rights)")
            sealed.append(True)

    yield folder, seal
    if sealed:  # a bind mount of a folder onto itself: os.path.ismount cannot see it
        subprocess.run(["umount", str(folder)], check=True)
    assert str(folder) not in open("/proc/self/mountinfo").read()


def test_link_in_a_read_only_place_changes_nothing_and_says_the_sudo_command(read_only, air_home):
    folder, seal = read_only
    made = folder / "Volumes"
    assert mount(made).mode == "symlink"
    seal()
    status = unmount(made)  # e.g. a link made with sudo: this process may not remove it
    assert (status.changed, status.hint) == (False, f"run `sudo rm {made}` to remove it") and made.is_symlink()
    status = mount(folder / "Other")
    root = os.path.realpath(air_home / "volumes")
    assert (status.mode, status.changed) == ("store", False) and not os.path.lexists(folder / "Other")
    assert status.hint == f"run `sudo ln -s {root} {folder / 'Other'}` once for /Volumes paths in plain Python"


def test_another_homes_link_is_not_a_foreign_mount(point, tmp_path, monkeypatch, air_home):
    VolumeStore().create("main.a.v")
    mount()
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home_b"))  # another AIR_HOME, same /Volumes link
    mnt, why = detect.volumes_mount_status()
    assert mnt is None and "embedded root of another AIR_HOME" in why
    store = VolumeStore()
    assert store.kind == "embedded" and store.root == tmp_path / "home_b" / "volumes" and store.volumes() == []
    status = mount_status()
    assert status.mode == "store" and "another AIR_HOME; unmount it there" in status.hint
    with pytest.raises(
        VolumeExistsError, match="linked by `%air_volume mount` with another AIR_HOME; unmount it there"
    ):
        mount()


def test_unmount_removes_only_a_link_this_home_made_and_names_its_folder(point, tmp_path, monkeypatch, air_home):
    """Issue 18, item 6: from another AIR_HOME, unmount removed home A's link and said the files
    stayed in home B's folder. Only the AIR_HOME that made a link removes it; messages name the
    folder the link leads to."""
    root_a = os.path.realpath(air_home / "volumes")
    mount()
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "home_b"))
    with pytest.raises(VolumeExistsError) as info:
        unmount()
    msg = str(info.value)
    assert msg.startswith(f"cannot unmount {point}: it is not a link made by `%air_volume mount` with this AIR_HOME")
    assert f"a link to {root_a}, an embedded root linked by `%air_volume mount` with another AIR_HOME" in msg
    assert f"(its files stay in {root_a})" in msg and "home_b/volumes" not in msg and "\n" not in msg
    assert point.is_symlink() and os.path.realpath(point) == root_a  # untouched

    # a link to this home's own root that its mount did not make (by hand, `ln -s`) is not removed either
    os.unlink(point)
    root_b = tmp_path / "home_b" / "volumes"
    root_b.mkdir(parents=True)
    point.symlink_to(root_b)
    assert mount_status().mode == "symlink"  # plain Python works through it
    with pytest.raises(
        VolumeExistsError, match=r"not made by its `%air_volume mount` \(`ln -s`\?\); remove it with `rm "
    ):
        unmount()
    os.unlink(point)

    assert mount().changed  # made here now: removed here, naming the folder it led to
    gone = unmount()
    assert gone.changed and gone.detail == f"removed the link {point}; the files stay in {os.path.realpath(root_b)}"
    monkeypatch.setenv("AIR_HOME", str(air_home))
    assert unmount().detail == f"nothing to unmount: {point} does not exist"


def test_registered_fsspec_volumes_are_reached_through_volumes_urls_not_raw_paths(point):
    import fsspec

    VolumeStore().register("main.mem.v", "memory://air-mount-test")
    mount()
    try:
        with fsspec.open("volumes://main/mem/v/a.txt", "wb") as f:
            f.write(b"remote")
        assert not (point / "main" / "mem").exists()  # not a file under the embedded root
        with fsspec.open("volumes://main/mem/v/a.txt", "rb") as f:
            assert f.read() == b"remote"
    finally:
        unmount()
        fsspec.filesystem("memory").rm("/air-mount-test", recursive=True)


def test_magic_says_which_mode_is_active(ip, point):
    overview = repr(ip.run_line_magic("air_volume", ""))
    assert "\nmode: embedded through the store only: " in overview and "%air_volume mount" in overview
    st = ip.run_line_magic("air_volume", "mount -o st")
    assert st.mode == "symlink" and point.is_symlink()
    overview = ip.run_line_magic("air_volume", "")
    assert f"\nmode: embedded via symlink: {point} -> " in repr(overview)
    assert "mode: embedded via symlink" in overview._repr_html_()
    assert ip.run_line_magic("air_volume", "unmount -o st").changed and not os.path.lexists(point)
    point.mkdir()
    (point / "stuff.txt").write_text("not a volumes mount")
    with pytest.raises(
        UsageError,
        match=r"^cannot mount: .* already exists as a folder \(.* is not a volumes mount: .*\), which is left as it is; nothing changed",
    ) as info:
        ip.run_line_magic("air_volume", "mount")
    assert "\n" not in str(info.value)
    with pytest.raises(UsageError, match="takes .POINT."):
        ip.run_line_magic("air_volume", "mount a b")


def test_real_slash_volumes(monkeypatch, air_home):
    """The one test on the real /Volumes: only where it is missing and may be created; removed after."""
    real = "/Volumes"
    if os.path.lexists(real):
        pytest.skip("/Volumes exists here: this test never touches an existing one")
    if not os.access("/", os.W_OK):
        pytest.skip("this process may not create /Volumes (not root)")
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", real)
    import torch

    try:
        assert mount().mode == "symlink"
        VolumeStore().create("main.first.day")
        torch.save({"step": 7}, "/Volumes/main/first/day/ckpt.pt")  # the reference runtime's own snippet
        assert torch.load("/Volumes/main/first/day/ckpt.pt") == {"step": 7}
        assert VolumeStore().stat("/Volumes/main/first/day/ckpt.pt").size > 0
    finally:
        if os.path.islink(real) and os.path.realpath(real) == os.path.realpath(air_home / "volumes"):
            os.unlink(real)
    assert not os.path.lexists(real)
