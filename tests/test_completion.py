"""Tab completion through IPython's own completer (issue 18, item 9)."""

from __future__ import annotations

import sys

import pytest

from air_magics.volumes import VolumeStore


def _complete(ip, line: str) -> list[str]:
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        return [c.text for c in ip.Completer.completions(line, len(line))]


@pytest.fixture
def vols():
    s = VolumeStore()
    s.create("main.demo.images")
    s.create("main.demo.text")
    s.create("dev.t.v")
    for rel in ("train/a.jpg", "train/b.jpg", "test/c.jpg", "notes.txt"):
        with s.open(f"/Volumes/main/demo/images/{rel}", "wb") as f:
            f.write(b"x")
    return s


def test_relative_paths_complete_once_a_volume_is_in_use(ip, vols):
    assert _complete(ip, "%air_volume ls tr") == []  # no default volume: nothing to be relative to
    ip.run_line_magic("air_volume", "use main.demo.images")
    assert _complete(ip, "%air_volume ls tr") == ["train/"]
    assert _complete(ip, "%air_volume ls t") == ["test/", "train/"]
    assert _complete(ip, "%air_volume ls train/") == ["train/a.jpg", "train/b.jpg"]
    assert _complete(ip, "%air_volume ls -r train/b") == ["train/b.jpg"]
    assert _complete(ip, "%air_volume pack train t") == ["test/", "train/"]
    assert _complete(ip, "%air_volume ls /Volumes/main/demo/images/n") == ["/Volumes/main/demo/images/notes.txt"]


def test_use_completes_volume_names(ip, vols):
    assert _complete(ip, "%air_volume use ma") == ["main.demo.images", "main.demo.text"]
    assert _complete(ip, "%air_volume use main.demo.t") == ["main.demo.text"]
    assert _complete(ip, "%air_volume use d") == ["dev.t.v"]  # never dict, dir, divmod


@pytest.mark.parametrize(
    "line",
    ['open("volumes://main/d', "fs.ls('volumes://main/d", 'pd.read_parquet("volumes://main/d'],
)
def test_volumes_urls_complete_inside_python_strings(ip, vols, line):
    assert _complete(ip, line) == ["volumes://main/demo/"]


def test_volumes_urls_complete_down_to_files(ip, vols):
    assert _complete(ip, 'open("volumes://main/demo/images/tr') == ["volumes://main/demo/images/train/"]
    assert _complete(ip, 'open("volumes:/') == ["volumes://"]
    assert "volumes://" in _complete(ip, 'x = "volu')  # the scheme, beside whatever files match
    assert "volumes://" not in _complete(ip, "volu")  # not a string: a Python name


def test_air_table_flags_are_the_magics_own(ip):
    got = _complete(ip, "%air_table --")  # before: 201 builtins
    assert got and all(g.startswith("--") for g in got)
    assert {"--as", "--sql", "--tables", "--to", "--stop", "--where"} <= set(got)
    assert _complete(ip, "%air_table --ta") == ["--tables"]
    assert _complete(ip, "%air_table main.x.y --as pandas --li") == ["--limit"]


def test_table_names_never_start_spark(ip, tmp_path, monkeypatch):
    """No session in this process: no table names, and nothing imported or started for a Tab."""
    monkeypatch.setenv("AIR_SPARK_DIR", str(tmp_path / "spark"))
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    had_pyspark = "pyspark" in sys.modules
    ip.user_ns.pop("spark", None)
    if not had_pyspark:  # (a session of another test in this process may be active)
        assert not [c for c in _complete(ip, "%air_table ma") if c.startswith("main.")]
    assert not (tmp_path / "spark").exists()  # no embedded server was started
    assert ("pyspark" in sys.modules) == had_pyspark  # ... nor pyspark imported
