"""The magics in a real IPython shell: output, errors as one-line UsageErrors, nothing written on bad input."""

import os
import subprocess
import sys

import pytest
from IPython.core.error import UsageError

from air_magics.transfer import CopyReport
from air_magics.volumes import VolumeStore
from air_magics.volumes.summary import ListingSummary, VolumesOverview


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(600):
        with s.open(f"/Volumes/main/raw/img/train/c{i % 3}/{i:04d}.jpg", "wb") as f:
            f.write(b"j" * (1000 + i))
    return s


def test_overview_lists_volumes(ip, vol, air_home):
    out = ip.run_line_magic("air_volume", "")
    assert isinstance(out, VolumesOverview)
    assert [v.volume_id for v in out.volumes] == ["main.raw.img"]
    assert str(air_home / "volumes") in repr(out) and "/Volumes/main/raw/img" in out._repr_html_()


def test_ls_summary_and_small_files_advice(ip, vol):
    out = ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/img --pattern *.jpg")
    assert isinstance(out, ListingSummary) and len(out.files) == 600
    assert out.distribution() == [("< 64 KiB", 600)]
    assert "%%air_copy" in out.advice() and "1-10 GiB" in out.advice()
    assert "tip:" in repr(out) and "&#9888;" in out._repr_html_()
    few = ip.run_line_magic("air_volume", "ls /Volumes/main/raw/img/train")
    assert [e.path.name for e in few.entries] == ["c0", "c1", "c2"] and few.advice() is None


def test_ls_counts_everything_and_shows_a_bounded_listing(ip, vol):
    out = ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/img --limit 7")
    text = repr(out)
    assert text.splitlines()[0] == "/Volumes/main/raw/img (recursive): 600 files, 761.4 KiB"
    rows = [line for line in text.splitlines() if line.startswith("  train/")]
    assert len(rows) == 7 and rows[0].split()[0] == "train/c0/0000.jpg"
    assert "... 593 more (--limit N shows more rows)" in text and "593 more" in out._repr_html_()
    # the statistics cover every file, not the rows shown; the full list is still there
    sizes = sorted(1000 + i for i in range(600))
    assert out.n_files == 600 and out.total_bytes == sum(sizes) and out.median_size == (sizes[299] + sizes[300]) / 2
    assert [str(f.path) for f in out.files[:2]] == [
        "/Volumes/main/raw/img/train/c0/0000.jpg",
        "/Volumes/main/raw/img/train/c0/0003.jpg",
    ]
    none = ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/img --limit 0")
    assert "600 more" in repr(none) and none.n_files == 600
    globbed = ip.run_line_magic("air_volume", "ls /Volumes/main/raw/img/train/c1/*.jpg --limit 2")
    assert globbed.n_files == 200 and "  /Volumes/main/raw/img/train/c1/0001.jpg" in repr(globbed)
    with pytest.raises(UsageError, match="--limit -1: give the number of rows"):
        ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/img --limit -1")
    with pytest.raises(UsageError, match="--limit only applies to `ls`"):
        ip.run_line_magic("air_volume", "create main.x.y --limit 3")


def test_a_long_listing_shows_its_progress_on_one_line(ip, vol, capsys, monkeypatch):
    import air_magics.magics.air_volume.ls_cmd as volume_magic
    import air_magics.volumes.filestats as filestats
    import air_magics.volumes.walk as walk

    monkeypatch.setattr(walk, "PROGRESS_EVERY", 100)  # 600 files: a few calls instead of one per 10,000
    # the Python walk counts in steps (GNU find's count is polled while it runs: not in fixed steps)
    monkeypatch.setattr(filestats, "_gnu_find", lambda: None)
    ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/img")
    assert "listing" not in capsys.readouterr().out  # a quick listing says nothing
    monkeypatch.setattr(volume_magic.ListingProgress, "after", 0.0)  # as if it ran long
    out = ip.run_line_magic("air_volume", "ls -r /Volumes/main/raw/img")
    printed = capsys.readouterr().out
    assert "\rlisting /Volumes/main/raw/img: 200 entries so far\rlisting /Volumes/main/raw/img: 400" in printed
    assert printed.endswith("s\n") and "\rlisting /Volumes/main/raw/img: done in " in printed
    assert out.n_files == 600


