"""Volumes of a connected Unity Catalog: ``/Volumes/c/s/v`` resolved through the UC volume's
``storage_location``.

Why here and cached: ``VolumeStore.volume_info`` runs for every path a dataset or a copy opens, so a
catalog answer is kept per process for ``_TTL`` seconds (a missing volume too), and vended keys
until ``_RENEW_BEFORE`` seconds before they expire. Without a connection (no ``AIR_UC_URL``, no
``connect()``) nothing here makes a call or starts a JVM.

The connection: the ``uc_url`` setting (``AIR_UC_URL``) when set, else the one ``connect()`` wrote
to ``$AIR_HOME/uc/connection.json`` (the URL, the S3 endpoint; without one, s3fs's own:
``AWS_ENDPOINT_URL`` or AWS). The token is ``AIR_UC_TOKEN``, on purpose no setting (``%config``
would show it): ``connect(token=)`` puts it there for this process and its children, never on disk.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import settings
from ..catalog import STATIC_KEYS_TOKEN, CatalogClient, ensure_server
from ..errors import CatalogError, CatalogNotFoundError
from ..io.atomic import write_atomic
from .location import VolumeInfo
from .path import VolumePath

__all__ = ["Connection", "connect", "connection", "disconnect", "forget", "scan", "volume_info", "volumes"]

KIND = "catalog"
_TTL = 30.0
_RENEW_BEFORE = 300.0
_STATIC_KEYS_TTL = 900.0  # keys vended with no expiry (static ones) are asked for again this often
_lock = threading.Lock()
_answers: dict[tuple[str, str], tuple[float, VolumeInfo | None]] = {}


@dataclass(frozen=True)
class Connection:
    """The connected catalog: its ``url``, whether it is the ``embedded`` server, and the
    ``s3_endpoint`` its ``s3://`` locations are reached at (None: ``AWS_ENDPOINT_URL`` or AWS)."""

    url: str
    embedded: bool = False
    s3_endpoint: str | None = None

    def client(self) -> CatalogClient:
        return CatalogClient(self.url, token=os.environ.get("AIR_UC_TOKEN") or None)


def _file() -> Path:
    return settings.air_home() / "uc" / "connection.json"


def connection() -> Connection | None:
    """The connected catalog, or None (volumes resolve as without one)."""
    if url := settings.uc_url():
        return Connection(url)
    try:
        doc = json.loads(_file().read_text())
    except (OSError, ValueError):
        return None
    return Connection(doc["url"], bool(doc.get("embedded")), doc.get("s3_endpoint"))


def connect(
    url: str | None = None, *, token: str | None = None, embedded: bool = False, s3_endpoint: str | None = None
) -> Connection:
    """Resolve volumes through the catalog at *url* (or the embedded server, started if needed) from
    now on, in this ``AIR_HOME``. One listing checks it first: an unreachable or foreign URL is a
    one-line :class:`CatalogError` and nothing is stored. *token* is kept in ``AIR_UC_TOKEN`` of
    this process (its children inherit it), never on disk."""
    if embedded == bool(url):
        raise CatalogError("give a catalog URL (http://host:8080) or embedded=True, not both or neither")
    if embedded:
        url = ensure_server().url
    conn = Connection(str(url).rstrip("/"), embedded, s3_endpoint)
    CatalogClient(conn.url, token=token or os.environ.get("AIR_UC_TOKEN") or None).list_catalogs()
    if token:
        os.environ["AIR_UC_TOKEN"] = token
    _file().parent.mkdir(parents=True, exist_ok=True)
    write_atomic(_file(), json.dumps({"url": conn.url, "embedded": embedded, "s3_endpoint": s3_endpoint}))
    forget()
    return conn


def disconnect() -> bool:
    """Stop resolving through the catalog (``uc_url``, when set, still applies); True if one was connected."""
    forget()
    try:
        _file().unlink()
    except FileNotFoundError:
        return False
    return True


def forget() -> None:
    """Drop the cached answers (a test, a new connection)."""
    with _lock:
        _answers.clear()


def _info(conn: Connection, doc: dict[str, Any]) -> tuple[VolumeInfo, float | None]:
    """The volume's location and, for ``s3://``, the keys the catalog vends (write access: a copy may
    land there) with their expiry (epoch ms; None: static keys)."""
    vid, location = doc["full_name"], str(doc["storage_location"]).rstrip("/")
    if not location.startswith("s3://"):
        return VolumeInfo(vid, KIND, location, None, {}), None
    vended = conn.client().volume_credentials(doc["volume_id"], "WRITE_VOLUME")
    creds = vended.get("aws_temp_credentials") or {}
    options: dict[str, Any] = {"key": creds.get("access_key_id"), "secret": creds.get("secret_access_key")}
    if creds.get("session_token") not in (None, "", STATIC_KEYS_TOKEN):
        options["token"] = creds["session_token"]
    if conn.s3_endpoint:
        options["endpoint_url"] = conn.s3_endpoint
    return VolumeInfo(vid, KIND, location, conn.s3_endpoint, options), vended.get("expiration_time")


def volume_info(vp: VolumePath) -> VolumeInfo | None:
    """Where the connected catalog keeps *vp*'s volume, or None when no catalog is connected or it has
    no such volume (the volume then resolves as without a catalog)."""
    conn = connection()
    if conn is None:
        return None
    key = (conn.url, vp.volume_id)
    now = time.time()
    with _lock:
        hit = _answers.get(key)
    if hit is not None and hit[0] > now:
        return hit[1]
    try:
        doc = conn.client().get_volume(vp.catalog, vp.schema, vp.volume)
    except CatalogNotFoundError:
        info, until = None, now + _TTL
    else:
        info, expires_ms = _info(conn, doc)
        until = now + (_STATIC_KEYS_TTL if info.options else _TTL)
        if expires_ms:  # vended keys are asked for again _RENEW_BEFORE seconds before they expire
            until = min(until, expires_ms / 1000 - _RENEW_BEFORE)
    with _lock:
        _answers[key] = (until, info)
    return info


def volumes() -> list[VolumeInfo]:
    """Every volume of the connected catalog (their locations; no keys asked for), or []."""
    conn = connection()
    if conn is None:
        return []
    client = conn.client()
    found = []
    for cat in client.list_catalogs():
        for sch in client.list_schemas(cat["name"]):
            for vol in client.list_volumes(cat["name"], sch["name"]):
                found.append(VolumeInfo(vol["full_name"], KIND, str(vol.get("storage_location") or "").rstrip("/")))
    return found


def scan(notes: list[str]) -> list[VolumeInfo]:
    """:func:`volumes`, or ``[]`` with the catalog's one-line error added to *notes* when it fails: a
    listing of every volume (the overview, the sidebar) still shows the others."""
    try:
        return volumes()
    except CatalogError as exc:
        notes.append(f"Unity Catalog: {exc}")
        return []
