"""One store per process and settings (``VolumeStore.shared``), its mount probe made once per settings
and looked at again when the settings change or a mount/unmount runs (issue 23)."""

import os

from air_magics.volumes import VolumeStore, detect, mount, unmount


def test_shared_store_is_one_object_per_settings(tmp_path, monkeypatch, air_home):
    a = VolumeStore.shared()
    assert VolumeStore.shared() is a and a.root == air_home / "volumes"
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "other"))  # a changed setting counts at once
    b = VolumeStore.shared()
    assert b is not a and b.root == tmp_path / "other" / "volumes"
    assert b.registry.file == tmp_path / "other" / "volume_registry.json"
    monkeypatch.setenv("AIR_VOLUMES_ROOT", str(tmp_path / "root"))
    assert VolumeStore.shared().root == tmp_path / "root"


def test_the_mount_probe_is_made_once_per_settings(tmp_path, monkeypatch):
    point = tmp_path / "Volumes"
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(point))
    assert VolumeStore().kind == "embedded" and "is not a folder" in VolumeStore().why
    point.mkdir()  # an empty folder counts as a mount, but the answer is cached ...
    assert VolumeStore().kind == "embedded" and VolumeStore.shared().kind == "embedded"
    assert detect.probe(point)[0] == point  # ... while the uncached look sees it now
    detect.forget()  # looked at again on request (`%air_volume` with no arguments does this)
    assert VolumeStore().kind == "mount" and VolumeStore.shared().root == point
    other = tmp_path / "elsewhere"
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(other))  # another point: another probe
    assert VolumeStore.shared().kind == "embedded" and str(other) in VolumeStore.shared().why


def test_mount_and_unmount_refresh_the_cached_probe(tmp_path, monkeypatch, air_home):
    point = tmp_path / "Volumes"
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(point))
    before = VolumeStore.shared()
    assert "is not a folder" in before.why
    assert mount().mode == "symlink" and os.path.islink(point)
    linked = VolumeStore.shared()
    assert linked is not before and "leads to the embedded root" in linked.why and linked.kind == "embedded"
    assert unmount().changed
    assert "is not a folder" in VolumeStore.shared().why


def test_the_overview_looks_at_the_mount_point_again(ip, tmp_path, monkeypatch):
    point = tmp_path / "Volumes"
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(point))
    assert "is not a folder" in repr(ip.run_line_magic("air_volume", ""))
    point.mkdir()  # a mount appeared behind this process's back
    assert "is an empty folder (no disks)" in repr(ip.run_line_magic("air_volume", ""))


def test_a_long_lived_process_sees_a_mount_come_and_go_after_a_while(tmp_path, monkeypatch):
    """The Jupyter server lives for days: an answer is looked at again after NO_MOUNT_TTL seconds,
    and the shared store follows when it changed (a FUSE mount made or killed behind its back)."""
    point = tmp_path / "Volumes"
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(point))
    assert VolumeStore.shared().kind == "embedded"
    point.mkdir()  # appears: cached for now ...
    assert VolumeStore.shared().kind == "embedded"
    monkeypatch.setattr(detect, "NO_MOUNT_TTL", 0.0)  # ... until the answer is old enough
    assert VolumeStore.shared().kind == "mount" and VolumeStore.shared().root == point
    point.rmdir()  # goes: not a mount point any more, so the cheap check sends it to a full look
    assert VolumeStore.shared().kind == "embedded"
