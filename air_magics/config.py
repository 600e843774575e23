"""Where things live: environment first, overridable per call.

``AIR_HOME`` (default ``~/.air``) holds the embedded volumes, the volume registry and run state.
``AIR_VOLUMES_ROOT`` overrides where embedded volumes live; ``AIR_VOLUMES_MOUNT`` overrides the
path probed for a real ``/Volumes`` mount (tests point it at a FUSE mount).
"""
from __future__ import annotations

import os
from pathlib import Path

from .io.units import parse_size  # re-exported: sizes in settings are parsed in one place

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


def cache_dir() -> Path:
    """``$AIR_CACHE_DIR`` or ``$AIR_HOME/cache``."""
    d = os.environ.get("AIR_CACHE_DIR")
    return Path(d).expanduser() if d else air_home() / "cache"


def cache_limit() -> int | None:
    """``$AIR_CACHE_LIMIT`` in bytes (``None``: bounded by the free-disk reserve only)."""
    return parse_size(os.environ.get("AIR_CACHE_LIMIT"), "AIR_CACHE_LIMIT")


def cache_reserve() -> int:
    """``$AIR_CACHE_RESERVE``: free disk the cache always leaves (default 1 GiB)."""
    n = parse_size(os.environ.get("AIR_CACHE_RESERVE"), "AIR_CACHE_RESERVE")
    return 1 << 30 if n is None else n


def spark_dir() -> Path:
    """``$AIR_SPARK_DIR`` or ``$AIR_HOME/spark``: the embedded Spark store (warehouse, metastore, logs)."""
    d = os.environ.get("AIR_SPARK_DIR")
    return Path(d).expanduser() if d else air_home() / "spark"
