"""A new user's first day (issue 12, findings 3-10): each friction they hit, as a test."""

import os
import sys
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from air_magics.errors import DestinationError
from air_magics.transfer import CopyReport, copy_files, plan_copy
from air_magics.volumes import VolumeStore


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(30):
        with s.open(f"/Volumes/main/raw/img/train/c{i % 3}/{i:04d}.jpg", "wb") as f:
            f.write(b"j" * (100 + i))
    return s


# finding 4: an unwritable destination, which side failed, and a failed copy stops "Run All"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_unwritable_destination_is_refused_at_planning_even_for_root(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("x")
    # os.access says yes to root for /proc; the probe file it cannot create says no
    with pytest.raises(DestinationError, match=r"'/proc/forbidden' is not writable .*in '/proc'"):
        plan_copy([str(src)], "/proc/forbidden")


def test_write_probe_leaves_nothing_behind(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("x")
    plan_copy([str(src)], str(tmp_path / "new" / "dest"))
    assert sorted(os.listdir(tmp_path)) == ["src.txt"]


def test_failure_says_which_side_failed(tmp_path):
    (tmp_path / "src").mkdir()
    for name in ("gone.txt", "kept.txt"):
        (tmp_path / "src" / name).write_text(name)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "src").write_text("a file where the copy needs a folder")
    plan = plan_copy([str(tmp_path / "src")], str(dest))
    report = copy_files(plan.tasks, dest=plan.dest, retries=0)
    assert len(report.failed) == 2
    assert all(f.reason.startswith("writing the destination: ") for f in report.failed), report.failed
    assert "-> " + str(dest / "src") in str(report) and "<th>destination</th>" in report._repr_html_()

    (dest / "src").unlink()
    plan = plan_copy([str(tmp_path / "src")], str(dest))
    (tmp_path / "src" / "gone.txt").unlink()
    report = copy_files(plan.tasks, dest=plan.dest, retries=0)
    [failure] = report.failed
    assert failure.reason.startswith("reading the source: FileNotFoundError"), failure.reason


def test_copy_with_failures_raises_after_its_report(ip, vol, tmp_path, capsys):
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "train").write_text("a file where the copy needs a folder")
    with pytest.raises(UsageError, match=r"^30 of 30 files failed to copy to .*--allow-failures") as info:
        ip.run_cell_magic("air_copy", f"--to {dest} -q -o rep", "/Volumes/main/raw/img/train")
    assert "\n" not in str(info.value)
    assert "writing the destination" in capsys.readouterr().out  # the report was shown first
    assert isinstance(ip.user_ns["rep"], CopyReport) and len(ip.user_ns["rep"].failed) == 30
    report = ip.run_cell_magic("air_copy", f"--to {dest} -q --allow-failures", "/Volumes/main/raw/img/train")
    assert isinstance(report, CopyReport) and len(report.failed) == 30


# finding 5: mistyped flags and lines that cannot be split


@pytest.mark.parametrize(
    "magic,line,cell,hint",
    [
        ("air_volume", "ls /Volumes/main/raw/img --patern *.jpg", None, "--patern: did you mean --pattern?"),
        ("air_volume", "ls -R /Volumes/main/raw/img", None, "-R: did you mean -r?"),
        ("air_copy", "--too {d}", "/Volumes/main/raw/img/train", "--too: did you mean --to"),
        ("air_table", "main.raw.t --colums a,b", None, "--colums: did you mean --columns?"),
        ("air_copy", "--dest {d}", "/Volumes/main/raw/img/train", "--dest: did you mean --to?"),
        ("air_copy", "--to {d} --source /Volumes/main/raw/img", "x", "--source: did you mean --from?"),
    ],
)
def test_unknown_flags_get_did_you_mean_and_the_valid_flags(ip, vol, tmp_path, magic, line, cell, hint):
    d = tmp_path / "dest"
    with pytest.raises(UsageError) as info:
        if cell is None:
            ip.run_line_magic(magic, line)
        else:
            ip.run_cell_magic(magic, line.format(d=d), cell)
    msg = str(info.value)
    assert "\n" not in msg and "unrecognized arguments" in msg and hint in msg
    assert "Valid options: " in msg and "-o/--output VAR" in msg
    assert not d.exists()


def test_a_source_on_the_copy_line_points_to_the_cell_body_and_from(ip, vol, tmp_path):
    d = tmp_path / "dest"
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("air_copy", f"--to {d} /Volumes/main/raw/img/train")
    msg = str(info.value)
    assert "\n" not in msg and "unrecognized arguments: /Volumes/main/raw/img/train" in msg
    assert "below the magic line (%%air_copy --to DEST" in msg and "--from SRC" in msg
    assert not d.exists()


