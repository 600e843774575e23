"""Finding the Spark session: a ``spark`` already in the notebook, a remote URL, or the embedded server."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import AirError, TablesError
from . import activity
from .catalog import near_tables
from .interruptible import run_interruptible
from .server import EmbeddedServer, ensure_server, store_dir
from .spark_errors import first_line, one_line, quiet_pyspark_logs

__all__ = ["Session", "get_session", "guarded", "quiet_retries"]

_SESSIONS: dict[str, Any] = {}
_EMBEDDED: set[str] = set()  # URLs of embedded servers we connected to (one is current)
_LOCK = threading.Lock()
T = TypeVar("T")


@dataclass(frozen=True)
class Session:
    """A Spark (Connect) session and whether it is the embedded store (names are mapped there)."""

    spark: Any
    embedded: bool
    url: str | None = None
    store: Path | None = None  # the embedded server's store: operations there are recorded as its use


def _short_retries(spark: Any) -> None:
    """The default policy waits ~10 minutes on a dead server; report it within seconds instead."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    spark.client.set_retry_policies(
        [
            DefaultPolicy(
                max_retries=3,
                initial_backoff=200,
                max_backoff=1000,
                backoff_multiplier=2.0,
                jitter=100,
                max_server_retry_delay=2000,
            )
        ]
    )


def _connect(url: str) -> Any:
    with _LOCK:
        spark = _SESSIONS.get(url)
        if spark is not None and not getattr(spark.client, "is_closed", False):
            return spark
        from pyspark.sql import SparkSession

        with quiet_retries():
            spark = SparkSession.builder.remote(url).create()
        _short_retries(spark)
        _SESSIONS[url] = spark
        atexit.register(_close_at_exit, spark)  # runs before pyspark's own exit hook (registered earlier)
        return spark


def _close_at_exit(spark: Any) -> None:
    """Close a session we opened before pyspark's exit hook sends its clean-up RPC: against a server
    that has stopped (idle, or stopped by us) that RPC retries and prints ``[RETRIES_EXCEEDED]``."""
    try:
        spark.client.close()
    except Exception:
        pass


def get_session(remote: str | None = None, *, user_ns: dict[str, Any] | None = None) -> Session:
    """In order: ``remote`` (``sc://...``), a ``spark`` session in *user_ns*, ``SPARK_REMOTE``, the
    embedded local server (started on first use).

    A start of the embedded server is reported done only once this call's session has answered a
    catalog query: the seconds it reports are the whole wait, and the Hive metastore (opened lazily,
    on a server's first catalog query) is open before the caller's first query runs."""
    since = time.monotonic()
    if remote is None and user_ns is not None and _is_session(user_ns.get("spark")):
        spark = user_ns["spark"]
        embedded = any(spark is s for s in _SESSIONS.values()) and _embedded_url(spark)
        return Session(spark, embedded, store=store_dir() if embedded else None)
    url = remote or os.environ.get("SPARK_REMOTE")
    if url:
        if not url.startswith("sc://"):
            raise TablesError(f"remote {url!r} is not a Spark Connect URL: write sc://host:15002")
        return Session(_connect(url), False, url)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise TablesError("pyspark is not installed: pip install 'air_magics[tables]'") from None

    def ready(srv: EmbeddedServer, ticking: Callable[[Callable[[], None]], None]) -> None:
        _retire_old_embedded(srv.url)
        ticking(_import_client)  # seconds of imports on a small machine: the count goes on meanwhile
        spark = _connect(srv.url)  # on this thread: pyspark makes it this thread's active session
        ticking(lambda: _open_catalog(spark))

    srv = ensure_server(since=since, ready=ready)
    _retire_old_embedded(srv.url)
    return Session(_connect(srv.url), True, srv.url, store_dir())


def _import_client() -> None:
    from pyspark.sql import SparkSession  # noqa: F401
    from pyspark.sql.connect.session import SparkSession as _ConnectSession  # noqa: F401


def _open_catalog(spark: Any) -> None:
    """One catalog query, so a fresh server's Hive metastore is open (Derby, DataNucleus: 5-35 s on a
    small machine) before the start is reported ready; an error here is the first real call's to report."""
    try:
        with quiet_retries(), quiet_pyspark_logs():
            spark.sql("SHOW DATABASES").collect()
    except Exception:
        pass


