"""The embedded server's supervisor: a small detached process that owns the JVM and stops it when idle.

``python -m air_magics.tables.supervisor STORE PORT STARTER`` (started by
:func:`air_magics.tables.server.ensure_server` in its own session, so no client's exit or terminal
signal reaches it) starts the Spark Connect JVM, records it in ``STORE/server.json`` once its port
answers, then watches it:

* the JVM exits (crash, :func:`~air_magics.tables.server.stop_server`): remove the record, exit;
* this process is told to stop (SIGTERM/SIGINT/SIGHUP): stop the JVM, remove the record, exit;
* nobody used the server for ``AIR_SPARK_IDLE_TIMEOUT`` seconds (no running operation in any live
  client's lease, no lease rewritten, the JVM itself not busy): stop it;
* no client process is alive (every lease names a process that has exited: the notebook kernel was
  shut down, the script ended) and none was for ``AIR_SPARK_NO_CLIENT_TIMEOUT`` seconds, the JVM not
  busy: stop it. A closed notebook thus frees the JVM's memory within minutes, not half an hour.

The idle stop holds the server lock, removes the record, then looks at the leases again; a client
that recorded a use in between gets the record back. Clients record a use before they read the
record, so none can be left holding the address of a server that is being stopped.
If this process is killed outright, the JVM gets SIGTERM from the kernel (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import activity
from .server import (
    driver_memory_mb,
    idle_timeout,
    no_client_timeout,
    port_open,
    remove_record,
    server_command,
    terminate,
    write_record,
)

_log = logging.getLogger(__name__)
_BUSY_CPU = 0.2  # JVM CPU seconds per wall second that count as use (a query run outside air_magics' API)
_STOP = False


def _die_with_parent() -> None:
    """In the JVM's child before exec: SIGTERM it when this supervisor dies, however it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _on_signal(signum: int, frame: object) -> None:
    global _STOP
    _STOP = True


def _cpu_seconds(pid: int) -> float:
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system + t.children_user + t.children_system
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0


def _idle_stop(store: Path, jvm: subprocess.Popen, rec: dict, seen_use: float) -> bool:
    """Stop the JVM if still idle, under the server lock; False (and the record kept) if a client came."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(store / "server.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:  # a client is starting or checking the server: not idle
        return False
    try:
        before = activity.scan(store)
        if before.busy or before.last_use > seen_use:
            return False
        remove_record(store, jvm.pid)
        after = activity.scan(store)
        if after.busy or after.last_use != before.last_use:
            write_record(store, rec)
            return False
        terminate(jvm.pid)
        return True
    finally:
        lock.release()


def run(store: Path, port: int, starter: int) -> int:
    """Start the JVM for *store* on *port*, record it, watch it until it exits or goes idle; the exit code."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    idle, no_client, heap = idle_timeout(), no_client_timeout(), driver_memory_mb()
    jvm = subprocess.Popen(
        server_command(port, store, heap),
        stdin=subprocess.DEVNULL,
        cwd=store,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    _log.info(
        "started JVM %d on port %d, heap %d MiB, idle timeout %g s, no-client timeout %g s",
        jvm.pid,
        port,
        heap,
        idle,
        no_client,
    )
    while not port_open(port):
        if jvm.poll() is not None:
            _log.error("JVM exited with code %s while starting", jvm.returncode)
            return 1
        if _STOP:
            terminate(jvm.pid)
            return 1
        time.sleep(0.25)
    started = time.time()
    rec = {
        "pid": jvm.pid,
        "port": port,
        "supervisor": os.getpid(),
        "starter": starter,
        "store": str(store),
        "started": started,
        "heap_mb": heap,
        "idle_timeout": idle,
        "no_client_timeout": no_client,
    }
    write_record(store, rec)
    last_use, cpu, tick = started, _cpu_seconds(jvm.pid), time.monotonic()
    last_client = started  # the last time a live client process was seen
    poll = min(5.0, max(0.5, min(idle, no_client) / 4))
    while True:
        time.sleep(poll)
        if jvm.poll() is not None:
            remove_record(store, jvm.pid)
            _log.info("JVM exited with code %s", jvm.returncode)
            return 0
        if _STOP:
            terminate(jvm.pid)
            remove_record(store, jvm.pid)
            _log.info("stopped on request")
            return 0
        now, now_cpu, now_tick = time.time(), _cpu_seconds(jvm.pid), time.monotonic()
        act = activity.scan(store, prune=True)
        if act.busy or (now_cpu - cpu) / max(now_tick - tick, 1e-3) > _BUSY_CPU:
            last_use = now
        cpu, tick = now_cpu, now_tick
        last_use = max(last_use, act.last_use)
        if act.clients:
            last_client = now
        unused = now - last_use
        orphaned = now - max(last_client, last_use)
        if act.clients == 0 and orphaned >= no_client:
            why = f"stopped {orphaned:.0f} s after the last client process exited"
        elif unused >= idle:
            why = f"stopped after {unused:.0f} s unused"
        else:
            continue
        if _idle_stop(store, jvm, rec, act.last_use):
            remove_record(store, jvm.pid)
            _log.info("%s", why)
            return 0


if __name__ == "__main__":
    # stdout is the store's server.log (see server._start)
    logging.basicConfig(
        stream=sys.stdout,
        level=logging.INFO,
        datefmt="%H:%M:%S",
        format="[air supervisor %(process)d %(asctime)s] %(message)s",
    )
    sys.exit(run(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
