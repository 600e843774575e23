import pytest
from hypothesis import given
from hypothesis import strategies as st

from air_magics.errors import AirError, VolumePathError
from air_magics.volumes import VolumePath, is_volume_text

NAME = st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9_-]{0,12}\Z")
SEG = st.text(
    st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12
).filter(lambda s: s not in (".", ".."))


def test_parse_full_path():
    p = VolumePath.parse("/Volumes/main/raw/images/train/0001.jpg")
    assert (p.catalog, p.schema, p.volume, p.parts) == ("main", "raw", "images", ("train", "0001.jpg"))
    assert p.volume_id == "main.raw.images"
    assert p.relpath == "train/0001.jpg"
    assert str(p) == "/Volumes/main/raw/images/train/0001.jpg"
    assert p.name == "0001.jpg" and p.parent == VolumePath.parse("/Volumes/main/raw/images/train")


def test_parse_dotted_and_trailing_slash():
    assert VolumePath.parse("main.raw.images") == VolumePath("main", "raw", "images")
    assert VolumePath.parse("main.raw.images/a/b") == VolumePath("main", "raw", "images", ("a", "b"))
    assert VolumePath.parse("/Volumes/main/raw/images/") == VolumePath("main", "raw", "images")


def test_relative_needs_default():
    with pytest.raises(VolumePathError, match="default volume"):
        VolumePath.parse("train/x.jpg")
    d = VolumePath("c", "s", "v")
    assert VolumePath.parse("train/x.jpg", default=d) == VolumePath("c", "s", "v", ("train", "x.jpg"))
    assert VolumePath.parse(".", default=d) == d


@pytest.mark.parametrize(
    "bad,needle",
    [
        ("/Volumes/main/raw/images/../other", "'..'"),
        ("/Volumes/main/raw/images/./x", "'.'"),
        ("/Volumes/main/raw/images/a//b", "empty segment"),
        ("/Volumes/main/raw", "does not name a volume"),
        ("/Volumes", "does not name a volume"),
        ("/tmp/data", "outside /Volumes"),
        ("/Volumes/main/raw/ima ges", "invalid volume name"),
        ("/Volumes/ma;in/raw/images", "invalid catalog name"),
        ("/Volumes/main/raw/images/a\x00b", "NUL"),
        ("/Volumes/main/raw/images/a\nb", "control character"),
        ("/Volumes/main/../images", "invalid schema name"),
    ],
)
def test_rejects(bad, needle):
    with pytest.raises(VolumePathError) as info:
        VolumePath.parse(bad)
    assert needle in str(info.value)
    assert isinstance(info.value, AirError) and isinstance(info.value, ValueError)


def test_joinpath_never_escapes():
    root = VolumePath("c", "s", "v")
    with pytest.raises(VolumePathError):
        root.joinpath("a/../../x")
    assert root.parent == root
    assert (root / "a" / "b").is_relative_to(root / "a")
    assert not (root / "ab").is_relative_to(root / "a")


def test_parse_volume():
    assert VolumePath.parse_volume("c.s.v") == VolumePath("c", "s", "v")
    for bad in ("c.s", "/Volumes/c/s/v/x", "plain"):
        with pytest.raises(VolumePathError, match="catalog.schema.volume"):
            VolumePath.parse_volume(bad)


def test_is_volume_text():
    assert is_volume_text("/Volumes/a/b/c") and is_volume_text("a.b.c/x")
    assert not is_volume_text("/tmp/x") and not is_volume_text("x/y")


@given(NAME, NAME, NAME, st.lists(SEG, max_size=5))
def test_roundtrip(cat, sch, vol, parts):
    p = VolumePath(cat, sch, vol, tuple(parts))
    assert VolumePath.parse(str(p)) == p
    assert VolumePath.parse(p.volume_id + ("/" + p.relpath if parts else "")) == p


@given(NAME, NAME, NAME, st.lists(SEG, max_size=3), st.lists(SEG, max_size=3))
def test_dotdot_anywhere_rejected(cat, sch, vol, before, after):
    text = "/".join(["/Volumes", cat, sch, vol, *before, "..", *after])
    with pytest.raises(VolumePathError):
        VolumePath.parse(text)


@given(NAME, st.sampled_from(["\n", "\r", "\t", "\x00", "\x7f"]))
def test_a_trailing_control_character_is_refused_everywhere(name, ch):
    # names are matched with fullmatch: a ``$`` anchor lets a trailing newline through
    for build in (
        lambda: VolumePath(name + ch, "s", "v"),
        lambda: VolumePath("c", "s", name + ch),
        lambda: VolumePath.parse(f"/Volumes/c/s/{name}{ch}"),
        lambda: VolumePath.parse(f"c.s.{name}{ch}"),
        lambda: VolumePath.parse(f"/Volumes/c/s/v/{name}{ch}"),
    ):
        with pytest.raises(VolumePathError):
            build()


def test_parse_namespace_names_levels_above_a_volume():
    from air_magics.volumes.path import parse_namespace

    assert parse_namespace("/Volumes") == () and parse_namespace("/Volumes/") == ()
    assert parse_namespace("/Volumes/main") == ("main",) and parse_namespace("/Volumes/main/demo/") == ("main", "demo")
    for deeper in ("/Volumes/main/demo/v", "/Volumes/main/demo/v/x", "main.demo", "rel/path", "/tmp", "/Volumes//x"):
        assert parse_namespace(deeper) is None
    with pytest.raises(VolumePathError, match="invalid catalog name 'a b'"):
        parse_namespace("/Volumes/a b")


@given(NAME, NAME, NAME)
def test_new_volume_names_follow_the_table_rule(c, s, v):
    from air_magics.errors import TableNameError
    from air_magics.tablefiles.names import TableName

    text = f"{c}.{s}.{v}"
    try:
        TableName.parse(text)
        table_ok = "__" not in c + s  # tables reserve '__' in catalog/schema for their own mapping
    except TableNameError:
        table_ok = False
    try:
        VolumePath.parse_new_volume(text)
        volume_ok = True
    except VolumePathError as exc:
        volume_ok = False
        assert "\n" not in str(exc) and "[A-Za-z_][A-Za-z0-9_]{0,127}" in str(exc)
    if "__" not in c + s:
        assert volume_ok == table_ok
    assert VolumePath.parse(text).volume_id == text  # an existing volume of any such name is still reached