def _retire_old_embedded(url: str) -> None:
    """The embedded server restarted on another port: stop our session to the old one. pyspark keeps
    its first session as the process's active one and consults it (``F.col`` asks its conf), so a
    dead one left there fails later calls on the new server with ``UNAVAILABLE``."""
    with _LOCK:
        old = [u for u in _EMBEDDED if u != url]
        _EMBEDDED.add(url)
        stale = [_SESSIONS.pop(u, None) for u in old]
        _EMBEDDED.difference_update(old)
    for spark in stale:
        if spark is None:
            continue
        try:
            spark.release_session_on_close = False  # its server is gone: no release call to retry
            spark.stop()  # closes the client and clears pyspark's default/active session if it was that one
        except Exception:
            pass


def _is_session(obj: Any) -> bool:
    return obj is not None and hasattr(obj, "table") and hasattr(obj, "sql") and hasattr(obj, "createDataFrame")


def _embedded_url(spark: Any) -> bool:
    from .server import running_server

    srv = running_server()
    return srv is not None and _SESSIONS.get(srv.url) is spark


@contextlib.contextmanager
def quiet_retries() -> Iterator[None]:
    """pyspark warns ``[RETRIES_EXCEEDED]`` before raising the error that :func:`guarded` turns into a
    one-line ``TablesError``; silence that warning for the Spark calls made here only, never the
    user's own warning filters."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]", category=UserWarning)
        yield


@contextlib.contextmanager
def _active(spark: Any) -> Iterator[None]:
    """*spark* is this thread's active pyspark session for the block, the previous one after.

    pyspark makes the first session it creates the active one and consults it from calls on any
    other session (``F.col`` asks its conf, ``localCheckpoint`` binds to it): after a failed
    ``--remote sc://wrong:15002`` that dead session failed every later client-side export on the
    embedded server with ``UNAVAILABLE``."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # pragma: no cover - classic pyspark only
        yield
        return
    if not isinstance(spark, ConnectSession):
        yield
        return
    holder = ConnectSession._active_session  # noqa: SLF001 - pyspark exposes the active Connect session holder only here
    before = getattr(holder, "session", None)
    holder.session = spark
    try:
        yield
    finally:
        holder.session = before


def _forget(spark: Any) -> None:
    """An interrupted call that did not return: its channel may be wedged, so the next call opens a
    new session (the old one is left to its thread, never closed under it)."""
    with _LOCK:
        for url in [u for u, sp in _SESSIONS.items() if sp is spark]:
            del _SESSIONS[url]


def _near(session: Session, name: str) -> list[str]:
    with _active(session.spark), quiet_retries(), quiet_pyspark_logs():
        return near_tables(session.spark, session.embedded, name)


def guarded(session: Session, what: str, fn: Callable[[], T]) -> T:
    """Run *fn* with *session* as the thread's active pyspark session, turning Spark and connection
    errors into one-line ``TablesError``s.

    On the main thread *fn* runs on a worker thread (:func:`run_interruptible`): a Ctrl-C then
    interrupts its Spark operations and never lands inside gRPC, where it could leave a lock of the
    session's channel held and every later call waiting.

    pyspark's own logging of the error (a JVM stack trace on stderr) is dropped. On the embedded
    server the run counts as a use of it (the idle stop waits for it to end)."""
    busy = activity.operation(session.store) if session.store is not None else contextlib.nullcontext()

    def call() -> T:
        with _active(session.spark), quiet_retries(), quiet_pyspark_logs():
            return fn()

    try:
        with busy:
            return run_interruptible(session.spark, call, on_stuck=lambda: _forget(session.spark))
    except AirError:
        raise
    except Exception as exc:
        full = str(exc)
        where = session.url or "the notebook's spark session"
        said = one_line(exc, near=lambda name: _near(session, name))
        if said is not None:
            raise TablesError(f"{what}: {said}") from None
        if "UNAVAILABLE" in full or "RETRIES_EXCEEDED" in full or "Connection refused" in full:
            raise TablesError(
                f"{what}: cannot reach the Spark Connect server at {where} ({first_line(exc)[:200]}); "
                f"start it, fix the URL, or unset SPARK_REMOTE to use the embedded server"
            ) from None
        raise TablesError(f"{what}: {type(exc).__name__}: {first_line(exc)[:500]}") from None
