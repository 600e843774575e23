"""The embedded Unity Catalog server: one JVM per state folder (``$AIR_HOME/uc`` by default), started
on first use on 127.0.0.1 with free ports and shared by every process of that ``AIR_HOME``.

Why a detached JVM under a lock: a notebook kernel, its DataLoader workers and a second notebook
all reach the same catalog, so the first caller starts it (``start_new_session``: no kernel's exit
or Ctrl-C ends it) and the others find it through ``server.json``; the lock makes concurrent first
callers start one server. ``stop()`` ends it. The server keeps its state (H2 database, logs) in the
folder: ``etc/conf`` (written at each start), ``etc/db``, ``etc/logs``, ``server.out``.

The upstream server answers on two ports: the public one (``--port P``, a URL transcoder) and the
API server behind it on ``P + 1``; both listen on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from ..errors import CatalogError, CatalogUnavailableError
from ..io.atomic import write_atomic
from ..io.locks import ProcessFileLock
from ..io.process import pid_alive
from .client import CatalogClient
from .maven import MAIN_CLASS, SOURCE_DIR, server_classpath

__all__ = ["STATIC_KEYS_TOKEN", "EmbeddedServer", "S3Bucket", "ensure_server", "running", "state_dir", "stop"]

START_TIMEOUT = 300.0  # seconds for the JVM to answer; 15-40 s on 2 busy cores
_LOCK_TIMEOUT = 2400.0  # another process may be resolving the classpath for the first time
_STOP_GRACE = 15.0
# UC vends an ``s3.*`` bucket's keys as they are (no STS) only when a session token is configured;
# this placeholder is that token, and clients leave it out of their requests (it is no real token)
STATIC_KEYS_TOKEN = "air-static-keys"


@dataclass(frozen=True)
class S3Bucket:
    """Static keys the server vends for one bucket (``s3.*`` of its ``server.properties``): what
    ``temporary-volume-credentials`` answers for volumes under ``s3://<bucket>``. With a
    *session_token* the server hands the keys back as they are (no STS)."""

    bucket: str
    access_key: str
    secret_key: str
    session_token: str = STATIC_KEYS_TOKEN
    region: str = "us-east-1"


@dataclass(frozen=True)
class EmbeddedServer:
    """A running embedded server: its ``url``, JVM ``pid``, public ``port``, ``state`` folder, and
    ``start_s``: the seconds its start took (classpath resolve included), 0.0 when it was running."""

    url: str
    pid: int
    port: int
    state: Path
    start_s: float

    def client(self, *, timeout: float = 5.0) -> CatalogClient:
        return CatalogClient(self.url, timeout=timeout)


def state_dir() -> Path:
    """``$AIR_HOME/uc``: the default server's folder."""
    return settings.air_home() / "uc"


def _record_path(state: Path) -> Path:
    return state / "server.json"


def _ours(pid: int) -> bool:
    """*pid* is alive and is a UC server JVM (not a process that reused the pid)."""
    if not pid_alive(pid):
        return False
    import psutil

    try:
        return MAIN_CLASS in psutil.Process(pid).cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _answers(url: str) -> bool:
    try:
        CatalogClient(url, timeout=2.0).request("GET", "/catalogs", query={"max_results": 1})
    except CatalogError:
        return False
    return True


def running(state: Path | None = None) -> EmbeddedServer | None:
    """The server of *state* (default :func:`state_dir`) when it runs and answers, else ``None``."""
    state = state or state_dir()
    try:
        doc = json.loads(_record_path(state).read_text())
    except (OSError, ValueError):
        return None
    if not _ours(int(doc.get("pid", 0))) or not _answers(doc["url"]):
        return None
    return EmbeddedServer(doc["url"], int(doc["pid"]), int(doc["port"]), state, 0.0)


