"""``%air_volume``'s rough edges a new user hit (issue 18, items 4, 8 and 12): each as a test."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError

from air_magics.volumes import VolumeStore


@pytest.fixture
def text_ip(ip):
    """The shell with text output (no widgets): what a pack prints is captured."""
    ip.run_line_magic("config", "AirMagics.widgets = False")
    yield ip
    ip.run_line_magic("config", "AirMagics.widgets = True")


@pytest.fixture
def small_files():
    """A volume of 600 small files: ls's small-files tip fires, at the volume root and in a folder."""
    s = VolumeStore()
    s.create("main.me.raw")
    for i in range(600):
        with s.open(f"/Volumes/main/me/raw/imgs/{i:04d}.jpg", "wb") as f:
            f.write(b"j" * 100)
    return s


def _commands(tip: str) -> list[str]:
    return re.findall(r"`(%air_volume [^`]*)`", tip)


# item 4: the small-files tip suggests a pack that works; a bad pack is refused before any progress


def test_pack_tip_suggests_a_destination_pack_accepts(text_ip, small_files, capsys):
    ip = text_ip
    folder = ip.run_line_magic("air_volume", "ls -r /Volumes/main/me/raw/imgs")
    assert _commands(folder.advice()) == ["%air_volume pack /Volumes/main/me/raw/imgs /Volumes/main/me/raw/imgs_packed"]
    whole = ip.run_line_magic("air_volume", "ls -r /Volumes/main/me/raw")
    create, pack = _commands(whole.advice())  # a whole volume packs into another volume, created first
    assert (create, pack) == (
        "%air_volume create main.me.raw_packed",
        "%air_volume pack /Volumes/main/me/raw /Volumes/main/me/raw_packed",
    )
    capsys.readouterr()

    # the tip's pack without its create: one line naming the volume and the fix, and no progress at all
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("air_volume", pack[len("%air_volume ") :])
    msg = str(info.value)
    assert msg.startswith("destination volume 'main.me.raw_packed' does not exist") and "\n" not in msg
    assert "`%air_volume create main.me.raw_packed`" in msg
    assert capsys.readouterr().out == ""  # before: a 0% progress line, then "failed"

    for line in (create, pack, *_commands(folder.advice())):  # as the tips say: each works
        ip.run_line_magic("air_volume", line[len("%air_volume ") :])
    out = capsys.readouterr().out
    # each pack's report once; its progress line reached 600 / 600 (more than once when a slow
    # machine sends that count again with a later time or shard count: the text line is redrawn)
    assert out.count("wrote 1 shard (600 files") == 2 and out.count("600 / 600 files") >= 2, out
    assert "packed folder: 600 members" in repr(ip.run_line_magic("air_volume", "ls /Volumes/main/me/raw_packed"))
    assert "packed folder: 600 members" in repr(ip.run_line_magic("air_volume", "ls /Volumes/main/me/raw/imgs_packed"))


@pytest.mark.parametrize(
    "line,error",
    [
        ("pack /Volumes/main/me/raw /Volumes/main/me/raw/p", "is inside the source /Volumes/main/me/raw: its shards"),
        ("pack /Volumes/main/me/raw/imgs /Volumes/main/me/raw", "is inside the destination"),
        ("pack /Volumes/main/me/nope /Volumes/main/me/raw/p", "'main.me.nope' does not exist"),
        ("pack /Volumes/main/me/raw/missing /Volumes/main/me/raw/p", "missing' does not exist"),
        ("pack /Volumes/main/me/raw/imgs/0001.jpg /Volumes/main/me/raw/p", "is a file; pack takes a folder"),
        ("pack /Volumes/main/me/raw/imgs /Volumes/main/me/raw/imgs/0001.jpg", "is inside the source"),
        ("pack /Volumes/main/me/raw/imgs /Volumes/main/me/raw/p --shard-size lots", "'lots' is not a size"),
    ],
)
def test_pack_refuses_a_bad_request_before_any_progress(text_ip, small_files, capsys, line, error):
    capsys.readouterr()
    with pytest.raises(UsageError, match=re.escape(error)) as info:
        text_ip.run_line_magic("air_volume", line)
    assert "\n" not in str(info.value) and capsys.readouterr().out == ""


