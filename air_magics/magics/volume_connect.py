"""``%air_volume connect`` / ``disconnect`` and ``create`` in a connected Unity Catalog.

Why a module of its own: ``magics/volume.py`` holds every other command; the API is
:mod:`air_magics.volumes.catalog_volumes` and :class:`~air_magics.catalog.CatalogClient`, this only
parses and prints.

    %air_volume connect http://host:8080 [--token T] [--s3-endpoint URL]
    %air_volume connect --embedded          (the embedded server: built and started on first use)
    %air_volume create main.raw.images --location s3://bucket/images   (an external UC volume)
    %air_volume disconnect
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from ..catalog import CatalogClient, running
from ..errors import CatalogExistsError, CatalogNotFoundError, VolumeNotFoundError
from ..volumes import VolumePath, catalog_volumes
from ..volumes.path import parse_namespace
from ..volumes.summary import NamespaceListing
from ._state import store

__all__ = ["CONNECT_COMMANDS", "catalog_command", "connect_arguments", "is_catalog_command"]

CONNECT_COMMANDS = ("connect", "disconnect")


def connect_arguments() -> list[Any]:
    """The ``argument(...)`` decorators of ``connect`` and ``create --location``."""
    return [
        argument("--token", metavar="T", help="connect: the catalog's bearer token (else AIR_UC_TOKEN); never stored"),
        argument("--embedded", action="store_true", help="connect: the embedded Unity Catalog server"),
        argument("--s3-endpoint", metavar="URL", help="connect: where the catalog's s3:// locations are served"),
        argument("--location", metavar="URL", help="create, with a catalog connected: the volume's storage"),
    ]


def is_catalog_command(args: Any) -> bool:
    """``connect``, ``disconnect``; ``create`` and ``ls`` above volume level while a catalog is
    connected; or a line with this module's flags (whose misuse :func:`catalog_command` reports)."""
    if args.command in CONNECT_COMMANDS or args.token or args.embedded or args.s3_endpoint or args.location:
        return True
    above_volumes = args.command == "ls" and len(args.args) == 1 and parse_namespace(args.args[0]) is not None
    return (args.command == "create" or above_volumes) and catalog_volumes.connection() is not None


def catalog_command(magics: Any, args: Any) -> Any:
    if args.command != "connect" and (args.token or args.embedded or args.s3_endpoint):
        raise UsageError(f"--token/--embedded/--s3-endpoint only apply to `connect`, not to {args.command!r}")
    if args.command != "create" and args.location:
        raise UsageError(f"--location only applies to `create` (with a catalog connected), not to {args.command!r}")
    if args.command == "create" and catalog_volumes.connection() is None:
        raise UsageError("create --location makes a Unity Catalog volume: connect one first (%air_volume connect URL)")
    if args.command == "connect":
        if len(args.args) > 1 or bool(args.args) == args.embedded:
            raise UsageError("%air_volume connect takes a catalog URL (http://host:8080) or --embedded")
        if args.embedded and running() is None:
            print("starting the embedded Unity Catalog server (the first start ever builds it: about 2 minutes)")
        conn = catalog_volumes.connect(
            args.args[0] if args.args else None, token=args.token, embedded=args.embedded, s3_endpoint=args.s3_endpoint
        )
        print(f"volumes resolve through Unity Catalog at {conn.url}" + (" (embedded)" if conn.embedded else ""))
        return conn
    if args.command == "disconnect":
        if args.args:
            raise UsageError("%air_volume disconnect takes no arguments")
        was = catalog_volumes.disconnect()
        print("disconnected from Unity Catalog" if was else "no Unity Catalog was connected")
        return was
    if args.command == "ls":
        if args.recursive or args.pattern:
            raise UsageError(f"-r/--pattern list inside a volume; {args.args[0]} is above volume level")
        return _namespace(parse_namespace(args.args[0]) or ())
    if len(args.args) != 1:
        raise UsageError("%air_volume create takes catalog.schema.volume [--location URL]")
    return _create(catalog_volumes.connection().client(), VolumePath.parse_new_volume(args.args[0]), args)


def _create(client: CatalogClient, vp: VolumePath, args: Any) -> Any:
    """The volume in the catalog, its catalog and schema made when missing."""
    for make in (lambda: client.create_catalog(vp.catalog), lambda: client.create_schema(vp.catalog, vp.schema)):
        try:
            make()
        except CatalogExistsError:
            pass
    try:
        doc = client.create_volume(vp.catalog, vp.schema, vp.volume, storage_location=args.location)
    except CatalogExistsError:
        if not args.exist_ok:
            raise UsageError(
                f"volume {vp.volume_id!r} already exists in the catalog; pick another name or add --exist-ok"
            ) from None
        doc = client.get_volume(vp.catalog, vp.schema, vp.volume)
    catalog_volumes.forget()
    print(f"created volume /Volumes/{vp.catalog}/{vp.schema}/{vp.volume} in Unity Catalog at {doc['storage_location']}")
    return doc


def _namespace(parts: tuple[str, ...]) -> NamespaceListing:
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
