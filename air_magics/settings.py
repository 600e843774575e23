"""One configuration: a traitlets ``Configurable`` holding every setting, read by the core through :func:`get`.

Why: settings used to be split between ``AIR_*`` environment variables read all over the core and
traits on the magics class. Now every setting is a trait of :class:`AirConfig`. A front end passes
its configurable down with :func:`use`: the magics class *is* an ``AirConfig`` (so
``%config AirMagics.cache_limit = "20GiB"`` is what the next cache uses) and the Jupyter server
extension builds one from ``jupyter_server_config`` (``c.AirConfig.cache_dir = "/scratch/air"``).

A trait left at ``None`` is "not set here": its value comes from its environment variable, read at
every call (so exporting ``AIR_HOME`` still takes effect at once), else the built-in default.
Values are checked when set (a bad one is refused, naming the setting and an example) and when
read from the environment. This module is the only reader of ``os.environ`` for settings; the
typed readers at its end (:func:`air_home`, :func:`cache_dir`, ...) are what the core calls. Whether
``/Volumes`` is a real mount is a question for the volumes package (:mod:`air_magics.volumes.detect`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traitlets import Float, Int, TraitError, Unicode, Union, validate
from traitlets.config import Configurable

from .errors import SettingError
from .io.units import parse_size

__all__ = [
    "AirConfig",
    "Setting",
    "SETTINGS",
    "get",
    "use",
    "active",
    "settings_table",
    "DEFAULT_COPY_WORKERS",
    "air_home",
    "embedded_volumes_root",
    "registry_file",
    "cache_dir",
    "cache_limit",
    "cache_reserve",
    "spark_dir",
    "copy_workers",
    "spark_driver_memory_mb",
    "spark_idle_timeout",
    "spark_no_client_timeout",
    "export_chunk_bytes",
    "maven_repo",
    "uc_url",
]

DEFAULT_COPY_WORKERS = 64
_MIB = 1 << 20


# -- parsers: (value, label for messages) -> the value the core uses ------------------------------
def _path(value: Any, label: str) -> Path:
    if not isinstance(value, (str, os.PathLike)) or "\0" in str(value):
        raise SettingError(f"{label} is not a folder path: write e.g. '/scratch/air'")
    return Path(value).expanduser()


def _http_url(value: Any, label: str) -> str | None:
    text = str(value).strip().rstrip("/")
    if not text:
        return None
    if not re.fullmatch(r"https?://[^/\s]+(/\S*)?", text):
        raise SettingError(f"{label} is not an http(s) URL: write e.g. http://host:8080")
    return text


def _size(*, positive: bool) -> Callable[[Any, str], int]:
    def parse(value: Any, label: str) -> int:
        try:
            n = parse_size(value, label)
        except (ValueError, TypeError):
            n = None
        if n is None:
            raise SettingError(f"{label} is not a size: write e.g. 500MB, 10GiB or a number of bytes")
        if positive and n <= 0:
            raise SettingError(f"{label} must be positive: write e.g. 256MiB")
        return n

    return parse


def _count(value: Any, label: str) -> int:
    try:
        n = int(str(value).strip()) if not isinstance(value, bool) else 0
    except ValueError:
        n = 0
    if n < 1:
        raise SettingError(f"{label} is not a whole number of at least 1: write e.g. {DEFAULT_COPY_WORKERS}")
    return n


def _seconds(value: Any, label: str) -> float:
    try:
        s = float(value) if not isinstance(value, bool) else -1.0
    except (ValueError, TypeError):
        s = -1.0
    if not s > 0:  # also refuses nan
        raise SettingError(f"{label} is not a positive number of seconds: write e.g. 600")
    return s


def _jvm_memory(value: Any, label: str) -> int:
    """A JVM heap size (``4g``, ``6144m``) in MiB, at least 256."""
    m = re.fullmatch(r"(\d+)\s*([kmgt]?)b?", str(value).strip().lower())
    if not m or int(m.group(1)) == 0:
        raise SettingError(f"{label} is not a JVM memory size: write e.g. 4g or 6144m")
    scale = {"k": 1 / 1024, "": 1 / _MIB, "m": 1, "g": 1024, "t": 1024 * 1024}[m.group(2)]
    return max(256, int(int(m.group(1)) * scale))


@dataclass(frozen=True)
class Setting:
    """One setting: its trait ``name``, its environment variable, its built-in default (for people)."""

    name: str
    env: str
    default: str
    meaning: str
    parse: Callable[[Any, str], Any]
    fallback: Callable[[AirConfig], Any]


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "home",
        "AIR_HOME",
        "`~/.air`",
        "embedded volumes, the volume registry, run state, checkpoint staging",
        _path,
        lambda c: Path.home() / ".air",
    ),
    Setting(
        "volumes_root",
        "AIR_VOLUMES_ROOT",
        "`$AIR_HOME/volumes`",
        "where embedded volumes live; when set, it wins over a mount",
        _path,
        lambda c: None,
    ),
    Setting(
        "volumes_mount",
        "AIR_VOLUMES_MOUNT",
        "`/Volumes`",
        "the mount probed for real volumes",
        _path,
        lambda c: Path("/Volumes"),
    ),
    Setting(
        "cache_dir",
        "AIR_CACHE_DIR",
        "`$AIR_HOME/cache`",
        "the training-data cache",
        _path,
        lambda c: c.value("home") / "cache",
    ),
    Setting(
        "cache_limit",
        "AIR_CACHE_LIMIT",
        "none",
        "cache size bound, e.g. `50GiB` (none: only the reserve bounds it)",
        _size(positive=True),
        lambda c: None,
    ),
    Setting(
        "cache_reserve",
        "AIR_CACHE_RESERVE",
        "`1GiB`",
        "free disk the cache always leaves (`0`: none)",
        _size(positive=False),
        lambda c: 1 << 30,
    ),
    Setting(
        "workers",
        "AIR_COPY_WORKERS",
        str(DEFAULT_COPY_WORKERS),
        "parallel copies of `%%air_copy` and `air_magics.copy` when `workers` is not given",
        _count,
        lambda c: DEFAULT_COPY_WORKERS,
    ),
    Setting(
        "spark_dir",
        "AIR_SPARK_DIR",
        "`$AIR_HOME/spark`",
        "the embedded Spark store (warehouse, metastore, logs)",
        _path,
        lambda c: c.value("home") / "spark",
    ),
    Setting(
        "spark_driver_memory",
        "AIR_SPARK_DRIVER_MEMORY",
        "1/4 of memory, 1-8 GiB",
        "the embedded Spark server's heap, e.g. `4g` (read when it starts)",
        _jvm_memory,
        lambda c: None,
    ),
    Setting(
        "spark_idle_timeout",
        "AIR_SPARK_IDLE_TIMEOUT",
        "1800",
        "seconds unused after which the embedded Spark server stops (read when it starts)",
        _seconds,
        lambda c: 1800.0,
    ),
    Setting(
        "spark_no_client_timeout",
        "AIR_SPARK_NO_CLIENT_TIMEOUT",
        "300",
        "seconds the embedded Spark server stays up once no process that used it is alive (read when it starts)",
        _seconds,
        lambda c: 300.0,
    ),
    Setting(
        "export_chunk_bytes",
        "AIR_EXPORT_CHUNK_BYTES",
        "from the driver heap",
        "result bytes one fetch of a client-side export may ask for, e.g. `256MiB`",
        _size(positive=True),
        lambda c: None,
    ),
    Setting(
        "table_max_bytes",
        "AIR_TABLE_MAX_BYTES",
        "1/8 of memory",
        "the largest estimated result `%air_table --as pandas/numpy/arrow` reads into memory, e.g. `4GiB`",
        _size(positive=True),
        lambda c: None,
    ),
    Setting(
        "maven_repo",
        "AIR_MAVEN_REPO",
        "`~/.m2/repository`",
        "the Maven repository that jars resolved on first use (the Unity Catalog server's) are downloaded into and read from",
        _path,
        lambda c: Path.home() / ".m2" / "repository",
    ),
    Setting(
        "uc_url",
        "AIR_UC_URL",
        "none",
        "a Unity Catalog server that `/Volumes/c/s/v` resolve through, e.g. `http://host:8080` (else the one `%air_volume connect` chose)",
        _http_url,
        lambda c: None,
    ),
)
_BY_NAME = {s.name: s for s in SETTINGS}


def _trait(name: str, kind: str) -> Any:
    s = _BY_NAME[name]
    help_ = f"{s.meaning[0].upper()}{s.meaning[1:]}. None: ${s.env}, else {s.default.strip('`')}."
    trait = {"path": Unicode, "text": Unicode, "int": Int, "float": Float}.get(kind)
    if trait is None:  # a size: bytes or text such as "10GiB"
        return Union([Int(), Float(), Unicode()], default_value=None, allow_none=True, help=help_).tag(config=True)
    return trait(None, allow_none=True, help=help_).tag(config=True)


class _InvalidSetting(SettingError, TraitError):
    """A TraitError too, so traitlets rolls back a bad ``%config`` value instead of keeping it."""


class AirConfig(Configurable):
    """Every air_magics setting. ``None`` (the default of each) means: from the environment, else built in.

    The core never holds an instance: it calls :func:`get`, which reads the configurable a front end
    passed to :func:`use` (or one made from the environment alone).
    """

    home = _trait("home", "path")
    volumes_root = _trait("volumes_root", "path")
    volumes_mount = _trait("volumes_mount", "path")
    cache_dir = _trait("cache_dir", "path")
    cache_limit = _trait("cache_limit", "size")
    cache_reserve = _trait("cache_reserve", "size")
    workers = _trait("workers", "int")
    spark_dir = _trait("spark_dir", "path")
    spark_driver_memory = _trait("spark_driver_memory", "text")
    spark_idle_timeout = _trait("spark_idle_timeout", "float")
    spark_no_client_timeout = _trait("spark_no_client_timeout", "float")
    export_chunk_bytes = _trait("export_chunk_bytes", "size")
    table_max_bytes = _trait("table_max_bytes", "size")
    maven_repo = _trait("maven_repo", "path")
    uc_url = _trait("uc_url", "text")

    @validate(*_BY_NAME)
    def _check(self, proposal: Any) -> Any:
        name, value = proposal["trait"].name, proposal["value"]
        if value is None or value == "":
            return None  # unset: back to the environment
        try:
            _BY_NAME[name].parse(value, f"{type(self).__name__}.{name} = {value!r}")
        except SettingError as exc:
            raise _InvalidSetting(str(exc)) from None
        return value

    def value(self, name: str) -> Any:
        """The setting's current value: set here, else its environment variable, else the default."""
        s = _BY_NAME[name]
        own = getattr(self, name)
        if own is not None:
            return s.parse(own, f"{type(self).__name__}.{name} = {own!r}")
        raw = os.environ.get(s.env, "").strip()
        if raw:
            return s.parse(raw, f"{s.env}={raw!r}")
        return s.fallback(self)

    def overrides(self) -> dict[str, Any]:
        """The settings set on this configurable (not from the environment)."""
        return {s.name: getattr(self, s.name) for s in SETTINGS if getattr(self, s.name) is not None}

    def as_environment(self) -> dict[str, str]:
        """The settings set here as the environment variables that carry them to another process
        (``AIR_HOME``, ``AIR_CACHE_LIMIT``, ...), e.g. to the ranks a notebook starts."""
        return {_BY_NAME[name].env: str(value) for name, value in self.overrides().items()}

    def clear_overrides(self) -> None:
        """Back to the environment and the built-in defaults for every setting."""
        for s in SETTINGS:
            setattr(self, s.name, None)