def _free_port_pair() -> int:
    """A port P with P and P + 1 free on 127.0.0.1 (the transcoder and the API server)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise CatalogError("no two adjacent free ports on 127.0.0.1 for the Unity Catalog server; free some and retry")


def _properties(state: Path, buckets: tuple[S3Bucket, ...]) -> str:
    lines = [
        "server.env=dev",
        "server.authorization=disable",
        f"storage-root.tables=file://{state / 'managed'}",
    ]
    for i, b in enumerate(buckets):
        lines += [
            f"s3.bucketPath.{i}=s3://{b.bucket}",
            f"s3.region.{i}={b.region}",
            f"s3.awsRoleArn.{i}=",
            f"s3.accessKey.{i}={b.access_key}",
            f"s3.secretKey.{i}={b.secret_key}",
            f"s3.sessionToken.{i}={b.session_token}",
        ]
    return "\n".join(lines) + "\n"


def _write_conf(state: Path, buckets: tuple[S3Bucket, ...]) -> None:
    conf = state / "etc" / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for name in ("hibernate.properties", "server.log4j2.properties"):
        shutil.copyfile(SOURCE_DIR / "etc" / "conf" / name, conf / name)
    (state / "managed").mkdir(exist_ok=True)
    # the keys it vends live here as the server reads them: private to the user
    fd = os.open(conf / "server.properties", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(_properties(state, buckets))


def _tail(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no output"
    return (lines[-1] if lines else "no output")[:300]


def _launch(state: Path, buckets: tuple[S3Bucket, ...], timeout: float) -> EmbeddedServer:
    t0 = time.monotonic()
    classpath = server_classpath(state)
    _write_conf(state, buckets)
    port = _free_port_pair()
    out = state / "server.out"
    java = shutil.which("java")
    if java is None:
        raise CatalogError("cannot start the embedded Unity Catalog server: no `java` on PATH; install Java 17+")
    with open(out, "wb") as log:
        proc = subprocess.Popen(
            [java, "-cp", classpath.argument(), MAIN_CLASS, "--port", str(port)],
            cwd=state,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while not _answers(url):
        if proc.poll() is not None:
            raise CatalogError(
                f"the embedded Unity Catalog server exited ({proc.returncode}) while starting: {_tail(out)}; "
                f"see {out} and {state / 'etc' / 'logs' / 'server.log'}"
            )
        if time.monotonic() > deadline:
            _end(proc.pid)
            raise CatalogUnavailableError(
                f"the embedded Unity Catalog server did not answer within {timeout:g} s; see {out} and retry"
            )
        time.sleep(0.25)
    took = time.monotonic() - t0
    doc = {"pid": proc.pid, "port": port, "url": url, "started": time.time(), "start_s": took}
    doc["maven_s"] = classpath.resolved_s  # of start_s: the Maven build and resolve (0.0: cached classpath)
    write_atomic(_record_path(state), json.dumps(doc))
    return EmbeddedServer(url, proc.pid, port, state, took)


def ensure_server(
    state: Path | None = None, *, s3_buckets: tuple[S3Bucket, ...] = (), timeout: float = START_TIMEOUT
) -> EmbeddedServer:
    """The embedded server of *state* (default :func:`state_dir`), started if none runs: its classpath
    resolved on first use (:func:`~air_magics.catalog.maven.server_classpath`), its config written
    with *s3_buckets* (read at start: a running server keeps the buckets it started with). Raises
    :class:`~air_magics.errors.MavenError` when it cannot be built, :class:`CatalogError` when the JVM
    exits while starting, :class:`CatalogUnavailableError` when it does not answer in *timeout*."""
    state = (state or state_dir()).resolve()
    state.mkdir(parents=True, exist_ok=True)
    lock = ProcessFileLock(state / "server.lock")
    try:
        try:
            lock.acquire(_LOCK_TIMEOUT)
        except TimeoutError:
            raise CatalogUnavailableError(
                f"another process has been starting the Unity Catalog server in {state} for {_LOCK_TIMEOUT:g} s; "
                "stop it (air_magics.catalog.stop()) and retry"
            ) from None
        try:
            return running(state) or _launch(state, tuple(s3_buckets), timeout)
        finally:
            lock.release()
    finally:
        lock.close()


def _end(pid: int) -> None:
    """SIGTERM to the server's process group, SIGKILL after the grace period."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_GRACE
    while pid_alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # our own child: reap it, or it stays a zombie
        time.sleep(0.1)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def stop(state: Path | None = None) -> bool:
    """Stop the server of *state* (default :func:`state_dir`); True when one was running."""
    state = (state or state_dir()).resolve()
    if not state.is_dir():
        return False
    lock = ProcessFileLock(state / "server.lock")
    try:
        lock.acquire(_LOCK_TIMEOUT)
        try:
            try:
                doc = json.loads(_record_path(state).read_text())
            except (OSError, ValueError):
                return False
            pid = int(doc.get("pid", 0))
            was = _ours(pid)
            if was:
                _end(pid)
            _record_path(state).unlink(missing_ok=True)
            return was
        finally:
            lock.release()
    finally:
        lock.close()
