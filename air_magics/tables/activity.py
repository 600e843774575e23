"""Who is using the embedded Spark server: one small lease file per client process.

The embedded server is shared by every process on the machine and outlives the one that started
it, so it cannot stop when a process exits; it stops when nobody has used it for a while (see
:mod:`air_magics.tables.supervisor`). Clients say they are using it here:

* ``clients/<pid>`` under the store holds ``{"pid", "created", "inflight"}``; it is rewritten
  (atomically, so its mtime is the last use) when the process looks the server up
  (:func:`touch`) and when an operation starts and ends (:func:`operation`);
* ``inflight > 0`` while an operation runs, so a query of any length keeps the server up;
* a file whose process is gone (or whose pid was reused: ``created`` differs) counts for nothing
  and is removed by the supervisor.

Only the standard library, psutil and ``air_magics.io`` are imported: the supervisor imports this module too.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..io.atomic import write_json_atomic

__all__ = ["touch", "operation", "scan", "Activity", "clients_dir"]

_LOCK = threading.Lock()
_INFLIGHT: dict[str, int] = {}  # store -> operations running in this process


def clients_dir(store: Path) -> Path:
    return store / "clients"


def _created(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def _write(store: Path, inflight: int) -> None:
    pid = os.getpid()
    write_json_atomic(clients_dir(store) / str(pid), {"pid": pid, "created": _created(pid), "inflight": inflight})


def touch(store: Path) -> None:
    """Record a use of the server in *store* now (call before reading its record: see the supervisor)."""
    with _LOCK:
        _write(store, _INFLIGHT.get(str(store), 0))


@contextlib.contextmanager
def operation(store: Path) -> Iterator[None]:
    """Mark an operation on the server in *store* as running for as long as the block runs."""
    key = str(store)
    with _LOCK:
        _INFLIGHT[key] = _INFLIGHT.get(key, 0) + 1
        _write(store, _INFLIGHT[key])
    try:
        yield
    finally:
        with _LOCK:
            _INFLIGHT[key] -= 1
            try:
                _write(store, _INFLIGHT[key])
            except OSError:  # the store was removed under us (a test's temp dir): nothing to record
                pass


@dataclass(frozen=True)
class Activity:
    """What the lease files say: operations running now, and the last time any client used the server."""

    busy: int
    last_use: float
    clients: int


def scan(store: Path, *, prune: bool = False) -> Activity:
    """Read the lease files of *store*; with *prune*, delete those of processes that are gone."""
    busy, last, clients = 0, 0.0, 0
    try:
        entries = list(os.scandir(clients_dir(store)))
    except OSError:
        return Activity(0, 0.0, 0)
    for e in entries:
        if e.name.startswith("."):
            continue
        try:
            mtime = e.stat().st_mtime
            d = json.loads(Path(e.path).read_text())
            pid, created, inflight = int(d["pid"]), d.get("created"), int(d.get("inflight", 0))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        last = max(last, mtime)
        now_created = _created(pid)
        if now_created is None or (created is not None and abs(now_created - float(created)) > 1.0):
            if prune:
                with contextlib.suppress(OSError):
                    os.unlink(e.path)
            continue
        clients += 1
        busy += max(inflight, 0)
    return Activity(busy, last, clients)
