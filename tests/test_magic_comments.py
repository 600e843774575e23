"""Magic lines take a trailing shell comment (issue 37, item 1): the README's tour pastes as written."""

import pytest
from IPython.core.error import UsageError

from air_magics.magics._common import strip_comment
from air_magics.transfer.copy_plan import parse_sources
from air_magics.volumes import VolumeStore


@pytest.mark.parametrize(
    "line,expected",
    [
        ("create main.demo.images  # a new volume", "create main.demo.images"),
        ("ls /Volumes/main  # a catalog's schemas", "ls /Volumes/main"),  # an apostrophe in a comment
        ('ls -r x --pattern "*.jpg"   # every file; "quoted" too', 'ls -r x --pattern "*.jpg"'),
        ("# only a comment", ""),
        ("   # only a comment, indented", ""),
        ("ls '/Volumes/main/d/v/a #b'", "ls '/Volumes/main/d/v/a #b'"),  # '#' inside quotes stays
        ('ls "/Volumes/main/d/v/a #b"  # c', 'ls "/Volumes/main/d/v/a #b"'),
        ("ls /Volumes/main/d/v/file#1.txt", "ls /Volumes/main/d/v/file#1.txt"),  # not at a word's start
        ("ls /Volumes/main/d/v/a\\ #b", "ls /Volumes/main/d/v/a\\ #b"),  # escaped space: same word
        ("ls \\#literal", "ls \\#literal"),
        ("ls 'unclosed # x", "ls 'unclosed # x"),  # left for the splitter to report
        ("", ""),
    ],
)
def test_strip_comment(line, expected):
    assert strip_comment(line) == expected


def test_cell_body_takes_trailing_comments():
    body = "train  # the training split\n# a comment line\n\n/Volumes/main/d/v/val/*/x#1.jpg\n  \t# indented\n"
    assert parse_sources(body) == ["train", "/Volumes/main/d/v/val/*/x#1.jpg"]


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.cmt.img", exist_ok=True)
    for i in range(4):
        with s.open(f"/Volumes/main/cmt/img/train/{i}.bin", "wb") as f:
            f.write(b"x" * (10 + i))
    with s.open("/Volumes/main/cmt/img/a #b/c.bin", "wb") as f:
        f.write(b"c")
    return s


def test_volume_magic_lines_with_comments(ip, vol, capsys):
    ip.run_line_magic("air_volume", "create main.cmt.other  # a new volume (names: letters, digits, '_')")
    assert VolumeStore().exists("/Volumes/main/cmt/other")
    ip.run_line_magic("air_volume", "use main.cmt.img  # default volume: a catalog's relative paths")
    listing = ip.run_line_magic("air_volume", 'ls -r train --pattern "*.bin"   # every file below')
    assert sorted(e.path.name for e in listing.entries) == ["0.bin", "1.bin", "2.bin", "3.bin"]
    quoted = ip.run_line_magic("air_volume", "ls '/Volumes/main/cmt/img/a #b'  # a folder with a '#'")
    assert [e.path.name for e in quoted.entries] == ["c.bin"]


def test_copy_cell_and_line_with_comments(ip, vol, tmp_path):
    ip.run_line_magic("air_volume", "use main.cmt.img")
    dest = tmp_path / "out"
    report = ip.run_cell_magic(
        "air_copy", f"--to {dest} --workers 4 -q -o rep  # copy the training split", "train  # relative to the volume\n"
    )
    assert report.copied == 4 and ip.user_ns["rep"] is report
    assert sorted(p.name for p in (dest / "train").iterdir()) == ["0.bin", "1.bin", "2.bin", "3.bin"]
    one = ip.run_line_magic("air_copy", f"--from /Volumes/main/cmt/img/train/0.bin --to {tmp_path / 'one'} -q  # one")
    assert one.copied == 1


def test_a_comment_is_never_an_argument(ip, vol):
    # the error names only what was wrong, not the comment's words
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("air_table", "main.cmt.t --colums a,b  # a catalog's schemas, row count")
    msg = str(info.value)
    assert "--colums" in msg and "#" not in msg.split("Valid options")[0] and "catalog" not in msg
    with pytest.raises(UsageError, match="cannot split"):  # an unclosed quote before the comment is still one
        ip.run_line_magic("air_volume", 'ls "/Volumes/main/cmt/img  # unclosed')