# item 8: ls above volume level lists what is there instead of failing


def test_ls_above_volume_level_lists_catalogs_schemas_and_volumes(ip):
    s = VolumeStore()
    for vid in ("main.demo.images", "main.demo.text", "main.raw.logs", "dev.t.v"):
        s.create(vid)
    schema = ip.run_line_magic("air_volume", "ls /Volumes/main/demo")  # before: "does not name a volume"
    assert schema.level == "volumes" and schema.names == ["images", "text"]
    assert repr(schema).splitlines()[:2] == [
        "/Volumes/main/demo: 2 volumes",
        f"  /Volumes/main/demo/images  embedded {s.root}/main/demo/images",
    ]
    catalog = ip.run_line_magic("air_volume", "ls /Volumes/main/")
    assert catalog.names == ["demo", "raw"] and "/Volumes/main/demo  2 volumes" in repr(catalog)
    top = ip.run_line_magic("air_volume", "ls /Volumes")
    assert top.names == ["dev", "main"] and "/Volumes/main  2 schemas, 3 volumes" in repr(top)
    assert "<code>/Volumes/main/raw</code>" in catalog._repr_html_()
    with pytest.raises(
        UsageError,
        match=r"^/Volumes/main/nope: no schema 'main.nope' holds a volume \(schemas with volumes: main.demo, main.raw\); create one with `%air_volume create main.nope.volume`$",
    ):
        ip.run_line_magic("air_volume", "ls /Volumes/main/nope")
    with pytest.raises(UsageError, match="-r/--pattern list inside a volume"):
        ip.run_line_magic("air_volume", "ls -r /Volumes/main")
    with pytest.raises(UsageError, match="invalid schema name 'a b'"):
        ip.run_line_magic("air_volume", "ls '/Volumes/main/a b'")


# item 12: a new volume's names follow the table names' rule


@pytest.mark.parametrize(
    "name,bad,fix",
    [
        ("Main.Me.Bad-Name", "volume name 'Bad-Name'", "Main.Me.Bad_Name"),
        ("main.2024.v", "schema name '2024'", "main._2024.v"),
        ("main.s p.v", "schema name 's p'", None),
        ("main.s.v" + "x" * 128, "volume name 'v" + "x" * 128 + "'", None),
    ],
)
def test_create_refuses_names_that_tables_refuse(ip, name, bad, fix):
    from air_magics.errors import TableNameError
    from air_magics.tablefiles.names import TableName

    with pytest.raises(TableNameError):  # the rule of table names...
        TableName.parse(name)
    with pytest.raises(UsageError) as info:  # ...is the rule of new volumes: one line, the value, the rule
        ip.run_line_magic("air_volume", f"create '{name}'")
    msg = str(info.value)
    assert f"invalid {bad} in " in msg and "[A-Za-z_][A-Za-z0-9_]{0,127}" in msg and "\n" not in msg
    if fix:
        assert msg.endswith(f"write e.g. {fix}")
        TableName.parse(fix)  # the fix is a name tables take too
        assert ip.run_line_magic("air_volume", f"create {fix} -o v").volume_id == fix
    with pytest.raises(UsageError, match=re.escape(f"invalid {bad}")):
        ip.run_line_magic("air_volume", f"register '{name}' memory://x")
    assert VolumeStore().registry.load() == {}  # nothing registered under the refused name


def test_existing_volumes_with_a_dash_are_still_reached(ip, air_home):
    """Paths keep the wider rule: a real /Volumes mount may hold 'my-ds', and it must stay readable."""
    folder = air_home / "volumes" / "main" / "my-ds" / "files"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("x")
    assert [e.path.name for e in ip.run_line_magic("air_volume", "ls /Volumes/main/my-ds/files").entries] == ["a.txt"]
    assert ip.run_line_magic("air_volume", "ls /Volumes/main").names == ["my-ds"]