_active: AirConfig | None = None


def active() -> AirConfig:
    """The configurable in use: the one a front end passed to :func:`use`, else one from the environment."""
    global _active
    if _active is None:
        _active = AirConfig()
    return _active


def use(config: AirConfig | None) -> AirConfig | None:
    """Make *config* the settings the core reads (``None``: the environment alone); returns the previous one."""
    global _active
    previous, _active = _active, config
    return previous


def get(name: str) -> Any:
    """The current value of setting *name* (see :data:`SETTINGS`); the core's one accessor."""
    if name not in _BY_NAME:
        raise KeyError(f"no setting {name!r}: one of {', '.join(_BY_NAME)}")
    return active().value(name)


def settings_table() -> str:
    """The Markdown table of :data:`SETTINGS` that the README carries (a test keeps them equal)."""
    rows = ["| setting | environment | default | meaning |", "|---|---|---|---|"]
    rows += [f"| `{s.name}` | `{s.env}` | {s.default} | {s.meaning} |" for s in SETTINGS]
    return "\n".join(rows)


# -- typed readers: what the core calls (each reads the current value, so a change applies at once) ----
def air_home() -> Path:
    """``home``: ``$AIR_HOME`` or ``~/.air``."""
    return get("home")


def embedded_volumes_root() -> Path:
    """``volumes_root``: ``$AIR_VOLUMES_ROOT`` or ``$AIR_HOME/volumes``."""
    return get("volumes_root") or air_home() / "volumes"


