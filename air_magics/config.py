"""Where things live: environment first, overridable per call.

``AIR_HOME`` (default ``~/.air``) holds the embedded volumes, the volume registry and run state.
``AIR_VOLUMES_ROOT`` overrides where embedded volumes live; ``AIR_VOLUMES_MOUNT`` overrides the
path probed for a real ``/Volumes`` mount (tests point it at a FUSE mount).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["air_home", "volumes_mount", "embedded_volumes_root", "registry_file", "parse_size", "cache_dir", "cache_limit", "cache_reserve", "spark_dir"]

MOUNT_DEFAULT = "/Volumes"


def air_home() -> Path:
    """``$AIR_HOME`` or ``~/.air``."""
    return Path(os.environ.get("AIR_HOME") or Path.home() / ".air").expanduser()


def volumes_mount() -> Path | None:
    """The real ``/Volumes`` mount if one is present (a directory), else ``None``.

    ``AIR_VOLUMES_ROOT`` set explicitly wins over a mount: the user asked for that root.
    """
    if os.environ.get("AIR_VOLUMES_ROOT"):
        return None
    mount = Path(os.environ.get("AIR_VOLUMES_MOUNT") or MOUNT_DEFAULT)
    return mount if mount.is_dir() else None


def embedded_volumes_root() -> Path:
    """``$AIR_VOLUMES_ROOT`` or ``$AIR_HOME/volumes``."""
    root = os.environ.get("AIR_VOLUMES_ROOT")
    return Path(root).expanduser() if root else air_home() / "volumes"


def registry_file() -> Path:
    """JSON file mapping ``catalog.schema.volume`` to an fsspec URL."""
    return air_home() / "volume_registry.json"


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000**2, "mb": 1000**2, "mib": 1 << 20,
          "g": 1000**3, "gb": 1000**3, "gib": 1 << 30, "t": 1000**4, "tb": 1000**4, "tib": 1 << 40}


def parse_size(value: "int | float | str | None", what: str = "size") -> int | None:
    """``10GiB``, ``500 MB``, ``1e9`` or an int -> bytes; ``None``/``''`` -> ``None``."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        n = int(value)
    else:
        import re

        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(value))
        unit = m.group(2).lower() if m else None
        if not m or unit not in _UNITS:
            raise ValueError(f"{what} {value!r} is not a size: write e.g. 500MB, 10GiB or a number of bytes")
        n = int(float(m.group(1)) * _UNITS[unit])
    if n < 0:
        raise ValueError(f"{what} {value!r} is negative")
    return n


def cache_dir() -> Path:
    """``$AIR_CACHE_DIR`` or ``$AIR_HOME/cache``."""
    d = os.environ.get("AIR_CACHE_DIR")
    return Path(d).expanduser() if d else air_home() / "cache"


def cache_limit() -> int | None:
    """``$AIR_CACHE_LIMIT`` in bytes (``None``: bounded by the free-disk reserve only)."""
    return parse_size(os.environ.get("AIR_CACHE_LIMIT"), "AIR_CACHE_LIMIT")


def cache_reserve() -> int:
    """``$AIR_CACHE_RESERVE``: free disk the cache always leaves (default 1 GiB)."""
    return parse_size(os.environ.get("AIR_CACHE_RESERVE"), "AIR_CACHE_RESERVE") or (1 << 30)


def spark_dir() -> Path:
    """``$AIR_SPARK_DIR`` or ``$AIR_HOME/spark``: the embedded Spark store (warehouse, metastore, logs)."""
    d = os.environ.get("AIR_SPARK_DIR")
    return Path(d).expanduser() if d else air_home() / "spark"