def test_create_register_use(ip, vol, capsys):
    ip.run_line_magic("air_volume", "create main.new.vol")
    assert "main.new.vol" in [v.volume_id for v in VolumeStore().volumes()]
    ip.run_line_magic("air_volume", "register ext.mem.vol memory://magic-test")
    assert "-> memory://magic-test" in capsys.readouterr().out
    ip.run_line_magic("air_volume", "use main.raw.img")
    out = ip.run_line_magic("air_volume", "ls train/c1")
    assert len(out.files) == 200


@pytest.mark.parametrize(
    "line,needle",
    [
        ("ls /tmp", "outside /Volumes"),
        ("ls /Volumes/main/raw/img/../../etc", "'..'"),
        ("ls /Volumes/main/raw/missing", "create it with"),
        ("ls train", "default volume"),
        ("ls", "needs a PATH"),
        ("frobnicate", "unknown command"),
        ("create a.b", "catalog.schema.volume"),
        ("create main.raw.img", "already exists"),
        ("register x.y.z", "catalog.schema.volume URL"),
        ("register x.y.z nope", "scheme"),
        ("use main.raw.gone", "does not exist"),
        ("ls --bogus /Volumes/main/raw/img", "unrecognized arguments"),
        ("create -r a.b.c", "-r only applies to `ls`"),
    ],
)
def test_volume_errors_are_usage_errors(ip, vol, line, needle):
    with pytest.raises(UsageError, match=needle) as info:
        ip.run_line_magic("air_volume", line)
    assert "\n" not in str(info.value)


def test_copy_cell(ip, vol, tmp_path):
    dest = tmp_path / "local"
    report = ip.run_cell_magic(
        "air_copy",
        f"--to {dest} --workers 8 -o rep -q",
        "/Volumes/main/raw/img/train/c0\n# a comment\n/Volumes/main/raw/img/train/c1/000*.jpg\n",
    )
    assert isinstance(report, CopyReport) and report.ok and report.copied == 200 + 3
    assert ip.user_ns["rep"] is report
    assert len(list((dest / "c0").iterdir())) == 200 and sorted(os.listdir(dest)) == [
        "0001.jpg",
        "0004.jpg",
        "0007.jpg",
        "c0",
    ]
    dry = ip.run_cell_magic("air_copy", f"--to {tmp_path / 'dry'} --dry-run -q", "/Volumes/main/raw/img/train")
    assert dry.dry_run and dry.copied == 600 and not (tmp_path / "dry").exists()


def test_copy_text_progress_outside_notebooks(ip, vol, tmp_path, capsys):
    ip.run_cell_magic("air_copy", f"--to {tmp_path / 'p'}", "/Volumes/main/raw/img/train/c2")
    err = capsys.readouterr().err
    assert "200/200" in err and "copy to" in err


@pytest.mark.parametrize(
    "line,cell,needle",
    [
        ("", "/Volumes/main/raw/img/train", "needs --to"),
        ("--to {d}", "   \n\n", "cell is empty"),
        ("--to {d}", "/Volumes/main/raw/img/nothing", "does not exist"),
        ("--to {d}", "/Volumes/main/raw/img/train/*.png", "matched no files"),
        ("--to {d}", "/Volumes/main/raw/img/../x", "'..'"),
        ("--to {d} --workers 0", "/Volumes/main/raw/img/train", "at least 1"),
        ("--to {d} --frob", "/Volumes/main/raw/img/train", "unrecognized arguments"),
        ("--to {d} -o 1x", "/Volumes/main/raw/img/train", "variable name"),
        ("--to /Volumes/main/raw/img/train/backup", "/Volumes/main/raw/img/train", "inside source"),
        ("--to {d}", "relative/path", "default volume"),
    ],
)
def test_copy_errors_write_nothing(ip, vol, tmp_path, line, cell, needle):
    d = tmp_path / "dest"
    with pytest.raises(UsageError, match=needle) as info:
        ip.run_cell_magic("air_copy", line.format(d=d), cell)
    assert "\n" not in str(info.value)
    assert not d.exists()
    assert not (VolumeStore().root / "main/raw/img/train/backup").exists()


def test_completion_of_volume_paths(ip, vol):
    _, matches = ip.complete("/Volumes/ma", "%air_volume ls /Volumes/ma")
    assert "/Volumes/main/" in matches
    _, matches = ip.complete("/Volumes/main/raw/img/tr", "%air_volume ls /Volumes/main/raw/img/tr")
    assert "/Volumes/main/raw/img/train/" in matches
    _, matches = ip.complete("/Volumes/main/raw/img/train/c", "/Volumes/main/raw/img/train/c")  # a %%air_copy body line
    assert {"/Volumes/main/raw/img/train/c0/", "/Volumes/main/raw/img/train/c1/"} <= set(matches)


