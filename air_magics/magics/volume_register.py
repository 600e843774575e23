"""``%air_volume register``: its options and the registration a magic line asks for.

Why a module of its own: registration grew its own options (where the store is, which profile
signs, backend options, whether to check first), and ``magics/volume.py`` holds every other
command; the API is :meth:`~air_magics.volumes.VolumeStore.register`, this only parses and prints.

    %air_volume register main.s3.raw s3://bucket/prefix
    %air_volume register main.s3.raw s3://bucket/prefix --endpoint http://127.0.0.1:8333 --profile minio
    %air_volume register main.s3.raw s3://bucket/prefix --option client_kwargs.region_name=eu-west-1
    %air_volume register main.s3.raw s3://bucket/prefix --no-check        (offline: nothing is asked)
"""

from __future__ import annotations

import json
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from ..volumes import VolumeInfo

__all__ = ["register_arguments", "register", "parse_options", "REGISTER_FLAGS"]

REGISTER_FLAGS = ("endpoint", "profile", "option", "no_check")


def register_arguments() -> list[Any]:
    """The ``argument(...)`` decorators of ``register`` (added to ``%air_volume``'s parser)."""
    return [
        argument(
            "--endpoint",
            metavar="URL",
            help="register: the object store's endpoint (an S3-compatible server: http://host:port); stored "
            "with the volume. Default: the backend's own (AWS_ENDPOINT_URL, the profile's, or AWS's)",
        ),
        argument(
            "--profile",
            metavar="NAME",
            help="register: the AWS profile whose credentials sign the requests (~/.aws/config); stored by "
            "name: keys and secrets are never stored, the standard chain finds them",
        ),
        argument(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="register: a backend option stored with the volume (repeatable; a dotted key nests: "
            "config_kwargs.max_pool_connections=128; VALUE is read as JSON when it parses). Never a secret",
        ),
        argument(
            "--no-check",
            action="store_true",
            help="register: store it without the one listing that proves the bucket reachable and readable",
        ),
    ]


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


def register(st: Any, args: Any) -> VolumeInfo:
    """Register ``args.args`` = (volume, URL) with the line's options; prints one line."""
    info = st.register(
        args.args[0],
        args.args[1],
        endpoint=args.endpoint,
        profile=args.profile,
        options=parse_options(args.option),
        check=not args.no_check,
    )
    where = f" (endpoint {info.endpoint})" if info.endpoint else ""
    checked = "" if info.location.partition("://")[0].lower() not in _checked() else "; listed: reachable and readable"
    if args.no_check:
        checked = "; not checked (--no-check): the first read will tell whether it is reachable"
    print(f"registered /Volumes/{info.volume_id.replace('.', '/')} -> {info.location}{where}{checked}")
    return info


def _checked() -> frozenset[str]:
    from ..volumes.access import BUCKET_SCHEMES

    return BUCKET_SCHEMES