def registry_file() -> Path:
    """JSON file mapping ``catalog.schema.volume`` to an fsspec URL."""
    return air_home() / "volume_registry.json"


def cache_dir() -> Path:
    """``cache_dir``: ``$AIR_CACHE_DIR`` or ``$AIR_HOME/cache``."""
    return get("cache_dir")


def cache_limit() -> int | None:
    """``cache_limit`` in bytes (``None``: bounded by the free-disk reserve only)."""
    return get("cache_limit")


def cache_reserve() -> int:
    """``cache_reserve``: free disk the cache always leaves (default 1 GiB)."""
    return get("cache_reserve")


def spark_dir() -> Path:
    """``spark_dir``: ``$AIR_SPARK_DIR`` or ``$AIR_HOME/spark``, the embedded Spark store."""
    return get("spark_dir")


def copy_workers() -> int:
    """``workers``: parallel copies when a copy is not given ``workers`` (default 64)."""
    return get("workers")


def spark_driver_memory_mb() -> int | None:
    """``spark_driver_memory`` in MiB, or ``None`` to size the heap from the machine."""
    return get("spark_driver_memory")


def spark_idle_timeout() -> float:
    """``spark_idle_timeout``: seconds unused after which the embedded server stops (default 1800)."""
    return get("spark_idle_timeout")


def spark_no_client_timeout() -> float:
    """``spark_no_client_timeout``: seconds the embedded server outlives the last process that used it."""
    return get("spark_no_client_timeout")


def export_chunk_bytes() -> int | None:
    """``export_chunk_bytes``, or ``None`` to size fetches from the driver heap."""
    return get("export_chunk_bytes")


def maven_repo() -> Path:
    """``maven_repo``: ``$AIR_MAVEN_REPO`` or ``~/.m2/repository`` (Maven's own default, so jars are shared with it)."""
    return get("maven_repo")


def uc_url() -> str | None:
    """``uc_url``: ``$AIR_UC_URL``, or None (then a ``%air_volume connect``-ed catalog, if any)."""
    return get("uc_url")