def test_help_comes_from_magic_arguments(ip):
    doc = ip.find_line_magic("air_volume").__doc__
    assert "--pattern GLOB" in doc and "--recursive" in doc
    assert "--dry-run" in ip.find_cell_magic("air_copy").__doc__


def test_extension_import_is_light():
    code = (
        "import sys, time; t = time.perf_counter(); import air_magics, air_magics.magics; "
        "print(time.perf_counter() - t); "
        "print(','.join(m for m in ('torch', 'pyspark', 'pandas', 'datasets', 'ipywidgets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[1] == ""  # no heavy module imported by loading the extension


def test_cache_command_text_and_clear(ip, vol, capsys):
    from air_magics.cache import FileCache

    FileCache().get("/Volumes/main/raw/img/train/c0/0000.jpg")
    out = ip.run_line_magic("air_volume", "cache")
    assert "hit rate" in repr(out) and "1 misses" in repr(out)
    capsys.readouterr()
    ip.run_line_magic("air_volume", "cache --clear")  # the file was just handed out: pinned, kept
    out = capsys.readouterr().out
    assert "removed 0 cached files" in out and "kept 1" in out and "force=True" in out
    ip.run_line_magic("air_volume", "cache --clear --force")
    assert "removed 1 cached files" in capsys.readouterr().out
    with pytest.raises(UsageError, match="--force only applies"):
        ip.run_line_magic("air_volume", "cache --force")
    with pytest.raises(UsageError, match="--clear only applies"):
        ip.run_line_magic("air_volume", "ls --clear /Volumes/main/raw/img")


def test_checkpoints_command(ip, vol):
    import torch

    from air_magics.data import CheckpointManager

    CheckpointManager("/Volumes/main/raw/img/ckpt", show=False).save(3, {"w": torch.ones(2)})
    out = ip.run_line_magic("air_volume", "checkpoints /Volumes/main/raw/img/ckpt")
    assert "latest 3" in repr(out) and "committed" in repr(out)
    with pytest.raises(UsageError, match="does not exist"):
        ip.run_line_magic("air_volume", "checkpoints /Volumes/main/raw/img/none")
    with pytest.raises(UsageError, match="takes DIR"):
        ip.run_line_magic("air_volume", "checkpoints")


def test_copy_job_is_published_with_its_name_and_sources(ip, vol, tmp_path):
    from air_magics.status import read_status

    ip.run_cell_magic("air_copy", f"--to {tmp_path / 'jobbed'} -q --job nightly-sync", "/Volumes/main/raw/img/train/c0")
    doc = read_status("job-copy-nightly-sync")
    assert doc["state"] == "done" and doc["sources"] == ["/Volumes/main/raw/img/train/c0"] and doc["pid"] == os.getpid()
    with pytest.raises(UsageError, match="--job"):
        ip.run_cell_magic("air_copy", f"--to {tmp_path / 'x'} --job 'a b'", "/Volumes/main/raw/img/train/c0")


def test_malformed_status_documents_are_skipped(air_home):
    from air_magics.status import list_status, read_status, write_status

    write_status("job-copy-good", {"kind": "copy"})
    (air_home / "run" / "job-copy-list.json").write_text("[1, 2]")
    (air_home / "run" / "job-copy-upd.json").write_text('{"updated": "yesterday"}')
    assert [d["name"] for d in list_status("job-copy-")] == ["job-copy-good"]
    assert read_status("job-copy-list") is None and read_status("job-copy-upd") is None


def test_copy_body_is_taken_literally(ip, vol, tmp_path):
    """A file named ``x{7*6}.txt`` is that file, through IPython's own cell transformation too."""
    for name, data in (("x{7*6}.txt", b"literal"), ("x42.txt", b"evaluated")):
        with vol.open(f"/Volumes/main/raw/img/odd/{name}", "wb") as f:
            f.write(data)
    dest = tmp_path / "lit"
    ip.user_ns["dest_dir"] = str(dest)
    result = ip.run_cell("%%air_copy --to {dest_dir} -q -o lit_report\n/Volumes/main/raw/img/odd/x{7*6}.txt\n")
    assert result.success, result.error_in_exec
    assert ip.user_ns["lit_report"].copied == 1
    assert os.listdir(dest) == ["x{7*6}.txt"] and (dest / "x{7*6}.txt").read_bytes() == b"literal"


def test_copy_body_code_is_not_run(ip, vol, tmp_path):
    ip.user_ns["ran"] = ran = []
    with pytest.raises(UsageError, match="does not exist") as info:
        ip.run_cell_magic(
            "air_copy",
            f"--to {tmp_path / 'x'} -q",
            "/Volumes/main/raw/img/{__import__('os').getpid() and 'train'}\n"
            "/Volumes/main/raw/img/{ran.append(1) or 'train'}",
        )
    assert "getpid" in str(info.value) and ran == [] and not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "magic,line",
    [
        ("air_volume", "ls /Volumes/main/raw/img/{ran.append(1) or 'train'}"),
        ("air_volume", "create main.raw.{ran.append(1) or 'fresh'}"),
        ("air_table", "--tables --sql \"{ran.append(1) or 'x'}\""),
    ],
)
def test_magic_lines_never_evaluate(ip, vol, magic, line):
    ip.user_ns["ran"] = ran = []
    with pytest.raises(UsageError):
        ip.run_line_magic(magic, line)
    assert ran == [] and "main.raw.fresh" not in [v.volume_id for v in VolumeStore().volumes()]


