import os

import pytest

from air_magics.errors import CopyPlanError, DestinationError, VolumeNotFoundError, VolumePathError
from air_magics.transfer import parse_sources, plan_copy
from air_magics.volumes import VolumePath, VolumeStore


@pytest.fixture
def store():
    s = VolumeStore()
    s.create("main.raw.img")
    for rel in ["data/train/a.jpg", "data/train/sub/b.jpg", "data/val/c.jpg", "data/val/d.txt", "top.txt"]:
        with s.open(f"/Volumes/main/raw/img/{rel}", "wb") as f:
            f.write(rel.encode())
    return s


def rels(plan, dest):
    return sorted(os.path.relpath(t.dst.path, dest) for t in plan.tasks)


def test_parse_sources_skips_blanks_and_comments():
    assert parse_sources("\n  /Volumes/a/b/c/x \n# comment\n\nd.e.f\n") == ["/Volumes/a/b/c/x", "d.e.f"]


def test_folder_keeps_its_name_and_structure(store, tmp_path):
    plan = plan_copy(["/Volumes/main/raw/img/data/train"], str(tmp_path / "out"), store=store)
    assert rels(plan, tmp_path / "out") == ["train/a.jpg", "train/sub/b.jpg"]
    assert all(t.size is None for t in plan.tasks)  # names only: sizes come from fstat when copying


def test_glob_is_anchored_at_its_literal_prefix(store, tmp_path):
    plan = plan_copy("/Volumes/main/raw/img/data/**/*.jpg", str(tmp_path), store=store)
    assert rels(plan, tmp_path) == ["train/a.jpg", "train/sub/b.jpg", "val/c.jpg"]
    plan = plan_copy("/Volumes/main/raw/img/data/*/c.*", str(tmp_path), store=store)
    assert rels(plan, tmp_path) == ["val/c.jpg"]


def test_single_file_and_default_volume(store, tmp_path):
    plan = plan_copy(
        ["top.txt", "data/val/d.txt"], str(tmp_path), store=store, default_volume=VolumePath.parse("main.raw.img")
    )
    assert rels(plan, tmp_path) == ["d.txt", "top.txt"]
    with pytest.raises(VolumePathError, match="default volume"):
        plan_copy(["top.txt"], str(tmp_path), store=store)


def test_local_source_to_volume(store, tmp_path):
    src = tmp_path / "local"
    (src / "x").mkdir(parents=True)
    (src / "x" / "1.bin").write_bytes(b"1")
    plan = plan_copy([str(src)], "/Volumes/main/raw/img/uploads", store=store)
    assert [os.path.relpath(t.dst.path, store.locate("/Volumes/main/raw/img/uploads").path) for t in plan.tasks] == [
        "local/x/1.bin"
    ]


@pytest.mark.parametrize(
    "sources,err,needle",
    [
        ([], CopyPlanError, "no sources"),
        (["/Volumes/main/raw/img/data/*.png"], CopyPlanError, "matched no files"),
        (["/Volumes/main/raw/img/nothing"], VolumeNotFoundError, "does not exist"),
        (["/Volumes/main/raw/nope/x"], VolumeNotFoundError, "create it with"),
        (["/Volumes/main/raw/img/../x"], VolumePathError, "'..'"),
        (["/nonexistent/local/dir"], VolumeNotFoundError, "does not exist"),
        (
            [
                "/Volumes/main/raw/img/data/train/a.jpg",
                "/Volumes/main/raw/img/data/val/c.jpg",
                "/Volumes/main/raw/img/data/train",
            ],
            None,
            None,
        ),
    ],
)
def test_bad_sources(store, tmp_path, sources, err, needle):
    if err is None:
        plan_copy(sources, str(tmp_path / "ok"), store=store)
        return
    with pytest.raises(err, match=needle):
        plan_copy(sources, str(tmp_path / "out"), store=store)
    assert not (tmp_path / "out").exists()  # nothing written


def test_clashing_targets(store, tmp_path):
    store.create("main.raw.other")
    with store.open("/Volumes/main/raw/other/train/a.jpg", "wb") as f:
        f.write(b"other")
    with pytest.raises(CopyPlanError, match="both copy to 'train/a.jpg'"):
        plan_copy(
            ["/Volumes/main/raw/img/data/train", "/Volumes/main/raw/other/train"], str(tmp_path / "o"), store=store
        )


def test_destination_inside_source(store):
    with pytest.raises(DestinationError, match="inside source"):
        plan_copy(["/Volumes/main/raw/img/data"], "/Volumes/main/raw/img/data/backup", store=store)
    vol_dir = store.locate("/Volumes/main/raw/img/data").path
    with pytest.raises(DestinationError, match="inside source"):
        plan_copy(["/Volumes/main/raw/img/data"], os.path.join(vol_dir, "train", "copy"), store=store)


def test_destination_is_a_file(store, tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(DestinationError, match="is a file"):
        plan_copy(["/Volumes/main/raw/img/top.txt"], str(tmp_path / "f"), store=store)
