"""The options a Rust or Arrow reader (deltalake's ``object_store``) needs to reach a registered
volume's objects: the same endpoint and credentials the volume's fsspec backend uses.

Why: deltalake reads a Delta log itself, not through fsspec, so a Delta table on an ``s3://`` volume
needs the volume's endpoint (from its registration), the credentials the standard chain finds (the
environment, the registered profile) and, for an ``http://`` endpoint (an S3-compatible server),
``AWS_ALLOW_HTTP``. Nothing here is stored: the options are made when a table is opened.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import StorageAccessError

__all__ = ["object_store_options"]


def object_store_options(protocol: str, options: dict[str, Any]) -> dict[str, str]:
    """deltalake ``storage_options`` for a volume whose fsspec backend has *protocol* and *options*
    (its storage options: ``endpoint_url``, ``profile``, ``client_kwargs``, ...). Only ``s3`` is
    translated; another store gets ``{}`` (deltalake reads its own environment)."""
    if protocol not in ("s3", "s3a"):
        return {}
    client = options.get("client_kwargs") or {}
    endpoint = options.get("endpoint_url") or client.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL")
    region = client.get("region_name") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    out: dict[str, str] = {}
    if endpoint:
        out["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    out["AWS_REGION"] = region or "us-east-1"
    creds = _credentials(options)
    if creds is not None:
        out["AWS_ACCESS_KEY_ID"], out["AWS_SECRET_ACCESS_KEY"] = creds[0], creds[1]
        if creds[2]:
            out["AWS_SESSION_TOKEN"] = creds[2]
    return out


def _credentials(options: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """The key, secret and token the AWS chain finds for these options (explicit ones first), or None
    (anonymous, or none configured: deltalake then tries its own chain)."""
    if options.get("anon"):
        return None
    if options.get("key") and options.get("secret"):
        return str(options["key"]), str(options["secret"]), options.get("token")
    try:
        import botocore.session
    except ImportError:  # pragma: no cover - s3fs depends on botocore
        return None
    try:
        found = botocore.session.Session(profile=options.get("profile")).get_credentials()
    except Exception as exc:  # noqa: BLE001 - botocore's ProfileNotFound and friends
        raise StorageAccessError(
            f"the credentials of profile {options.get('profile')!r} cannot be read ({exc}); check ~/.aws/config"
        ) from None
    if found is None:
        return None
    frozen = found.get_frozen_credentials()
    return frozen.access_key, frozen.secret_key, frozen.token
