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
    "volumes_mount_status",
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
    "spark_no_client_timeout",
    "export_chunk_bytes",
    "MOUNT_DEFAULT",
    "EMBEDDED_MARKER",
    "DEFAULT_COPY_WORKERS",
]

MOUNT_DEFAULT = "/Volumes"


def air_home() -> Path:
    """``home``: ``$AIR_HOME`` or ``~/.air``."""
    return get("home")


def volumes_mount() -> Path | None:
    """The real ``/Volumes`` mount (or ``AIR_VOLUMES_MOUNT``) if one is present, else ``None``.

    ``volumes_root`` set explicitly wins over a mount: the user asked for that root. A folder counts
    only if it looks like a volumes mount (:func:`volumes_mount_status` says why or why not).
    """
    return volumes_mount_status()[0]


EMBEDDED_MARKER = ".air-embedded-root"  # left in an embedded root by air_magics.volumes.mount()
_NETWORK_FS = ("fuse", "nfs", "cifs", "smb", "9p", "virtiofs", "ceph", "glusterfs", "lustre", "afs", "webdav")


def _mount_fstype(path: str) -> str | None:
    """Filesystem type of the mount point *path* (Linux ``/proc/self/mountinfo``), None if not one."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    found = None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) > 4 and right:
            point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
            if point == path:
                found = right.split()[0]  # the last mount on a point is the visible one
    return found


def volumes_mount_status(mount: Path | None = None) -> tuple[Path | None, str]:
    """``(mount or None, why)``: whether ``volumes_mount`` (``/Volumes``; or *mount*) is a real volumes mount.

    It counts when it is a FUSE or network filesystem mounted there (Linux), or when it is a plain
    folder whose entries are catalog folders holding schema folders holding volume folders
    (identifier names; hidden entries ignored; an empty folder counts). It does not count when it is
    missing, when it leads to the embedded root (the link ``%air_volume mount`` makes), when it leads to
    a folder holding the marker ``mount`` leaves in an embedded root (another ``AIR_HOME``'s link: the
    same files must not be taken for a foreign mount), or when it holds anything else: a name that is not a
    catalog name (``Macintosh HD``), a file, or a disk mounted below it (macOS mounts disks there).
    """
    import os
    import stat

    from .volumes.path import _NAME

    if get("volumes_root") is not None:
        return None, "volumes_root (AIR_VOLUMES_ROOT) is set, so it is used instead of a mount"
    mount = Path(mount) if mount is not None else get("volumes_mount")
    if not mount.is_dir():
        return None, f"no volumes mount: {mount} is not a folder"
    real = os.path.realpath(mount)
    if real == os.path.realpath(embedded_volumes_root()):
        return None, f"{mount} leads to the embedded root {embedded_volumes_root()}"
    # only a link can be another AIR_HOME's mount; a real mount is never asked for the marker (on a
    # stuck remote mount that lookup would hang every caller on the same name)
    if os.path.islink(mount) and os.path.isfile(os.path.join(real, EMBEDDED_MARKER)):
        return None, f"{mount} leads to {real}, the embedded root of another AIR_HOME (linked by %air_volume mount)"
    fstype = _mount_fstype(real)
    if fstype and fstype.split(".")[0].startswith(_NETWORK_FS):
        return mount, f"{mount} is a {fstype} mount"
    not_mount = f"{mount} is not a volumes mount"

    def folders(d: str, level: str) -> tuple[list[str], str | None]:
        """Non-hidden entries of *d* if each is a *level* folder on *d*'s device, else a reason."""
        try:
            dev = os.stat(d).st_dev
            with os.scandir(d) as it:
                entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
        except OSError as exc:
            return [], f"{not_mount}: {os.path.relpath(d, mount)!r} cannot be listed ({exc.strerror or exc})"
        for e in entries[:64]:
            where = os.path.join(d, e.name)
            rel = os.path.relpath(where, mount)
            if not _NAME.fullmatch(e.name):
                return [], f"{not_mount}: it holds {rel!r}, which is not a {level} name (as disks under macOS /Volumes)"
            try:
                st = os.stat(where)
            except OSError:
                return [], f"{not_mount}: {rel!r} is a broken link, not a {level} folder"
            if not stat.S_ISDIR(st.st_mode):
                return [], f"{not_mount}: {rel!r} is a file, not a {level} folder"
            if st.st_dev != dev:
                return [], f"{not_mount}: {rel!r} is a disk mounted there, not a {level} folder"
        return [os.path.join(d, e.name) for e in entries], None

    catalogs, why = folders(str(mount), "catalog")
    if why:
        return None, why
    for cat in catalogs[:4]:  # a sample: every listing may be a round trip
        schemas, why = folders(cat, "schema")
        if why:
            return None, why
        for sch in schemas[:1]:
            _, why = folders(sch, "volume")
            if why:
                return None, why
    if not catalogs:
        return mount, f"{mount} is an empty folder (no disks): volumes created there"
    return mount, f"{mount} holds catalog/schema/volume folders"


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
    """``spark_no_client_timeout``: seconds the embedded server outlives the last process that used it (default 300)."""
    return get("spark_no_client_timeout")


def export_chunk_bytes() -> int | None:
    """``export_chunk_bytes``, or ``None`` to size fetches from the driver heap."""
    return get("export_chunk_bytes")
