"""``%air_volume connect`` / ``disconnect``, and what ``create`` and ``ls`` do in a connected Unity Catalog.

The API is :mod:`air_magics.volumes.catalog_volumes` and :class:`~air_magics.catalog.CatalogClient`;
this only parses and prints.

    %air_volume connect http://host:8080 [--token T] [--s3-endpoint URL]
    %air_volume connect --embedded          (the embedded server: built and started on first use)
    %air_volume create main.raw.images --location s3://bucket/images   (an external UC volume)
    %air_volume disconnect
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...catalog import CatalogClient, running
from ...errors import CatalogExistsError, CatalogNotFoundError, VolumeNotFoundError
from ...volumes import VolumePath, catalog_volumes
from ...volumes.summary import NamespaceListing
from .._state import store
from .command import Command, option

__all__ = ["CONNECT", "DISCONNECT", "catalog_namespace", "create_in_catalog"]


def _connect(magics: Any, args: Any) -> Any:
    if bool(args.args) == args.embedded:
        raise UsageError("%air_volume connect takes a catalog URL (http://host:8080) or --embedded")
    if args.embedded and running() is None:
        print("starting the embedded Unity Catalog server (the first start ever builds it: about 2 minutes)")
    conn = catalog_volumes.connect(
        args.args[0] if args.args else None, token=args.token, embedded=args.embedded, s3_endpoint=args.s3_endpoint
    )
    print(f"volumes resolve through Unity Catalog at {conn.url}" + (" (embedded)" if conn.embedded else ""))
    return conn


def _disconnect(magics: Any, args: Any) -> Any:
    was = catalog_volumes.disconnect()
    print("disconnected from Unity Catalog" if was else "no Unity Catalog was connected")
    return was


def create_in_catalog(name: str, location: str | None, exist_ok: bool) -> Any:
    """``create`` with a catalog connected: the volume in the catalog (see :func:`_create`)."""
    conn = catalog_volumes.connection()
    if conn is None:
        raise UsageError("create --location makes a Unity Catalog volume: connect one first (%air_volume connect URL)")
    return _create(conn.client(), VolumePath.parse_new_volume(name), location, exist_ok)


def _create(client: CatalogClient, vp: VolumePath, location: str | None, exist_ok: bool) -> Any:
    """The volume in the catalog, its catalog and schema made when missing."""
    for make in (lambda: client.create_catalog(vp.catalog), lambda: client.create_schema(vp.catalog, vp.schema)):
        try:
            make()
        except CatalogExistsError:
            pass
    try:
        doc = client.create_volume(vp.catalog, vp.schema, vp.volume, storage_location=location)
    except CatalogExistsError:
        if not exist_ok:
            raise UsageError(
                f"volume {vp.volume_id!r} already exists in the catalog; pick another name or add --exist-ok"
            ) from None
        doc = client.get_volume(vp.catalog, vp.schema, vp.volume)
    catalog_volumes.forget()
    print(f"created volume /Volumes/{vp.catalog}/{vp.schema}/{vp.volume} in Unity Catalog at {doc['storage_location']}")
    return doc


def catalog_namespace(parts: tuple[str, ...]) -> NamespaceListing:
    """``ls /Volumes`` or ``ls /Volumes/c`` with a catalog connected: every volume's catalogs or
    schemas (the catalog's and the local ones), plus the catalog's catalogs and schemas that hold no
    volume yet (the listing over volumes alone would not show them)."""
    conn = catalog_volumes.connection()
    volumes = store().volumes()
    try:
        listing = NamespaceListing.of(parts, volumes)
    except VolumeNotFoundError:
        listing = NamespaceListing("/".join(("/Volumes", *parts)), ("catalogs", "schemas", "volumes")[len(parts)], [])
    if len(parts) == 2 or conn is None:
        return listing if listing.rows else NamespaceListing.of(parts, volumes)
    client = conn.client()
    try:
        names = (
            [c["name"] for c in client.list_catalogs()]
            if not parts
            else [s["name"] for s in client.list_schemas(parts[0])]
        )
    except CatalogNotFoundError:
        names = []
    have = set(listing.names)
    rows = listing.rows + [(f"{listing.path}/{n}", "no volumes yet") for n in names if n not in have]
    if not rows:
        return NamespaceListing.of(parts, volumes)  # its one-line error: nothing there, what is
    return NamespaceListing(listing.path, listing.level, sorted(rows))


CONNECT = Command(
    "connect",
    "URL",
    (0, 1),
    "resolve volumes through a Unity Catalog server (http://host:8080), or the embedded one (--embedded)",
    _connect,
    (
        option("--token", metavar="T", help="the catalog's bearer token (else AIR_UC_TOKEN); never stored"),
        option("--embedded", action="store_true", help="the embedded Unity Catalog server (built on first use)"),
        option("--s3-endpoint", metavar="URL", help="where the catalog's s3:// locations are served"),
    ),
    printed=True,
)
DISCONNECT = Command(
    "disconnect", "", (0, 0), "stop resolving volumes through Unity Catalog", _disconnect, printed=True
)
