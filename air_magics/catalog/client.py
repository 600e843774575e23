"""A small client of the Unity Catalog REST API (``/api/2.1/unity-catalog``), on the stdlib.

Why not the generated ``unitycatalog-client`` package: it pulls pydantic, aiohttp and a code
generator's runtime into ``import air_magics`` for a dozen calls. This one speaks JSON over
``http.client``, answers the server's own JSON documents (``dict``, keys as the API names them:
``name``, ``full_name``, ``storage_location``, ``volume_id``...), and turns every failure into one
:class:`~air_magics.errors.CatalogError` line that names the value and the fix:

- UC's error document (its ``error_code``, else the status): not found (404) is
  :class:`CatalogNotFoundError`, already exists (409, or UC 0.6's 400) :class:`CatalogExistsError`,
  401/403 :class:`CatalogPermissionError`; nothing listening, a timeout (5 s by default):
  :class:`CatalogUnavailableError`;
- an answer that is not UC's (another API's 404 page, HTML, a proxy's 401): :class:`CatalogApiError`.
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from ..errors import (
    CatalogApiError,
    CatalogError,
    CatalogExistsError,
    CatalogNotFoundError,
    CatalogPermissionError,
    CatalogUnavailableError,
    VolumePathError,
)

__all__ = ["API_PATH", "CatalogClient"]

API_PATH = "/api/2.1/unity-catalog"
DEFAULT_TIMEOUT = 5.0
_PAGE = 1000
_NAME = re.compile(r"[A-Za-z0-9_-]+")

Doc = dict[str, Any]


class CatalogClient:
    """The catalogs, schemas, volumes and tables of one Unity Catalog server at *url*
    (``http://host:8080``), with an optional bearer *token* (kept in memory only)."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CatalogApiError(f"{url!r} is not a Unity Catalog URL; give one like http://host:8080")
        self.url = f"{parts.scheme}://{parts.netloc}{parts.path}"
        self._scheme, self._host, self._port = parts.scheme, parts.hostname, parts.port
        self._base = parts.path + API_PATH
        self._token = token
        self.timeout = timeout

    def __repr__(self) -> str:  # never the token
        return f"CatalogClient({self.url!r})"

    # -- the wire ---------------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        return kind(self._host, self._port, timeout=self.timeout)

    def request(self, method: str, path: str, *, body: Doc | None = None, query: dict[str, Any] | None = None) -> Doc:
        """One call: *method* on ``API_PATH + path``; the answer's JSON document (``{}`` when empty)."""
        target = self._base + path
        if query := {k: v for k, v in (query or {}).items() if v is not None}:
            target += "?" + urlencode(query)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        conn = self._connection()
        try:
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            status, raw, kind = resp.status, resp.read(), resp.getheader("Content-Type") or ""
        except TimeoutError:
            raise CatalogUnavailableError(
                f"Unity Catalog at {self.url} did not answer within {self.timeout:g} s; check that the server is up"
            ) from None
        except OSError as e:
            raise CatalogUnavailableError(
                f"cannot reach Unity Catalog at {self.url} ({e.strerror or e}); start the server or fix the URL"
            ) from None
        finally:
            conn.close()
        return self._answer(method, path, status, raw, kind)

    def _answer(self, method: str, path: str, status: int, raw: bytes, kind: str) -> Doc:
        doc: Any = None
        if "json" in kind and raw:
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = None
        if 200 <= status < 300:
            if method == "DELETE":  # UC answers a delete with a plain "200 OK"
                return doc if isinstance(doc, dict) else {}
            if raw and not isinstance(doc, dict):
                raise self._foreign(status, kind)
            return doc or {}
        if not isinstance(doc, dict) or "error_code" not in doc:
            raise self._foreign(status, kind)
        message = str(doc.get("message") or doc["error_code"]).splitlines()[0][:300]
        code = str(doc["error_code"])
        if status == 404 or code.endswith("NOT_FOUND"):
            raise CatalogNotFoundError(f"{message}; check the name (list what exists with the parent's listing)")
        if status == 409 or code.endswith("ALREADY_EXISTS"):
            raise CatalogExistsError(f"{message}; use the existing one or pick another name")
        if status in (401, 403) or code in ("PERMISSION_DENIED", "UNAUTHENTICATED"):
            raise CatalogPermissionError(
                f"Unity Catalog at {self.url} refused {method} {path}: {message}; give a token with access "
                "(AIR_UC_TOKEN or --token)"
            )
        raise CatalogError(f"Unity Catalog at {self.url}: {method} {path} failed ({status}): {message}")

    def _foreign(self, status: int, kind: str) -> CatalogApiError:
        return CatalogApiError(
            f"{self.url} answered {status} ({kind or 'no content type'}) but not as a Unity Catalog server; "
            f"give the URL of one (it serves {API_PATH})"
        )

    def _pages(self, path: str, key: str, query: dict[str, Any]) -> list[Doc]:
        items: list[Doc] = []
        token = None
        while True:
            doc = self.request("GET", path, query={**query, "max_results": _PAGE, "page_token": token})
            items.extend(doc.get(key) or ())
            token = doc.get("next_page_token")
            if not token:
                return items

    # -- catalogs, schemas ------------------------------------------------------------------------

    def list_catalogs(self) -> list[Doc]:
        """Every catalog."""
        return self._pages("/catalogs", "catalogs", {})

    def get_catalog(self, name: str) -> Doc:
        return self.request("GET", f"/catalogs/{_seg(name)}")

    def create_catalog(self, name: str, *, comment: str | None = None, storage_root: str | None = None) -> Doc:
        """A catalog; *storage_root* (``file:///...``, ``s3://...``) is where its managed volumes go."""
        _seg(name)
        return self.request("POST", "/catalogs", body=_drop_none(name=name, comment=comment, storage_root=storage_root))

    def delete_catalog(self, name: str, *, force: bool = False) -> None:
        """Delete *name*; ``force`` also deletes its schemas and what they hold."""
        self.request("DELETE", f"/catalogs/{_seg(name)}", query={"force": "true"} if force else None)

    def list_schemas(self, catalog: str) -> list[Doc]:
        return self._pages("/schemas", "schemas", {"catalog_name": catalog})

    def get_schema(self, catalog: str, schema: str) -> Doc:
        return self.request("GET", f"/schemas/{_seg(catalog, schema)}")

    def create_schema(self, catalog: str, schema: str, *, comment: str | None = None) -> Doc:
        _seg(catalog, schema)
        return self.request("POST", "/schemas", body=_drop_none(name=schema, catalog_name=catalog, comment=comment))

    def delete_schema(self, catalog: str, schema: str, *, force: bool = False) -> None:
        self.request("DELETE", f"/schemas/{_seg(catalog, schema)}", query={"force": "true"} if force else None)

    # -- volumes ----------------------------------------------------------------------------------

    def list_volumes(self, catalog: str, schema: str) -> list[Doc]:
        return self._pages("/volumes", "volumes", {"catalog_name": catalog, "schema_name": schema})

    def get_volume(self, catalog: str, schema: str, volume: str) -> Doc:
        """The volume's document (``storage_location``, ``volume_id``, ``volume_type``).

        UC 0.6 answers a missing volume with a 500 (a null dereference); that is told apart from a
        real failure by listing the schema, so a missing volume is :class:`CatalogNotFoundError`."""
        try:
            return self.request("GET", f"/volumes/{_seg(catalog, schema, volume)}")
        except CatalogError as e:
            if type(e) is not CatalogError:
                raise
            if any(v.get("name") == volume for v in self.list_volumes(catalog, schema)):
                raise
            raise CatalogNotFoundError(
                f"volume {catalog}.{schema}.{volume} does not exist; check the name (list_volumes shows what exists)"
            ) from None

    def create_volume(
        self, catalog: str, schema: str, volume: str, *, storage_location: str | None = None, comment: str | None = None
    ) -> Doc:
        """An EXTERNAL volume on *storage_location* (``file:///...``, ``s3://bucket/prefix``), else a
        MANAGED one (the server needs a managed storage root for that)."""
        _seg(catalog, schema, volume)
        body = _drop_none(
            name=volume,
            catalog_name=catalog,
            schema_name=schema,
            volume_type="EXTERNAL" if storage_location else "MANAGED",
            storage_location=storage_location,
            comment=comment,
        )
        return self.request("POST", "/volumes", body=body)

    def delete_volume(self, catalog: str, schema: str, volume: str) -> None:
        self.request("DELETE", f"/volumes/{_seg(catalog, schema, volume)}")

    # -- tables -----------------------------------------------------------------------------------

    def list_tables(self, catalog: str, schema: str) -> list[Doc]:
        return self._pages("/tables", "tables", {"catalog_name": catalog, "schema_name": schema})

    def get_table(self, catalog: str, schema: str, table: str) -> Doc:
        return self.request("GET", f"/tables/{_seg(catalog, schema, table)}")

    def create_table(
        self,
        catalog: str,
        schema: str,
        table: str,
        *,
        storage_location: str,
        columns: list[Doc],
        data_source_format: str = "DELTA",
    ) -> Doc:
        """An EXTERNAL table over the files at *storage_location*; *columns* as the API spells them
        (``name``, ``type_name``, ``type_text``, ``type_json``, ``position``, ``nullable``)."""
        body = {
            "name": table,
            "catalog_name": catalog,
            "schema_name": schema,
            "table_type": "EXTERNAL",
            "data_source_format": data_source_format,
            "storage_location": storage_location,
            "columns": columns,
        }
        return self.request("POST", "/tables", body=body)

    def delete_table(self, catalog: str, schema: str, table: str) -> None:
        self.request("DELETE", f"/tables/{_seg(catalog, schema, table)}")

    # -- temporary credentials ----------------------------------------------------------------------

    def volume_credentials(self, volume_id: str, operation: str = "READ_VOLUME") -> Doc:
        """Short-lived storage credentials for a volume (``aws_temp_credentials``, ``expiration_time``
        in ms); *operation* ``READ_VOLUME`` or ``WRITE_VOLUME``."""
        return self.request(
            "POST", "/temporary-volume-credentials", body={"volume_id": volume_id, "operation": operation}
        )

    def table_credentials(self, table_id: str, operation: str = "READ") -> Doc:
        """Short-lived storage credentials for a table; *operation* ``READ`` or ``READ_WRITE``."""
        return self.request("POST", "/temporary-table-credentials", body={"table_id": table_id, "operation": operation})


def _seg(*names: str) -> str:
    """A dotted full name as one path segment; names are the volume path's (letters, digits, ``_``,
    ``-``), so no name can leave its segment or another call's."""
    for name in names:
        if not _NAME.fullmatch(name):
            raise VolumePathError(
                f"{name!r} is not a catalog, schema, volume or table name; use letters, digits, _ and - (e.g. main)"
            )
    return quote(".".join(names), safe="")


def _drop_none(**fields: Any) -> Doc:
    return {k: v for k, v in fields.items() if v is not None}
