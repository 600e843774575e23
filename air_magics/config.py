"""Where things live and how big things get: typed readers of the current settings.

Each function reads one setting through :func:`air_magics.settings.get` (set with
``%config AirMagics.<name>``, ``c.AirConfig.<name>`` in ``jupyter_server_config``, or its ``AIR_*``
environment variable; see :data:`air_magics.settings.SETTINGS`), so a change takes effect at the
next call. ``AIR_VOLUMES_ROOT`` (or ``volumes_root``) set explicitly wins over a ``/Volumes`` mount.
"""

from __future__ import annotations

from pathlib import Path

from .io.units import parse_size  # re-exported: sizes in settings are parsed in one place
from .settings import DEFAULT_COPY_WORKERS, get

__all__ = [
    "air_home",
    "volumes_mount",
    "embedded_volumes_root",
    "registry_file",
    "parse_size",
    "cache_dir",
    "cache_limit",
    "cache_reserve",
    "spark_dir",
    "copy_workers",
    "spark_driver_memory_mb",
    "spark_idle_timeout",
    "export_chunk_bytes",
    "MOUNT_DEFAULT",
    "DEFAULT_COPY_WORKERS",
]

MOUNT_DEFAULT = "/Volumes"


def air_home() -> Path:
    """``home``: ``$AIR_HOME`` or ``~/.air``."""
    return get("home")


def volumes_mount() -> Path | None:
    """The real ``/Volumes`` mount if one is present (a directory), else ``None``.

    ``volumes_root`` set explicitly wins over a mount: the user asked for that root.
    """
    if get("volumes_root") is not None:
        return None
    mount: Path = get("volumes_mount")
    return mount if mount.is_dir() else None


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


def export_chunk_bytes() -> int | None:
    """``export_chunk_bytes``, or ``None`` to size fetches from the driver heap."""
    return get("export_chunk_bytes")