def test_a_misspelled_volume_gets_did_you_mean(ip, vol):
    with pytest.raises(UsageError, match=r"volume 'main.raw.imgs' does not exist .*\(did you mean main.raw.img\?\)"):
        ip.run_line_magic("air_volume", "ls /Volumes/main/raw/imgs")


@pytest.mark.parametrize(
    "magic,line",
    [("air_volume", 'ls "/Volumes/main/raw/img'), ("air_table", "t --where 'a = 1"), ("air_copy", "--to 'x")],
)
def test_unclosed_quote_is_one_line(ip, vol, magic, line):
    with pytest.raises(UsageError, match="cannot split .* into words .*close the quote") as info:
        if magic == "air_copy":
            ip.run_cell_magic(magic, line, "/Volumes/main/raw/img/train")
        else:
            ip.run_line_magic(magic, line)
    assert "\n" not in str(info.value)


# finding 7: a pattern that names subfolders looks below PATH without -r


def test_ls_pattern_with_a_slash_implies_recursion(ip, vol):
    for i in range(12):
        with vol.open(f"/Volumes/main/raw/img/imgs/train/d{i % 2}/f_{i:03d}.bin", "wb") as f:
            f.write(b"b")
    out = ip.run_line_magic("air_volume", 'ls /Volumes/main/raw/img --pattern "imgs/train/*/f_01?.bin"')
    assert sorted(e.path.name for e in out.files) == ["f_010.bin", "f_011.bin"]
    deep = ip.run_line_magic("air_volume", "ls /Volumes/main/raw/img/imgs --pattern **/*.bin")
    assert len(deep.files) == 12
    assert ip.run_line_magic("air_volume", "ls /Volumes/main/raw/img/imgs --pattern *.bin").files == []
    assert "a GLOB with '/' or '**' looks below PATH as -r does" in " ".join(
        ip.find_line_magic("air_volume").__doc__.split()
    )


# finding 3: completing a volume path offers volume paths only


@pytest.mark.parametrize(
    "line",
    ["%air_volume ls /Volumes/main/d", "/Volumes/main/d", 'open("/Volumes/main/d', "%%air_copy --to /Volumes/main/d"],
)
def test_completion_offers_only_volume_paths(ip, line):
    from IPython.core.completer import provisionalcompleter

    VolumeStore().create("main.ds.files")
    VolumeStore().create("main.data.v")
    with provisionalcompleter():
        texts = [c.text for c in ip.Completer.completions(line, len(line))]
    assert texts == ["/Volumes/main/data/", "/Volumes/main/ds/"]  # never dict, dir, divmod, delattr
    if line.startswith("%"):  # the terminal's older API, after a magic
        assert ip.complete("/Volumes/main/d", line)[1] == ["/Volumes/main/data/", "/Volumes/main/ds/"]


@pytest.mark.parametrize(
    "line,expected",
    [
        ("%air_volume mo", ["mount"]),
        ("%air_volume un", ["unmount"]),
        ("%air_volume ch", ["checkpoints"]),
        ("%air_volume ls --pa", ["--pattern"]),
        ("%air_volume create x.y.z --ex", ["--exist-ok"]),
        ("%%air_copy --allow", ["--allow-failures"]),
    ],
)
def test_completion_offers_commands_and_flags(ip, line, expected):
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        texts = [c.text for c in ip.Completer.completions(line, len(line))]
    assert texts == expected  # the magic's own words, never %more or Python names


# finding 6: help pages and messages in the magic's own words


def test_help_pages_show_the_syntax(ip):
    copy_doc = ip.find_cell_magic("air_copy").__doc__
    assert "one path or glob per line" in copy_doc and "--allow-failures" in copy_doc
    vol_doc = ip.find_line_magic("air_volume").__doc__
    flat = " ".join(vol_doc.split())
    assert "/Volumes/... paths work in plain Python" in flat and "... -o VAR" in flat
    for usage in (
        "%air_volume ls [PATH] [-r] [--limit N] [--pattern GLOB]",
        "%air_volume create catalog.schema.volume [--exist-ok]",
        "%air_volume register catalog.schema.volume URL [--endpoint URL]",
        "%air_volume use catalog.schema.volume",
        "%air_volume cache [--clear] [--force] [--check] [--repair]",
        "%air_volume checkpoints DIR",
        "%air_volume pack SRC DEST [--shard-size SIZE]",
        "%air_volume probe PATH",
        "%air_volume mount [POINT]",
        "%air_volume unmount [POINT]",
    ):
        assert usage in vol_doc
    with pytest.raises(UsageError, match=r"%air_volume pack takes SRC DEST; got a"):
        ip.run_line_magic("air_volume", "pack a")  # the error quotes the same usage


