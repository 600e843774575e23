"""Tornado handlers of ``<base_url>/air/api/``: thin HTTP wrappers around :mod:`.queries`.

* every method is ``@tornado.web.authenticated`` (403 without a token or login cookie) and
  ``@authorized`` (the server's authorizer decides);
* state-changing calls (``DELETE /air/api/cache``) are XSRF-checked by Jupyter's handler base
  unless token-authenticated;
* blocking work runs on thread pools, one per kind, so a slow mount never stalls the server and
  the status endpoints (small local JSON files) never queue behind folder listings or checkpoint
  folders on that mount;
* bad input is a JSON ``{"message": ...}`` with 400 (invalid or escaping path, bad paging) or 404
  (missing volume or path); anything unexpected is a 500 with a message, logged, never a crash.
  Messages name volume paths only: host paths (where a link points, where a volume lives) are
  cut out (:mod:`.redact`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
from collections.abc import Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from ..errors import AirError
from ..io.pools import ProcessPool, threads
from . import queries
from .redact import redact

__all__ = ["setup_handlers", "API_PREFIX"]

API_PREFIX = "air/api"
# "volumes": listings on possibly slow mounts; "checkpoints": checkpoint folders, on volumes too;
# "status": the local status documents and the local cache, never stuck behind either of them.
_POOLS = {
    kind: ProcessPool(n, f"air-api-{kind}")  # made at its first request
    for kind, n in (
        ("volumes", threads("local-io")),
        ("checkpoints", max(1, threads("local-io") // 2)),
        ("status", threads("local-io")),
    )
}


def _status_of(exc: BaseException) -> int:
    if isinstance(exc, FileNotFoundError):  # VolumeNotFoundError too
        return 404
    if isinstance(exc, (AirError, ValueError)):
        return 400
    if isinstance(exc, PermissionError):
        return 403
    return 500


def _finite(doc: Any) -> Any:
    """JSON has no NaN/Infinity (a status document may hold them, e.g. an unknown ETA): use null."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: _finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_finite(v) for v in doc]
    return doc


class _Base(APIHandler):
    auth_resource = "air"
    _track_activity = False  # the sidebar polls: that is not user activity (idle culling still works)

    async def call(self, pool: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run *fn* on pool *pool* and answer its result as JSON, or its error as a JSON message."""
        loop = asyncio.get_running_loop()
        try:
            doc = await loop.run_in_executor(_POOLS[pool].get(), functools.partial(fn, *args, **kwargs))
            body = json.dumps(_finite(doc), default=str, allow_nan=False)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an answer, never a crash
            self.fail(_status_of(exc), exc)
            return
        self.finish(body)

    def fail(self, status: int, exc: BaseException | str) -> None:
        message = (
            exc if isinstance(exc, str) else (str(exc) if isinstance(exc, AirError) else f"{type(exc).__name__}: {exc}")
        )
        if status >= 500:
            self.log.error(
                "air_magics API %s %s failed",
                self.request.method,
                self.request.uri,
                exc_info=exc if isinstance(exc, BaseException) else None,
            )
        else:
            self.log.info("air_magics API %s %s: %s", self.request.method, self.request.uri, message)
        self.set_status(status)
        self.finish(json.dumps({"message": self.redact(message), "reason": None}))

    def redact(self, message: str) -> str:
        """*message* without host paths, except those the client sent itself."""
        sent = [v.decode("utf-8", "replace") for vs in self.request.query_arguments.values() for v in vs]
        return redact(message, keep=sent)

    def int_arg(self, name: str, default: int, lo: int, hi: int) -> int:
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise _BadArg(f"query argument {name}={raw!r} is not an integer") from None
        if not lo <= value <= hi:
            raise _BadArg(f"query argument {name}={value} must be between {lo} and {hi}")
        return value


class _BadArg(ValueError):
    pass


class IndexHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        from .._version import __version__

        self.finish(
            json.dumps(
                {
                    "version": __version__,
                    "endpoints": {
                        "volumes": "GET volumes; GET volumes?path=/Volumes/c/s/v/dir&offset=0&limit=200",
                        "cache": "GET cache; DELETE cache (clear this server's cache; files used in the last 30 s are kept)",
                        "jobs": "GET jobs",
                        "checkpoints": "GET checkpoints",
                        "training": "GET training (the latest run's training chart: spec and text)",
                    },
                }
            )
        )


class VolumesHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        path = self.get_query_argument("path", None, strip=False)
        if path is None:
            await self.call("volumes", queries.list_volumes)
            return
        try:
            offset = self.int_arg("offset", 0, 0, 2**62)
            limit = self.int_arg("limit", queries.PAGE_DEFAULT, 1, queries.PAGE_MAX)
        except _BadArg as exc:
            self.fail(400, str(exc))
            return
        await self.call("volumes", queries.list_folder, path, offset, limit)


class CacheHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self.call("status", queries.cache_summary)

    @web.authenticated
    @authorized
    async def delete(self) -> None:
        reset = self.get_query_argument("reset_stats", "0") in ("1", "true", "yes")
        await self.call("status", queries.clear_cache, reset_stats=reset)


class JobsHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        raw = self.get_query_argument("recent", None)
        try:
            recent = float(raw) if raw else queries.RECENT_JOBS
            if not math.isfinite(recent) or recent < 0:
                raise ValueError
        except ValueError:
            self.fail(400, f"query argument recent={raw!r} must be a number of seconds >= 0")
            return
        await self.call("status", queries.jobs, recent=recent)


class TrainingHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self.call("status", queries.training)


class CheckpointsHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        await self.call("checkpoints", queries.checkpoints)


def setup_handlers(web_app: Any) -> str:
    """Add the handlers to a Jupyter server's tornado application; returns the API's base URL."""
    base = url_path_join(web_app.settings["base_url"], API_PREFIX)
    web_app.add_handlers(
        ".*$",
        [
            (base + r"/?", IndexHandler),
            (url_path_join(base, "volumes") + r"/?", VolumesHandler),
            (url_path_join(base, "cache") + r"/?", CacheHandler),
            (url_path_join(base, "jobs") + r"/?", JobsHandler),
            (url_path_join(base, "checkpoints") + r"/?", CheckpointsHandler),
            (url_path_join(base, "training") + r"/?", TrainingHandler),
        ],
    )
    return base
