"""The embedded Spark Connect server: started once on demand, shared by every process, stopped when idle.

One JVM per store (Derby allows one), bound to 127.0.0.1 on a free port, Hive tables as Parquet
under ``$AIR_SPARK_DIR/warehouse`` (default ``$AIR_HOME/spark``), metastore, logs and temp dirs
beside it. The server belongs to no client: :func:`ensure_server` starts a detached supervisor
(:mod:`air_magics.tables.supervisor`, its own session) which runs the JVM, records it in
``server.json`` (pid, port, supervisor, store) and stops it ``AIR_SPARK_NO_CLIENT_TIMEOUT`` seconds
(default 300) after the last process that used it has exited, or after ``AIR_SPARK_IDLE_TIMEOUT``
seconds (default 1800) without use (:mod:`air_magics.tables.activity`). So a process that exits never
stops a query another process is running, and an unused server does not live forever: the JVM holds
about 1 GB. :func:`stop_server` (``%air_table --stop``) stops it at once. Starts happen under a file
lock: concurrent starters end up with one server. A first start takes 20-35 s on an idle 2-core
machine, about 100 s on a busy one (the whole wait: JVM, the caller's session, the Hive metastore's
first query; :data:`.starting.FIRST_START`); while it runs the
caller's listeners get :class:`~air_magics.events.ServerEvent`s (:mod:`.starting`).

The driver heap is a quarter of the machine's memory (or its cgroup limit), between 1 and 8 GiB;
``AIR_SPARK_DRIVER_MEMORY`` (``4g``, ``6144m``) overrides it.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from ..errors import SettingError, TablesError
from ..io.atomic import write_json_atomic
from ..io.process import pid_alive
from . import activity
from .starting import StartProgress

__all__ = [
    "EmbeddedServer",
    "ensure_server",
    "stop_server",
    "running_server",
    "server_command",
    "port_open",
    "free_port",
    "terminate",
    "read_record",
    "write_record",
    "remove_record",
    "record_path",
    "store_dir",
    "driver_memory_mb",
    "idle_timeout",
    "no_client_timeout",
]

_START_TIMEOUT = 180.0
_MIB = 1 << 20
_SUPERVISORS: list[subprocess.Popen] = []  # kept so a finished supervisor is reaped, not warned about


def store_dir() -> Path:
    return settings.spark_dir()


@dataclass(frozen=True)
class EmbeddedServer:
    pid: int
    port: int

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def idle_timeout() -> float:
    """``spark_idle_timeout`` (``$AIR_SPARK_IDLE_TIMEOUT``): seconds without use after which the server stops (default 1800)."""
    try:
        return settings.spark_idle_timeout()
    except SettingError as exc:
        raise TablesError(str(exc)) from None


def no_client_timeout() -> float:
    """``spark_no_client_timeout`` (``$AIR_SPARK_NO_CLIENT_TIMEOUT``): seconds the server outlives the
    last process that used it (default 300), so a closed notebook does not leave ~1 GB behind for long."""
    try:
        return settings.spark_no_client_timeout()
    except SettingError as exc:
        raise TablesError(str(exc)) from None


def _machine_memory() -> int:
    """Physical memory, or the cgroup's limit when that is lower (containers)."""
    import psutil

    total = psutil.virtual_memory().total
    for f in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(f).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def driver_memory_mb() -> int:
    """The driver heap in MiB: ``spark_driver_memory`` (``$AIR_SPARK_DRIVER_MEMORY``), else 1/4 of the machine, 1-8 GiB."""
    try:
        mb = settings.spark_driver_memory_mb()
    except SettingError as exc:
        raise TablesError(str(exc)) from None
    if mb is not None:
        return mb
    return int(min(max(_machine_memory() // 4, 1024 * _MIB), 8192 * _MIB) // _MIB)


def port_open(port: int) -> bool:
    """Whether something listens on 127.0.0.1:*port* (a server that has started answers here)."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    """A port on 127.0.0.1 free now, for a new server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record_path(store: Path) -> Path:
    """The file recording *store*'s server (pid, port, supervisor, timeouts)."""
    return store / "server.json"


def read_record(store: Path) -> dict | None:
    """The recorded server of *store* (pid, port, supervisor, ...), alive or not; ``None`` if none."""
    try:
        d = json.loads(record_path(store).read_text())
        int(d["pid"]), int(d["port"])
        return d
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_record(store: Path, rec: dict) -> None:
    """Record *store*'s server (atomic: a reader never sees half a record)."""
    write_json_atomic(record_path(store), rec)


def remove_record(store: Path, pid: int) -> None:
    """Remove the record if it still names the JVM *pid* (never a newer server's record)."""
    rec = read_record(store)
    if rec is not None and int(rec["pid"]) == pid:
        try:
            record_path(store).unlink()
        except FileNotFoundError:
            pass


def running_server(store: Path | None = None) -> EmbeddedServer | None:
    """The embedded server of *store* (default: the ``spark_dir`` setting) if it is alive and listening."""
    rec = read_record(store or store_dir())
    if rec is None:
        return None
    srv = EmbeddedServer(int(rec["pid"]), int(rec["port"]))
    return srv if pid_alive(srv.pid) and port_open(srv.port) else None


def server_command(port: int, store: Path, heap_mb: int | None = None) -> list[str]:
    """The ``spark-submit`` command line of a Spark Connect server on *port* with its Hive store in *store*."""
    import pyspark

    home = Path(pyspark.__file__).parent
    heap_mb = heap_mb or driver_memory_mb()
    confs = {
        "spark.master": "local[*]",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(store / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={store / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={store}",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.local.dir": str(store / "tmp"),
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": f"{heap_mb}m",
        # a result too large to buffer fails that query instead of running the shared JVM out of heap
        "spark.driver.maxResultSize": f"{max(heap_mb // 3, 256)}m",
    }
    cmd = [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    for k, v in confs.items():
        cmd += ["--conf", f"{k}={v}"]
    return cmd + ["spark-internal"]


def _log_tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def _check_requirements() -> None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise TablesError(
            "Java (17) is needed for the embedded Spark server: install it (apt-get install "
            "openjdk-17-jre-headless), or use a remote server with --remote sc://host:15002 / SPARK_REMOTE"
        )
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise TablesError("pyspark is not installed: pip install 'air_magics[tables]'") from None


def ensure_server(
    *,
    since: float | None = None,
    ready: Callable[[EmbeddedServer, Callable[[Callable[[], None]], None]], None] | None = None,
) -> EmbeddedServer:
    """The running embedded server, starting one if needed (:data:`~.starting.FIRST_START`).

    While it waits, :class:`~air_magics.events.ServerEvent`s on the channel say so, with the
    seconds waited since *since* (``time.monotonic()`` when the caller began waiting; default: now).
    When this call had to wait for a start, *ready(server, ticking)* runs on this thread before the
    start is reported done (the caller's session is made and its first catalog query answered
    there), so the reported seconds are the whole wait; ``ticking(fn)`` runs a slow step on a helper
    thread while this one keeps the seconds counting. The use is recorded before the server is looked up, so an idle stop
    racing with this call either sees the use (and keeps the server) or has already removed the
    record (and this call waits for the lock and starts a fresh server)."""
    store = store_dir()
    store.mkdir(parents=True, exist_ok=True)
    activity.touch(store)
    srv = running_server(store)
    if srv is not None:
        return srv
    _check_requirements()
    idle, no_client, heap = idle_timeout(), no_client_timeout(), driver_memory_mb()
    from filelock import FileLock, Timeout

    (store / "tmp").mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(store / "server.lock"))
    progress: StartProgress | None = None
    deadline = time.monotonic() + _START_TIMEOUT + 60
    try:
        while True:
            try:
                lock.acquire(timeout=1.0)
                break
            except Timeout:  # another process is starting it: say so while waiting
                if progress is None:
                    progress = StartProgress(store, other=True, since=since)
                progress.tick()
                if time.monotonic() > deadline:
                    raise TablesError(
                        f"another process has held {store / 'server.lock'} for over {_START_TIMEOUT + 60:.0f} s "
                        f"while starting the embedded Spark server; see {store / 'server.log'}, or stop that "
                        f"process"
                    ) from None
        try:
            srv = running_server(store)
            if srv is None:
                stale = read_record(store)
                if stale is not None:  # recorded but not answering: a hung JVM still holds the Derby store
                    terminate(int(stale["pid"]))
                    remove_record(store, int(stale["pid"]))
                if progress is None:
                    progress = StartProgress(store, since=since)
                progress.starting()
                srv = _start(store, idle, no_client, heap, progress)
        finally:
            lock.release()
        if progress is not None and ready is not None:
            ready(srv, functools.partial(_ticking, progress))
    except TablesError as exc:
        if progress is not None:
            progress.failed(str(exc).splitlines()[0])
        raise
    except Exception as exc:  # the caller's ready() failed: the start is still not usable
        if progress is not None:
            progress.failed(f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}")
        raise
    except BaseException:  # Ctrl-C: a detached start may still finish in the background
        if progress is not None:
            progress.failed("interrupted (a start already under way finishes in the background)", interrupted=True)
        raise
    if progress is not None:
        progress.done(srv.url, idle, no_client)
    return srv


def _ticking(progress: StartProgress, fn: Callable[[], None]) -> None:
    """Run *fn* on a helper thread while this one keeps the seconds counting (events are emitted
    from the calling thread, as everywhere); its error is raised here. Ctrl-C stops the wait."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:
            failure.append(exc)

    th = threading.Thread(target=target, name="air-spark-ready", daemon=True)
    th.start()
    while th.is_alive():
        th.join(0.25)
        progress.tick()
    if failure:
        raise failure[0]


def _start(store: Path, idle: float, no_client: float, heap_mb: int, progress: StartProgress) -> EmbeddedServer:
    log = store / "server.log"
    env = dict(
        os.environ,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(store / "logs"),
        AIR_SPARK_IDLE_TIMEOUT=str(idle),
        AIR_SPARK_NO_CLIENT_TIMEOUT=str(no_client),
        AIR_SPARK_DRIVER_MEMORY=f"{heap_mb}m",
    )
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    # Spark's Python workers (UDFs, e.g. the shards' Spark engine) run this interpreter, with this
    # venv's packages, not whatever python3 is first on PATH; unless the user chose one
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    # the supervisor imports this package from where this process did (a source checkout works too)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    cmd = [sys.executable, "-m", "air_magics.tables.supervisor", str(store), str(free_port()), str(os.getpid())]
    with open(log, "ab") as out:
        sup = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=store,
            start_new_session=True,
            close_fds=True,
        )
    _SUPERVISORS.append(sup)
    deadline = time.monotonic() + _START_TIMEOUT
    while True:
        rec = read_record(store)
        if rec is not None and rec.get("supervisor") == sup.pid:
            srv = running_server(store)
            if srv is not None:
                return srv
        if sup.poll() is not None:
            raise TablesError(
                f"the embedded Spark server exited with code {sup.returncode} while starting; "
                f"log {log}:\n{_log_tail(log)}"
            )
        if time.monotonic() > deadline:
            terminate(sup.pid)
            raise TablesError(f"the embedded Spark server did not start within {_START_TIMEOUT:.0f} s; see {log}")
        progress.tick()
        time.sleep(0.25)


def terminate(pid: int, timeout: float = 20.0) -> None:
    """SIGTERM the process group led by *pid*, SIGKILL it after *timeout* seconds."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    if pid_alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def stop_server(srv: EmbeddedServer | None = None) -> bool:
    """Stop the embedded server now, for every process using it; True if one was running.

    Frees its memory (the JVM holds about 1 GB) at once. Without it the server stops by itself
    ``AIR_SPARK_NO_CLIENT_TIMEOUT`` seconds after the last process that used it has exited, or after
    ``AIR_SPARK_IDLE_TIMEOUT`` seconds unused; the next table call starts a fresh one."""
    store = store_dir()
    rec = read_record(store)
    if srv is None:
        if rec is None:
            return False
        srv = EmbeddedServer(int(rec["pid"]), int(rec["port"]))
    if not pid_alive(srv.pid):
        remove_record(store, srv.pid)
        return False
    terminate(srv.pid)
    remove_record(store, srv.pid)
    sup = int(rec.get("supervisor", 0)) if rec is not None and int(rec["pid"]) == srv.pid else 0
    deadline = time.monotonic() + 10
    while sup and pid_alive(sup) and time.monotonic() < deadline:  # it notices the JVM is gone within a second
        time.sleep(0.1)
    return True
