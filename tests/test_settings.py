"""One configuration: env defaults, ``%config AirMagics.*`` reaching the core, the server's config, bad values;
the same ``-o VAR`` in every magic; ``%air_table --as`` and the deprecated ``--to FORMAT``."""

import logging
import types
from pathlib import Path

import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
from traitlets import TraitError
from traitlets.config import Config, LoggingConfigurable, PyFileConfigLoader

import air_magics
from air_magics import settings, tables
from air_magics.cache import FileCache
from air_magics.errors import AirError, SettingError
from air_magics.volumes import VolumeStore, detect


@pytest.fixture
def ip():
    """The shared test shell, its AirMagics the core's settings; every override undone afterwards."""
    shell = start_ipython() or get_ipython()  # the shell may already run (another test module)
    shell.run_line_magic("load_ext", "air_magics")
    magics = shell.magics_manager.registry["AirMagics"]
    before = settings.use(magics)
    yield shell
    shell.config.AirMagics.clear()  # what %config stored: a later %load_ext would apply it again
    magics.clear_overrides()
    magics.widgets, magics.default_volume = True, ""
    settings.use(before)


@pytest.fixture
def fresh():
    """The core on a configurable of its own (no shell), restored afterwards."""
    before = settings.use(settings.AirConfig())
    yield settings.active()
    settings.use(before)


@pytest.fixture
def vol():
    s = VolumeStore()
    s.create("main.raw.img")
    for i in range(6):
        with s.open(f"/Volumes/main/raw/img/f{i}.bin", "wb") as f:
            f.write(bytes([i]) * 2000)
    return s


# -- defaults come from the environment -------------------------------------------------------------
def test_defaults_follow_the_environment_at_every_read(fresh, air_home, tmp_path, monkeypatch):
    monkeypatch.delenv("AIR_SPARK_DIR", raising=False)  # `make test` sets it for the whole suite
    monkeypatch.delenv("AIR_CACHE_RESERVE")  # conftest sets it for every test
    assert settings.air_home() == air_home and settings.cache_dir() == air_home / "cache"
    assert settings.spark_dir() == air_home / "spark" and settings.embedded_volumes_root() == air_home / "volumes"
    assert settings.cache_limit() is None and settings.cache_reserve() == 1 << 30 and settings.copy_workers() == 64
    assert settings.spark_idle_timeout() == 1800 and settings.spark_driver_memory_mb() is None
    assert settings.export_chunk_bytes() is None
    monkeypatch.setenv("AIR_HOME", str(tmp_path / "other"))  # a changed variable counts at once
    monkeypatch.setenv("AIR_CACHE_LIMIT", "2GiB")
    monkeypatch.setenv("AIR_CACHE_RESERVE", "0")
    monkeypatch.setenv("AIR_COPY_WORKERS", "12")
    monkeypatch.setenv("AIR_SPARK_DRIVER_MEMORY", "2g")
    assert settings.cache_dir() == tmp_path / "other" / "cache"
    assert (settings.cache_limit(), settings.cache_reserve(), settings.copy_workers()) == (2 << 30, 0, 12)
    assert settings.spark_driver_memory_mb() == 2048
    monkeypatch.delenv("AIR_HOME")
    assert settings.air_home() == Path.home() / ".air"


def test_volumes_root_set_wins_over_a_mount(fresh, tmp_path, monkeypatch):
    mount = tmp_path / "mnt"
    mount.mkdir()
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(mount))
    assert detect.volumes_mount() == mount and VolumeStore().kind == "mount"
    fresh.volumes_root = str(tmp_path / "mine")
    assert detect.volumes_mount() is None and VolumeStore().root == tmp_path / "mine"


@pytest.mark.parametrize(
    "env,raw,needle",
    [
        ("AIR_CACHE_LIMIT", "lots", "AIR_CACHE_LIMIT='lots' is not a size"),
        ("AIR_CACHE_LIMIT", "0", "must be positive"),
        ("AIR_COPY_WORKERS", "many", "AIR_COPY_WORKERS='many' is not a whole number"),
        ("AIR_SPARK_IDLE_TIMEOUT", "-5", "AIR_SPARK_IDLE_TIMEOUT='-5' is not a positive number of seconds"),
    ],
)
def test_bad_environment_values_name_the_variable(fresh, monkeypatch, env, raw, needle):
    monkeypatch.setenv(env, raw)
    name = {s.env: s.name for s in settings.SETTINGS}[env]
    with pytest.raises(SettingError, match=needle) as info:
        settings.get(name)
    assert isinstance(info.value, AirError) and isinstance(info.value, ValueError)
    assert "write e.g." in str(info.value)


