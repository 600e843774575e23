"""``%air_volume create``, ``register`` and ``use``: the volumes a name refers to.

``register`` grew options of its own (where the store is, which profile signs, backend options,
whether to check first); the API is :meth:`~air_magics.volumes.VolumeStore.register`, this only
parses and prints::

    %air_volume register main.s3.raw s3://bucket/prefix --endpoint http://127.0.0.1:8333 --profile minio
    %air_volume register main.s3.raw s3://bucket/prefix --option client_kwargs.region_name=eu-west-1
    %air_volume register main.s3.raw s3://bucket/prefix --no-check        (offline: nothing is asked)
"""

from __future__ import annotations

import json
from typing import Any

from IPython.core.error import UsageError

from ...errors import VolumeExistsError
from ...volumes import VolumeInfo, VolumePath
from .._state import store
from .command import Command, option

__all__ = ["CREATE", "REGISTER", "USE", "parse_options"]


def _create(magics: Any, args: Any) -> Any:
    from ...volumes import catalog_volumes

    if args.location is not None or catalog_volumes.connection() is not None:  # a Unity Catalog volume
        from .connect_cmd import create_in_catalog

        return create_in_catalog(args.args[0], args.location, args.exist_ok)
    try:
        info = store().create(args.args[0], exist_ok=args.exist_ok)
    except VolumeExistsError as exc:  # the API's advice (exist_ok=True) in the magic's words
        raise UsageError(str(exc).replace("pass exist_ok=True", "add --exist-ok")) from None
    print(f"created volume /Volumes/{info.volume_id.replace('.', '/')} at {info.location}")
    return info


def _register(magics: Any, args: Any) -> VolumeInfo:
    """Register ``args.args`` = (volume, URL) with the line's options; prints one line."""
    from ...volumes.access import BUCKET_SCHEMES

    info = store().register(
        args.args[0],
        args.args[1],
        endpoint=args.endpoint,
        profile=args.profile,
        options=parse_options(args.option),
        check=not args.no_check,
    )
    where = f" (endpoint {info.endpoint})" if info.endpoint else ""
    checked = "; listed: reachable and readable" if info.location.partition("://")[0].lower() in BUCKET_SCHEMES else ""
    if args.no_check:
        checked = "; not checked (--no-check): the first read will tell whether it is reachable"
    print(f"registered /Volumes/{info.volume_id.replace('.', '/')} -> {info.location}{where}{checked}")
    return info


def _use(magics: Any, args: Any) -> VolumeInfo:
    vp = VolumePath.parse_volume(args.args[0])
    info = store().volume_info(vp)  # must exist
    magics.default_volume = vp.volume_id
    print(f"default volume: {vp} (relative paths in %air_volume and %%air_copy now refer to it)")
    return info


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``["a=1", "b.c=x"]`` -> ``{"a": 1, "b": {"c": "x"}}``; a malformed pair is a UsageError."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip() or any(not part for part in key.strip().split(".")):
            raise UsageError(f"--option takes KEY=VALUE (e.g. --option anon=true), not {pair!r}")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        *parents, last = key.strip().split(".")
        node = out
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise UsageError(f"--option {pair!r}: {part!r} was given a value already, it cannot also nest keys")
            node = child
        node[last] = value
    return out


CREATE = Command(
    "create",
    "catalog.schema.volume",
    (1, 1),
    "create a volume in the embedded root, or in the connected Unity Catalog",
    _create,
    (
        option("--exist-ok", action="store_true", help="no error if the volume already exists"),
        option("--location", metavar="URL", help="with a catalog connected: the volume's storage (an external volume)"),
    ),
    printed=True,
)
REGISTER = Command(
    "register",
    "catalog.schema.volume URL",
    (2, 2),
    "a volume on an fsspec URL (s3://, gs://, abfs://, a folder); object stores are checked with one listing first",
    _register,
    (
        option(
            "--endpoint",
            metavar="URL",
            help="the object store's endpoint (an S3-compatible server: http://host:port); stored with the "
            "volume. Default: the backend's own (AWS_ENDPOINT_URL, the profile's, or AWS's)",
        ),
        option(
            "--profile",
            metavar="NAME",
            help="the AWS profile whose credentials sign the requests (~/.aws/config); stored by name: keys "
            "and secrets are never stored, the standard chain finds them",
        ),
        option(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a backend option stored with the volume (repeatable; a dotted key nests: "
            "config_kwargs.max_pool_connections=128; VALUE is read as JSON when it parses). Never a secret",
        ),
        option(
            "--no-check",
            action="store_true",
            help="store it without the one listing that proves the bucket reachable and readable",
        ),
    ),
    printed=True,
)
USE = Command(
    "use",
    "catalog.schema.volume",
    (1, 1),
    "the default volume that relative paths refer to",
    _use,
    printed=True,
)
