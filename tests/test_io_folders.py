"""io.folders (publishing a finished folder, withdrawing one) and io.pools.threads (pool sizes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from air_magics.errors import AirError, ConfinementError, SettingError, VolumeExistsError
from air_magics.io import folders
from air_magics.io.folders import publish_folder, withdraw_folder
from air_magics.io.leftovers import PENDING_EXPORT_PREFIX, TRASH_EXPORT_PREFIX, is_leftover, owned_name, sweep_stale
from air_magics.io.pools import KINDS, set_threads, threads


def _folder(path, **files: str) -> str:
    os.makedirs(path, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(path, name), "w") as f:
            f.write(text)
    return str(path)


def _content(path) -> dict[str, str]:
    return {n: open(os.path.join(path, n)).read() for n in sorted(os.listdir(path))}


@pytest.fixture(params=["exchange", "two-renames"])
def swap(request, monkeypatch):
    """Both ways of replacing a non-empty folder: the kernel's swap, and the portable fallback."""
    if request.param == "two-renames":
        monkeypatch.setattr(folders, "_exchange", None)
    elif folders._exchange is None:
        pytest.skip("renameat2 is not available here")
    return request.param


def test_publish_into_missing_and_empty_final(tmp_path):
    pending = _folder(tmp_path / owned_name(PENDING_EXPORT_PREFIX), a="new")
    publish_folder(pending, str(tmp_path / "out"))
    assert _content(tmp_path / "out") == {"a": "new"} and not os.path.exists(pending)
    os.makedirs(tmp_path / "empty")
    pending = _folder(tmp_path / owned_name(PENDING_EXPORT_PREFIX), b="new")
    publish_folder(pending, str(tmp_path / "empty"))  # an empty folder is taken without replace
    assert _content(tmp_path / "empty") == {"b": "new"}


def test_publish_refuses_a_non_empty_final_without_replace(tmp_path):
    final = _folder(tmp_path / "out", a="old")
    pending = _folder(tmp_path / owned_name(PENDING_EXPORT_PREFIX), a="new")
    with pytest.raises(VolumeExistsError, match="not empty; nothing was replaced") as err:
        publish_folder(pending, final)
    assert isinstance(err.value, AirError) and isinstance(err.value, FileExistsError)
    assert _content(final) == {"a": "old"} and _content(pending) == {"a": "new"}


def test_publish_replaces_a_non_empty_final(tmp_path, swap):
    final = _folder(tmp_path / "out", a="old", gone="old")
    pending = _folder(tmp_path / owned_name(PENDING_EXPORT_PREFIX), a="new")
    publish_folder(pending, final, root=str(tmp_path), replace=True)
    assert _content(final) == {"a": "new"}
    assert os.listdir(tmp_path) == ["out"]  # neither the pending nor the old folder is left


def test_publish_needs_siblings_and_stays_inside_root(tmp_path):
    pending = _folder(tmp_path / "elsewhere" / "p", a="new")
    with pytest.raises(ValueError, match="same folder"):
        publish_folder(pending, str(tmp_path / "out"))
    outside = tmp_path / "outside"
    os.makedirs(outside)
    os.makedirs(tmp_path / "vol")
    os.symlink(outside, tmp_path / "vol" / "link")
    pending = _folder(outside / "p", a="new")
    with pytest.raises(PermissionError, match="leads outside"):
        publish_folder(
            str(tmp_path / "vol" / "link" / "p"), str(tmp_path / "vol" / "link" / "out"), root=str(tmp_path / "vol")
        )
    assert os.listdir(outside) == ["p"]


def test_a_failure_between_the_two_renames_puts_the_old_folder_back(tmp_path, monkeypatch):
    monkeypatch.setattr(folders, "_exchange", None)
    monkeypatch.setattr(folders, "_BETWEEN", lambda: (_ for _ in ()).throw(OSError("disk gone")))
    final = _folder(tmp_path / "out", a="old")
    pending = _folder(tmp_path / owned_name(PENDING_EXPORT_PREFIX), a="new")
    with pytest.raises(OSError, match="disk gone"):
        publish_folder(pending, final, replace=True)
    assert _content(final) == {"a": "old"} and _content(pending) == {"a": "new"}
    assert sorted(os.listdir(tmp_path)) == sorted(["out", os.path.basename(pending)])


