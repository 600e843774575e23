"""Unity Catalog: a REST client (:class:`CatalogClient`) and the embedded server (:func:`ensure_server`,
:func:`stop`), built with Maven on first use (:mod:`.maven`).

It sits below ``volumes/`` (which resolves ``/Volumes/c/s/v`` through a catalog) and imports only
``errors``, ``settings`` and ``io/``; nothing here starts a JVM until :func:`ensure_server` is called."""

from .client import API_PATH, CatalogClient
from .ucserver import STATIC_KEYS_TOKEN, EmbeddedServer, S3Bucket, ensure_server, running, state_dir, stop

__all__ = [
    "API_PATH",
    "STATIC_KEYS_TOKEN",
    "CatalogClient",
    "EmbeddedServer",
    "S3Bucket",
    "ensure_server",
    "running",
    "state_dir",
    "stop",
]
