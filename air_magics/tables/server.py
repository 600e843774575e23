"""The embedded Spark Connect server: started once on demand, shared, persistent, stopped at exit.

One JVM per store (Derby allows one), bound to 127.0.0.1 on a free port, Hive tables as Parquet
under ``$AIR_HOME/spark/warehouse``, metastore, logs and temp dirs under ``$AIR_HOME/spark``. Its
pid and port are recorded in ``server.json``; any process reuses a live one. The process that
started it stops it at exit (so a later process starts a fresh one on the same store: tables
persist across restarts).
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..errors import TablesError

__all__ = ["EmbeddedServer", "ensure_server", "stop_server", "store_dir"]

_START_TIMEOUT = 180.0


def store_dir() -> Path:
    return config.spark_dir()


@dataclass(frozen=True)
class EmbeddedServer:
    pid: int
    port: int

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return True


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _record() -> Path:
    return store_dir() / "server.json"


def _running() -> EmbeddedServer | None:
    try:
        d = json.loads(_record().read_text())
        srv = EmbeddedServer(int(d["pid"]), int(d["port"]))
    except (OSError, ValueError, KeyError):
        return None
    return srv if _alive(srv.pid) and _port_open(srv.port) else None


def _command(port: int, store: Path) -> list[str]:
    import pyspark

    home = Path(pyspark.__file__).parent
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
        "spark.driver.memory": os.environ.get("AIR_SPARK_DRIVER_MEMORY", "2g"),
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


def ensure_server() -> EmbeddedServer:
    """The running embedded server, starting one if needed (seconds to a minute on 2 cores)."""
    srv = _running()
    if srv is not None:
        return srv
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise TablesError("Java (17) is needed for the embedded Spark server: install it (apt-get install "
                          "openjdk-17-jre-headless), or use a remote server with --remote sc://host:15002 / SPARK_REMOTE")
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise TablesError("pyspark is not installed: pip install 'air_magics[tables]'") from None
    from filelock import FileLock

    store = store_dir()
    (store / "tmp").mkdir(parents=True, exist_ok=True)
    with FileLock(str(store / "server.lock")):
        srv = _running()
        if srv is not None:
            return srv
        port = _free_port()
        log = store / "server.log"
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(store / "logs"))
        env.pop("SPARK_REMOTE", None)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)
        with open(log, "ab") as out:
            proc = subprocess.Popen(_command(port, store), stdout=out, stderr=subprocess.STDOUT, env=env,
                                    cwd=store, start_new_session=True)
        deadline = time.monotonic() + _START_TIMEOUT
        while not _port_open(port):
            if proc.poll() is not None:
                raise TablesError(f"the embedded Spark server exited with code {proc.returncode} while starting; "
                                  f"log {log}:\n{_log_tail(log)}")
            if time.monotonic() > deadline:
                _terminate(proc.pid)
                raise TablesError(f"the embedded Spark server did not start within {_START_TIMEOUT:.0f} s; see {log}")
            time.sleep(0.25)
        srv = EmbeddedServer(proc.pid, port)
        tmp = _record().with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": srv.pid, "port": srv.port, "started": time.time()}))
        os.replace(tmp, _record())
        atexit.register(stop_server, srv)
        return srv


def _terminate(pid: int, timeout: float = 20.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    if _alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_server(srv: EmbeddedServer | None = None) -> bool:
    """Stop the embedded server (this process's, or the one recorded); True if one was running."""
    srv = srv or _running()
    if srv is None or not _alive(srv.pid):
        return False
    _terminate(srv.pid)
    try:
        if json.loads(_record().read_text()).get("pid") == srv.pid:
            _record().unlink()
    except (OSError, ValueError):
        pass
    return True