def test_bad_values_are_refused_when_set(fresh):
    for name, bad, needle in (
        ("cache_limit", "lots", "not a size"),
        ("workers", 0, "at least 1"),
        ("spark_driver_memory", "huge", "JVM memory size"),
        ("cache_reserve", -1, "not a size"),
        ("spark_idle_timeout", 0, "positive number of seconds"),
    ):
        with pytest.raises(SettingError, match=rf"AirConfig\.{name} = .*{needle}") as info:
            setattr(fresh, name, bad)
        assert isinstance(info.value, TraitError)  # so traitlets rolls back a config load too
        assert getattr(fresh, name) is None
    with pytest.raises(KeyError, match="no setting 'cache_size'"):
        settings.get("cache_size")


def test_readme_carries_the_settings_table():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert settings.settings_table() in readme


# -- %config AirMagics.* reaches the core -----------------------------------------------------------
def test_config_cache_limit_is_what_the_cache_uses(ip, vol, tmp_path):
    ip.run_line_magic("config", f"AirMagics.cache_dir = {str(tmp_path / 'c')!r}")
    ip.run_line_magic("config", "AirMagics.cache_limit = '5000B'")
    cache = FileCache(pin_seconds=0)
    assert cache.root == tmp_path / "c" and cache.limit == 5000
    for i in range(6):
        cache.get(f"/Volumes/main/raw/img/f{i}.bin")
    info = cache.info()
    assert info.bytes <= 5000 and info.evictions >= 3
    assert "of 4.9 KiB limit" in str(ip.run_line_magic("air_volume", "cache"))  # the view reads it too


def test_config_workers_is_what_a_copy_uses(ip, vol, tmp_path):
    ip.run_line_magic("config", "AirMagics.workers = 3")
    assert ip.run_line_magic("config", "AirMagics.workers") == 3
    report = ip.run_cell_magic("air_copy", f"--to {tmp_path / 'a'} -q", "/Volumes/main/raw/img/f0.bin")
    assert report.workers == 3 and report.copied == 1
    assert air_magics.copy(["/Volumes/main/raw/img/f1.bin"], str(tmp_path / "b")).workers == 3
    flag = ip.run_cell_magic("air_copy", f"--to {tmp_path / 'c'} -q --workers 5", "/Volumes/main/raw/img/f2.bin")
    assert flag.workers == 5


def test_config_home_moves_volumes_and_run_state(ip, tmp_path):
    ip.run_line_magic("config", f"AirMagics.home = {str(tmp_path / 'h')!r}")
    ip.run_line_magic("air_volume", "create main.moved.vol")
    assert (tmp_path / "h" / "volumes" / "main" / "moved" / "vol").is_dir()
    ip.run_line_magic("config", "AirMagics.home = None")  # back to $AIR_HOME
    assert "main.moved.vol" not in [v.volume_id for v in VolumeStore().volumes()]


def test_bad_config_value_is_refused_naming_the_setting(ip, caplog, capsys):
    """One ``UsageError:`` line, as every magic's (not a log record: a kernel printed ``ERROR:root:``)."""
    ip.run_line_magic("config", "AirMagics.cache_limit = '1GiB'")
    capsys.readouterr()
    with caplog.at_level(logging.ERROR):
        ip.run_line_magic("config", "AirMagics.cache_limit = 'a lot'")
    assert "UsageError: AirMagics.cache_limit = 'a lot' is not a size: write e.g. 500MB" in capsys.readouterr().err
    assert not caplog.records
    assert settings.cache_limit() == 1 << 30  # the previous value stays


def test_front_end_traits_still_configurable(ip):
    ip.run_line_magic("config", "AirMagics.widgets = False")
    assert ip.run_line_magic("config", "AirMagics.widgets") is False
    assert isinstance(ip.magics_manager.registry["AirMagics"], settings.AirConfig)