def test_already_exists_suggests_the_flag(ip, vol):
    with pytest.raises(UsageError, match="already exists .*add --exist-ok$") as info:
        ip.run_line_magic("air_volume", "create main.raw.img")
    assert "exist_ok=True" not in str(info.value)
    assert ip.run_line_magic("air_volume", "create main.raw.img --exist-ok -o v").volume_id == "main.raw.img"


def test_volume_names_are_letters_digits_underscore(ip, vol):
    # Decided in issue 18 (item 12): a new volume's names follow the table names' rule (letters,
    # digits, '_'; not starting with a digit; case kept), so one name serves a volume and a table;
    # paths still reach existing names with '-' (tests/test_volume_magic.py)
    assert ip.run_line_magic("air_volume", "create Main.my_ds.files -o v").volume_id == "Main.my_ds.files"
    with pytest.raises(UsageError, match=r"invalid schema name 'my\+ds'.*letters, digits and '_'"):
        ip.run_line_magic("air_volume", "create main.my+ds.files")
    with pytest.raises(UsageError, match=r"invalid schema name 'my-ds'.*write e.g. main.my_ds.files$"):
        ip.run_line_magic("air_volume", "create main.my-ds.files")


# finding 10: map-style access to a UCVolumeDataset


def test_dataset_getitem_returns_the_cached_local_path(vol):
    from air_magics.data import UCVolumeDataset

    ds = UCVolumeDataset("/Volumes/main/raw/img/train")
    assert len(ds) == 30
    first, last = ds[0], ds[-1]
    assert os.path.isfile(first) and open(first, "rb").read() == b"j" * 100  # train/c0/0000.jpg
    assert open(last, "rb").read() == b"j" * (100 + 29)  # train/c2/0029.jpg, the last in path order
    assert list(ds)[0] == first  # the same cached file the stream yields
    as_path = UCVolumeDataset(Path("/Volumes/main/raw/img/train"))  # a Path to a volume: a volume path, cached
    assert as_path[0] == first and len(as_path) == 30
    sized = UCVolumeDataset("/Volumes/main/raw/img/train", transform=os.path.getsize)
    assert sized[1] == 103  # train/c0/0003.jpg
    with pytest.raises(IndexError, match="out of range: it has 30 files"):
        ds[30]
    with pytest.raises(TypeError, match="indices are integers"):
        ds["0"]


# finding 8: checkpoint views agree with CheckpointManager, and honour %config AirMagics.widgets


def test_checkpoints_view_shows_pruned_steps_as_pruned(ip, vol):
    import torch

    from air_magics.data import CheckpointManager

    m = CheckpointManager("/Volumes/main/raw/img/ck", keep=2, show=False)
    for step in (4, 8, 12):
        m.save(step, {"w": torch.ones(2)})
    assert m.steps() == [8, 12] and m.latest() == 12
    text = repr(ip.run_line_magic("air_volume", "checkpoints /Volumes/main/raw/img/ck"))
    rows = {line.split()[1]: line.split()[2] for line in text.splitlines()[1:]}
    assert "latest 12, committed steps [8, 12]" in text
    assert rows == {"4": "pruned", "8": "committed", "12": "committed"}


def test_checkpoint_manager_view_follows_the_widgets_setting(ip, vol, monkeypatch):
    import importlib

    from air_magics.data import CheckpointManager

    listeners = importlib.import_module("air_magics.widgets.listeners")
    view_module = importlib.import_module("air_magics.widgets.checkpoint_view")
    shown = []
    monkeypatch.setattr(listeners, "has_widget_frontend", lambda: True)  # as in a notebook
    monkeypatch.setattr(view_module, "checkpoint_view", lambda d, display_now=False: shown.append(d))
    try:
        ip.run_line_magic("config", "AirMagics.widgets = False")
        CheckpointManager("/Volumes/main/raw/img/ck1").save(1, {"x": 1})
        CheckpointManager("/Volumes/main/raw/img/ck2", show=False).save(1, {"x": 1})
        assert shown == []
        ck3 = CheckpointManager("/Volumes/main/raw/img/ck3", show=True)  # asked for explicitly
        ip.run_line_magic("config", "AirMagics.widgets = True")
        ck4 = CheckpointManager("/Volumes/main/raw/img/ck4")
        assert shown == []  # a view appears with a manager's first save
        ck3.save(1, {"x": 1})
        ck4.save(1, {"x": 1})
        assert shown == ["/Volumes/main/raw/img/ck3", "/Volumes/main/raw/img/ck4"]
    finally:
        ip.run_line_magic("config", "AirMagics.widgets = True")