def test_a_process_killed_between_the_two_renames_leaves_no_half_folder(tmp_path):
    """A real kill (os._exit) after the old folder left its name: the final name is absent (never
    half-published), and what is left is two leftovers the sweeper removes once the owner is dead."""
    final = _folder(tmp_path / "out", a="old")
    script = textwrap.dedent(
        f"""
        import os
        from air_magics.io import folders
        from air_magics.io.leftovers import PENDING_EXPORT_PREFIX, owned_name
        pending = os.path.join({str(tmp_path)!r}, owned_name(PENDING_EXPORT_PREFIX))
        os.makedirs(pending)
        open(os.path.join(pending, "a"), "w").write("new")
        folders._exchange = None
        folders._BETWEEN = lambda: os._exit(9)
        folders.publish_folder(pending, {final!r}, replace=True)
        """
    )
    assert subprocess.run([sys.executable, "-c", script], check=False).returncode == 9
    left = sorted(os.listdir(tmp_path))
    assert "out" not in left and len(left) == 2 and all(is_leftover(n) for n in left)
    assert {n.startswith(PENDING_EXPORT_PREFIX) for n in left} == {True, False}
    trash = next(n for n in left if n.startswith(TRASH_EXPORT_PREFIX))
    assert _content(tmp_path / trash) == {"a": "old"}
    assert sorted(sweep_stale(str(tmp_path), remove_dirs=True)) == left
    assert os.listdir(tmp_path) == []


def test_withdraw_folder_renames_out_of_sight(tmp_path):
    final = _folder(tmp_path / "step_1", a="x")
    withdraw_folder(final, str(tmp_path / ".pruning-step_1.abc"), root=str(tmp_path))
    assert os.listdir(tmp_path) == [".pruning-step_1.abc"]
    with pytest.raises(FileNotFoundError):
        withdraw_folder(final, str(tmp_path / ".pruning-step_1.def"))


def test_threads_by_kind_and_override():
    assert threads("remote-io") == KINDS["remote-io"] == 64
    assert threads("cpu") == max(1, os.cpu_count() or 1)
    set_threads("stream", 3)
    try:
        assert threads("stream") == 3
    finally:
        set_threads("stream", None)
    assert threads("stream") == 16
    with pytest.raises(SettingError, match="unknown thread pool kind 'gpu'"):
        threads("gpu")
    with pytest.raises(SettingError, match="whole number >= 1, not 0"):
        set_threads("cpu", 0)


def test_staging_folder_is_fresh_and_goes_on_exit(tmp_path):
    from air_magics.io.folders import publish_staged, staging_folder

    final = _folder(tmp_path / "shard", old="kept")
    _folder(tmp_path / "shard.tmp", dead="a killed writer's")  # what a dead writer left
    with staging_folder(f"{final}.tmp") as staging:
        assert os.listdir(staging) == []
        (staging / "0").write_text("member")
        publish_staged(str(staging / "0"), os.path.join(final, "m"))
        (staging / "1").write_text("never verified")
    assert _content(final) == {"m": "member", "old": "kept"} and not os.path.exists(f"{final}.tmp")
    with pytest.raises(RuntimeError, match="stop"), staging_folder(f"{final}.tmp") as staging:
        (staging / "0").write_text("half")
        raise RuntimeError("stop")
    assert not os.path.exists(f"{final}.tmp") and _content(final) == {"m": "member", "old": "kept"}


def test_a_held_folder_commits_with_its_marker_and_never_replaces_a_step(tmp_path):
    """HeldFolder.commit (the manager's commit, relative to its folder's descriptor): the marker is
    written into the pending folder, then one rename makes it the final name; a non-empty final is
    refused with both folders left as they were, and a link planted as the pending folder is not
    followed."""
    from air_magics.checkpoints.held_folder import HeldFolder
    from air_magics.volumes.location import Location

    run = tmp_path / "run"
    _folder(run / ".pending-step_1", data="one")
    held = HeldFolder(Location(str(run), root=str(tmp_path)))
    held.commit(".pending-step_1", "step_1", marker="_COMMITTED", text="{}")
    assert sorted(os.listdir(run)) == ["step_1"]
    assert _content(run / "step_1") == {"_COMMITTED": "{}", "data": "one"}

    _folder(run / ".pending-step_1", data="again")
    with pytest.raises(VolumeExistsError, match="step_1"):
        held.commit(".pending-step_1", "step_1", marker="_COMMITTED", text="{}")
    assert _content(run / "step_1") == {"_COMMITTED": "{}", "data": "one"}

    outside = _folder(tmp_path / "elsewhere", x="1")
    os.symlink(outside, run / ".pending-step_2")
    with pytest.raises(ConfinementError, match="symlink"):
        held.commit(".pending-step_2", "step_2", marker="_COMMITTED", text="{}")
    with pytest.raises(ConfinementError, match="symlink"):
        held.make_folder(".pending-step_2")
    assert _content(outside) == {"x": "1"} and not (run / "step_2").exists()
    held.write_text("latest", "step_1", fsync=False)
    assert (run / "latest").read_text() == "step_1" and held.read_text("latest") == "step_1"