# -- the server extension's config ------------------------------------------------------------------
class _Server(LoggingConfigurable):
    """What the extension uses of a ServerApp: its config, log and tornado app."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.handlers = []
        self.web_app = types.SimpleNamespace(
            settings={"base_url": "/"}, add_handlers=lambda host, h: self.handlers.extend(h)
        )


def test_server_extension_applies_jupyter_server_config(tmp_path):
    (tmp_path / "jupyter_server_config.py").write_text(
        f"c.AirConfig.cache_dir = {str(tmp_path / 'srv-cache')!r}\nc.AirConfig.cache_limit = '5GiB'\n"
    )
    cfg = PyFileConfigLoader("jupyter_server_config.py", path=str(tmp_path)).load_config()
    from air_magics.server import _load_jupyter_server_extension

    before = settings.active()
    try:
        server = _Server(config=cfg)
        _load_jupyter_server_extension(server)
        assert server.handlers and isinstance(settings.active(), settings.AirConfig)
        assert FileCache().root == tmp_path / "srv-cache" and FileCache().limit == 5 << 30
    finally:
        settings.use(before)


def test_server_config_bad_value_names_the_setting():
    c = Config()
    c.AirConfig.workers = -2
    with pytest.raises(SettingError, match=r"AirConfig\.workers = -2 is not a whole number of at least 1"):
        settings.AirConfig(config=c)


# -- the same -o in every magic ---------------------------------------------------------------------
def test_dash_o_stores_and_returns_in_every_magic(ip, vol, tmp_path, monkeypatch, capsys):
    listing = ip.run_line_magic("air_volume", "ls /Volumes/main/raw/img -o listing")
    assert listing is not None and ip.user_ns["listing"] is listing
    overview = ip.run_line_magic("air_volume", "-o ov")
    assert ip.user_ns["ov"] is overview
    info = ip.run_line_magic("air_volume", "create main.raw.more -o made")
    assert info.volume_id == "main.raw.more" and ip.user_ns["made"] is info
    assert ip.run_line_magic("air_volume", "create main.raw.other") is None  # without -o: a printed line
    assert "created volume /Volumes/main/raw/other" in capsys.readouterr().out
    report = ip.run_cell_magic("air_copy", f"--to {tmp_path / 'd'} -q -o rep", "/Volumes/main/raw/img/f0.bin")
    assert ip.user_ns["rep"] is report
    monkeypatch.setattr(tables, "list_tables", lambda name, **kw: ["main.raw.t"])
    listed = ip.run_line_magic("air_table", "--tables main.raw -o names")
    assert listed == ["main.raw.t"] and ip.user_ns["names"] is listed


@pytest.mark.parametrize(
    "magic,line",
    [
        ("air_volume", "ls /Volumes/main/raw/img -o 1x"),
        ("air_volume", "create main.raw.never -o class"),
        ("air_table", "--tables -o a.b"),
    ],
)
def test_dash_o_needs_a_variable_name_before_any_work(ip, vol, magic, line):
    with pytest.raises(UsageError, match="-o takes a variable name"):
        ip.run_line_magic(magic, line)
    assert "main.raw.never" not in [v.volume_id for v in VolumeStore().volumes()]


# -- %air_table --as, --to DEST, and the deprecated --to FORMAT -------------------------------------
@pytest.fixture
def fake_tables(monkeypatch):
    calls = []

    def read_table(name, **kw):
        calls.append(("read_table", name, kw["to"]))
        return f"{kw['to']} of {name}"

    def read_sql(sql, **kw):
        calls.append(("read_sql", sql, kw["to"]))
        return f"{kw['to']} of query"

    class Export:
        def load_dataset(self):
            return "dataset"

    def export_table(name, dest, **kw):
        calls.append(("export_table", name, dest))
        return Export()

    for fn in (read_table, read_sql, export_table):
        monkeypatch.setattr(tables, fn.__name__, fn)
    return calls


def test_table_as_format(ip, fake_tables, capsys):
    assert ip.run_line_magic("air_table", "main.s.t --as numpy -o arr") == "numpy of main.s.t"
    assert ip.user_ns["arr"] == "numpy of main.s.t"
    assert ip.run_line_magic("air_table", '--sql "SELECT 1" --as arrow') == "arrow of query"
    assert ip.run_line_magic("air_table", "main.s.t --limit 3") == "pandas of main.s.t"
    assert "deprecated" not in capsys.readouterr().err


def test_table_to_format_is_deprecated_but_works(ip, fake_tables, capsys):
    assert ip.run_line_magic("air_table", "main.s.t --to pandas -o df") == "pandas of main.s.t"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--to pandas is deprecated, write --as pandas" in err
    assert ip.user_ns["df"] == "pandas of main.s.t"


def test_table_to_is_a_destination(ip, fake_tables):
    ip.run_line_magic("config", "AirMagics.widgets = False")
    assert ip.run_line_magic("air_table", "main.s.t --to /Volumes/main/s/exports/t --as datasets -o ds") == "dataset"
    assert fake_tables[-1] == ("export_table", "main.s.t", "/Volumes/main/s/exports/t")
    assert ip.user_ns["ds"] == "dataset"


@pytest.mark.parametrize(
    "line,needle",
    [
        ("main.s.t --to excel", "invalid choice"),
        ("main.s.t --as excel", "invalid choice"),
        ("main.s.t --to pandas --as numpy", "give the form once"),
        ("main.s.t --to /Volumes/a/b/c/x --export /Volumes/a/b/c/y", "give the destination once"),
        ("main.s.t --to /Volumes/a/b/c/x --as pandas", "not --as pandas"),
        ("main.s.t --as datasets", "add --export"),
    ],
)
def test_table_flag_errors(ip, fake_tables, line, needle):
    with pytest.raises(UsageError, match=needle) as info:
        ip.run_line_magic("air_table", line)
    assert "\n" not in str(info.value) and not any(c[0] == "export_table" for c in fake_tables)