def test_writer_documents_one_sync_files_default():
    import inspect

    from air_magics.checkpoints.volume_writer import UCVolumeWriter

    doc = inspect.getdoc(UCVolumeWriter.__init__)
    assert "sync_files: fsync each data file. Default False here" in doc
    assert "Default to True" not in doc  # FileSystemWriter's own default no longer shows through


# the write probe's retry of a transient create: tests/test_fuse_copy.py, on a real faulty FUSE volume


def test_checkpoints_view_recognises_a_plain_dcp_folder(ip, vol):
    import torch
    import torch.distributed.checkpoint as dcp

    from air_magics.data import UCVolumeReader, UCVolumeWriter

    dcp.save({"w": torch.ones(3)}, storage_writer=UCVolumeWriter("/Volumes/main/raw/img/plain"))
    text = repr(ip.run_line_magic("air_volume", "checkpoints /Volumes/main/raw/img/plain"))
    assert "one plain DCP checkpoint (.metadata), not saved by a CheckpointManager" in text
    assert "latest None" not in text and "UCVolumeReader('/Volumes/main/raw/img/plain')" in text
    back = {"w": torch.zeros(3)}
    dcp.load(back, storage_reader=UCVolumeReader("/Volumes/main/raw/img/plain"))  # what the view suggests works
    assert back["w"].tolist() == [1.0, 1.0, 1.0]


# finding 10, second part: a plain local folder (or file:// URL) is a dataset source, read in place


@pytest.fixture
def local_folder(tmp_path):
    folder = tmp_path / "my data"  # a space: file:// URLs quote it
    for i in range(12):
        (folder / f"c{i % 2}").mkdir(parents=True, exist_ok=True)
        (folder / f"c{i % 2}" / f"{i:02d}.bin").write_bytes(bytes([i]) * (i + 1))
    (folder / "c0" / "notes.txt").write_text("not data")
    (tmp_path / "outside.bin").write_bytes(b"secret")
    (folder / "c1" / "escape.bin").symlink_to(tmp_path / "outside.bin")  # leads out: left out, as in a volume
    return folder


def test_dataset_reads_a_local_folder_in_place(local_folder, air_home):
    from pathlib import Path
    from urllib.parse import quote

    from air_magics.data import UCVolumeDataset

    expected = sorted(str(p) for p in local_folder.rglob("*.bin") if not p.is_symlink())
    for source in (str(local_folder), local_folder, "file://" + quote(str(local_folder))):
        ds = UCVolumeDataset(source, pattern="*.bin")
        assert list(ds) == expected  # the files where they lie, in path order
        assert ds[3] == expected[3] and open(ds[-1], "rb").read() == bytes([11]) * 12
    assert not (Path(air_home) / "cache" / "files").exists() or not any((Path(air_home) / "cache" / "files").rglob("*"))
    sized = UCVolumeDataset(str(local_folder / "c1"), transform=os.path.getsize)
    assert list(sized) == [2, 4, 6, 8, 10, 12]
    assert list(UCVolumeDataset(str(local_folder / "c*" / "0[0-3].bin"))) == expected[:2] + expected[6:8]


def test_local_folder_resumes_exactly_once(local_folder):
    from air_magics.data import DataLoader, UCVolumeDataset

    def loader():
        return DataLoader(UCVolumeDataset(local_folder, shuffle=True, seed=4), batch_size=2, num_workers=0)

    dl, first = loader(), []
    for step, batch in enumerate(dl):
        first += batch
        if step == 2:
            break
    state = dl.state_dict()
    again = loader()
    again.load_state_dict(state)
    rest = [p for batch in again for p in batch]
    assert len(first) == 6 and sorted(first + rest) == sorted(
        str(p) for p in local_folder.rglob("*") if p.is_file() and not p.is_symlink()
    )


def test_local_source_errors_are_one_line(tmp_path):
    from air_magics.data import UCVolumeDataset
    from air_magics.errors import AirError

    with pytest.raises(ValueError, match=r"'.*/missing' is outside /Volumes and is not an existing local") as info:
        UCVolumeDataset(str(tmp_path / "missing"))
    assert isinstance(info.value, AirError) and "\n" not in str(info.value)
    with pytest.raises(FileNotFoundError, match=r"local path '.*/missing' does not exist"):
        UCVolumeDataset(tmp_path / "missing")  # a Path is always meant as a local path
    with pytest.raises(ValueError, match=r"'train' is neither a volume path .*applies to the magics only"):
        UCVolumeDataset("train")  # after `%air_volume use`, a user tries the magics' relative form
    with pytest.raises(ValueError, match="not an absolute file URL"):
        UCVolumeDataset("file://relative/path")
    with pytest.raises(ValueError, match="no files in"):
        (tmp_path / "empty").mkdir()
        UCVolumeDataset(str(tmp_path / "empty"))