def test_magic_lines_expand_plain_names(ip, vol, tmp_path):
    ip.user_ns.update(vol_dir="/Volumes/main/raw/img/train", sub="c1")
    assert len(ip.run_line_magic("air_volume", "ls {vol_dir}/$sub").files) == 200
    dest = tmp_path / "named"
    ip.user_ns["dest_dir"] = str(dest)
    ip.run_cell_magic("air_copy", "--to $dest_dir -q", "/Volumes/main/raw/img/train/c2/0002.jpg")
    assert os.listdir(dest) == ["0002.jpg"]
    with pytest.raises(UsageError, match=r"img/\{undefined_name\}' does not exist"):  # unknown: as written
        ip.run_line_magic("air_volume", "ls /Volumes/main/raw/img/{undefined_name}")


@pytest.mark.parametrize(
    "line,expected",
    [
        ("ls {p}", "ls /V/x"),
        ("ls $p/$n", "ls /V/x/3"),
        ("{{p}} $$p {{}}", "{p} $p {}"),
        ("{p.upper()} {7*6} {missing} $missing {p!r} {0}", "{p.upper()} {7*6} {missing} $missing {p!r} {0}"),
        ("{__import__('os').getpid()}", "{__import__('os').getpid()}"),
        ("{ p }", "{ p }"),
        ("x{n}{n}$n", "x333"),
    ],
)
def test_expand_names(line, expected):
    from air_magics.magics._common import expand_names

    assert expand_names(line, {"p": "/V/x", "n": 3}) == expected


def test_every_magic_line_of_a_cell_shows_its_result_in_order(ip, vol, capsys):
    """A cell of several magic lines (the README's tour) shows each line's result where it runs, not
    only the last one's; the last is shown once (by IPython), an assigned one not at all."""
    capsys.readouterr()
    ip.run_cell(
        "%air_volume ls /Volumes/main/raw/img/train/c0 --limit 1\n"
        "listed = %air_volume ls /Volumes/main/raw/img/train/c2 --limit 1\n"
        "%air_volume ls /Volumes/main/raw/img/train/c1 --limit 1\n"
        "%air_volume ls /Volumes --limit 1\n",
        store_history=True,
    )
    out = capsys.readouterr().out
    first, second, last = (out.find(f"/Volumes/main/raw/img/train/c{i}") for i in (0, 1, 2))
    assert 0 <= first < second and last == -1, out  # in order; the assigned listing is not shown
    assert out.count("/Volumes/main/raw/img/train/c1:") == 1 and out.count("Out[") == 1 and "/Volumes: 1 catalog" in out
    assert ip.user_ns["listed"].n_files == 200
    ip.run_cell(
        "for p in ('c0', 'c1'):\n    %air_volume ls /Volumes/main/raw/img/train/{p} --limit 1\n", store_history=True
    )
    assert "/Volumes/main/raw/img/train/c0" not in capsys.readouterr().out  # a loop's values are left alone


def test_a_magic_line_with_o_var_is_not_shown_twice(ip, vol, capsys):
    """``-o VAR`` captures the value (as an assignment does): a later line shows VAR, once."""
    capsys.readouterr()
    ip.run_cell("%air_volume ls /Volumes/main/raw/img/train/c0 --limit 1 -o got\ngot\n", store_history=True)
    assert capsys.readouterr().out.count("/Volumes/main/raw/img/train/c0:") == 1
