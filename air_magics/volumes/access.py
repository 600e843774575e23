"""The check a registration makes before anything is stored: one listing of the bucket and prefix.

Why: a volume registered to storage it cannot reach failed later and far from the cause (a
``NoCredentialsError`` traceback at the first read, "does not exist" from ``ls`` after a wrong secret,
20 s of retries against an endpoint that is down), and stayed registered. Here one request with a
short connect timeout and no retries answers, and each way it can fail is one line that names the
URL, the endpoint and the fix:

========================  ===============================================================
no credentials            :class:`~air_magics.errors.StorageCredentialsError` (PermissionError)
forbidden                 :class:`~air_magics.errors.StorageAccessError` (PermissionError):
                          a wrong key or secret, or no permission to list the bucket
endpoint unreachable      :class:`~air_magics.errors.StorageUnreachableError` (ConnectionError),
                          within about 5 s
no such bucket            :class:`~air_magics.errors.VolumeNotFoundError` (FileNotFoundError)
========================  ===============================================================

S3 is checked with one ``ListObjectsV2`` (``MaxKeys=1``) through s3fs; other object stores (gs://,
abfs://) through the same fsspec path with a listing of the prefix (untested here: no such server
runs on these machines).
"""

from __future__ import annotations

import errno
import os
from typing import Any

from ..errors import StorageAccessError, StorageCredentialsError, StorageUnreachableError, VolumeNotFoundError

__all__ = ["BUCKET_SCHEMES", "check_access", "endpoint_of"]

BUCKET_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl"})  # checked, never made
CONNECT_TIMEOUT_S = 3.0  # the connect timeout of the check (a closed port answers at once)
READ_TIMEOUT_S = 5.0
_S3 = ("s3", "s3a")
_UNREACHABLE_TYPES = (
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ConnectionClosedError",
    "FSTimeoutError",
    "ClientConnectorError",
    "ServerTimeoutError",
)
_CREDENTIAL_TYPES = ("NoCredentialsError", "PartialCredentialsError", "ProfileNotFound", "NoAuthTokenError")
_WRONG_KEY = (
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    "InvalidToken",
    "ExpiredToken",
    "AuthorizationHeaderMalformed",
)


def endpoint_of(scheme: str, options: dict[str, Any]) -> str:
    """Where requests for a volume go, in words: the stored endpoint, the environment's, or the default."""
    if options.get("endpoint_url"):
        return str(options["endpoint_url"])
    if scheme in _S3:
        for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
            if os.environ.get(var):
                return f"{os.environ[var]} (from {var})"
        return "AWS's default endpoint"
    return f"the default endpoint of {scheme}://"


def check_access(url: str, options: dict[str, Any]) -> None:
    """Prove with one listing that *url*'s bucket is reachable and may be listed with the
    credentials the backend finds (never stored by us); raise the one-line error that says why
    not otherwise (see the module docstring)."""
    from fsspec.core import split_protocol, url_to_fs

    scheme = (split_protocol(url)[0] or "").lower()
    where = endpoint_of(scheme, options)
    opts = dict(options)
    if scheme in _S3:  # one try, a short connect timeout: a down endpoint answers in seconds, not 20
        config = dict(opts.get("config_kwargs") or {})
        config.update(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S)
        config["retries"] = {"max_attempts": 1, "mode": "standard"}
        opts.update(config_kwargs=config)
    try:
        fs, path = url_to_fs(url, skip_instance_cache=True, **opts)
        if scheme in _S3:
            fs.retries = 1  # (s3fs's own retry loop, a class attribute: this instance's is one try)
            bucket, key, _ = fs.split_path(path)
            prefix = f"{key.rstrip('/')}/" if key else ""
            fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=1)
        else:
            _list_generic(fs, path)
    except Exception as exc:
        raise _why(exc, url, scheme, where) from None


def _list_generic(fs: Any, path: str) -> None:
    """A listing of *path*; an empty (absent) prefix is fine when its bucket lists."""
    try:
        fs.ls(path)
    except FileNotFoundError:
        bucket = path.strip("/").split("/", 1)[0]
        if bucket == path.strip("/"):
            raise
        fs.ls(bucket)


def _names(exc: BaseException) -> set[str]:
    """Class names of *exc*, its causes and their bases (the backends' errors, without importing them)."""
    out: set[str] = set()
    seen = 0
    e: BaseException | None = exc
    while e is not None and seen < 5:
        out.update(c.__name__ for c in type(e).__mro__)
        e, seen = e.__cause__ or e.__context__, seen + 1
    return out


def _code(exc: BaseException) -> str | None:
    e: BaseException | None = exc
    while e is not None:
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            return response.get("Error", {}).get("Code")
        e = e.__cause__ or e.__context__
    return None


def _why(exc: Exception, url: str, scheme: str, where: str) -> Exception:
    """The one-line registration error for *exc*; nothing was registered."""
    names, code = _names(exc), _code(exc)
    nothing = "nothing was registered"
    if names & set(_CREDENTIAL_TYPES):
        what = str(exc).split("\n")[0]
        chain = (
            "the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), a profile (AWS_PROFILE or --profile NAME, "
            "in ~/.aws/credentials or ~/.aws/config) or an instance role"
            if scheme in _S3
            else f"the {scheme}:// backend's credentials chain"
        )
        return StorageCredentialsError(
            f"no usable credentials for {url} ({what}): set them in {chain}, then register again; {nothing}"
        )
    if code in _WRONG_KEY:
        return StorageAccessError(
            f"{where} refused the credentials for {url} ({code}: the access key or its secret is wrong, or the token "
            f"expired): fix AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the profile, then register again; {nothing}"
        )
    if isinstance(exc, PermissionError) or code in ("AccessDenied", "AllAccessDisabled", "403"):
        what = f"{code}: {exc}" if code and code not in str(exc) else str(exc)
        return StorageAccessError(
            f"{where} refused to list {url} ({what.splitlines()[0] if what else 'Forbidden'}): these credentials may "
            f"not list the bucket; grant them the list permission (s3:ListBucket) or use others (AWS_ACCESS_KEY_ID/"
            f"AWS_SECRET_ACCESS_KEY, --profile NAME), then register again; {nothing}"
        )
    if code == "NoSuchBucket" or (isinstance(exc, FileNotFoundError) and "bucket" in str(exc).lower()):
        bucket = url.partition("://")[2].split("/", 1)[0]
        return VolumeNotFoundError(
            f"bucket {bucket!r} does not exist at {where}: create it, or fix the URL {url} (or the endpoint); {nothing}"
        )
    if (
        names & set(_UNREACHABLE_TYPES)
        or isinstance(exc, (ConnectionError, TimeoutError))
        or (isinstance(exc, OSError) and exc.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ETIMEDOUT))
    ):
        what = str(exc).split("\n")[0]
        return StorageUnreachableError(
            f"cannot reach {where} for {url} ({what}): start the server or fix the endpoint (--endpoint URL, "
            f"AWS_ENDPOINT_URL or the profile's endpoint_url), then register again; {nothing} (--no-check registers "
            f"without this check)"
        )
    return exc
