"""What a caller sees while the embedded Spark server starts: :class:`~air_magics.events.ServerEvent`s.

Why: the first table call waits for a JVM to start and used to say nothing for all that time.
:class:`StartProgress` says what is happening and how long it usually takes (the last start's
duration in this store, kept in ``last-start.json``), then about once a second how long the caller
has waited, and finally where the server is and when it stops by itself. Front ends (the notebook
view, ``TqdmListener``, ``LoggingListener``) show them.

The seconds are the caller's whole wait, not the JVM's launch alone: they count from the moment the
call began (``since``, before pyspark is even imported) until its session has answered a catalog
query (the Hive metastore opens lazily, on the first one: 5-35 s more on a small machine, which
used to land on the user's first query, even a misspelled one: 33 s of a busy machine's 85 s).
A first start takes :data:`FIRST_START`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..events import ServerEvent, channel
from ..io.atomic import write_json_atomic

__all__ = ["FIRST_START", "StartProgress", "last_start_seconds", "lifetime_note"]

_TICK = 1.0
# the whole wait (call to first query), measured on 2 cores: 20-35 s idle (issue 37), 97-108 s with the
# cores shared by other test runs (load 7-9; 89-99 s reported, the rest the first query's own time)
FIRST_START = "20-35 s on an idle 2-core machine, about 100 s on a busy one"
_WHAT = "the embedded Spark Connect server"


def _last_start_file(store: Path) -> Path:
    return store / "last-start.json"


def last_start_seconds(store: Path) -> float | None:
    """How long the last start in *store* took (seconds), or ``None`` if none is known."""
    try:
        s = float(json.loads(_last_start_file(store).read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return s if s > 0 else None


def _expectation(store: Path) -> str:
    last = last_start_seconds(store)
    took = f"the last start here took {last:.0f} s" if last else f"a first start takes {FIRST_START}"
    return f"{took}; later calls reuse it"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def lifetime_note(idle: float, no_client: float) -> str:
    """When the server stops by itself, and how to stop it sooner (one clause, for messages and docs)."""
    return (
        f"it stops {_minutes(no_client)} after the last process using it exits, or after "
        f"{_minutes(idle)} unused; stop it now with %air_table --stop or air_magics.tables.stop_server()"
    )


class StartProgress:
    """The events of one wait for the embedded server in *store*: started by this process or by another.

    *since*: when the caller began waiting (``time.monotonic()``); every elapsed time, the ``done``
    message and the remembered duration count from there, so they match the wall time the user saw."""

    def __init__(self, store: Path, *, other: bool = False, since: float | None = None) -> None:
        self.store, self.other = store, other
        now = time.monotonic()
        self.t0 = now if since is None else min(since, now)
        self.started = time.time() - (now - self.t0)
        self._last = now
        self._emit("running", self._message())

    def _message(self) -> str:
        if self.other:
            return f"Waiting for another process that is starting {_WHAT} ({_expectation(self.store)})..."
        return f"Starting {_WHAT} ({_expectation(self.store)})..."

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _emit(self, state: str, message: str, url: str | None = None) -> None:
        channel.emit(
            ServerEvent(
                job=str(self.store),
                state=state,
                message=message,
                elapsed=self.elapsed,
                started=self.started,
                url=url,
                log=str(self.store / "server.log"),
            )
        )

    def starting(self) -> None:
        """This process starts the server after all (the other one's start did not leave one running)."""
        if self.other:
            self.other = False
            self._emit("running", self._message())

    def tick(self) -> None:
        """Called while waiting (often): an event about once a second, with the seconds waited so far."""
        now = time.monotonic()
        if now - self._last >= _TICK:
            self._last = now
            self._emit("running", self._message())

    def done(self, url: str, idle: float, no_client: float) -> None:
        """The server answers at *url*; a start by this process is remembered as the next expectation."""
        took = self.elapsed
        if not self.other:
            try:
                write_json_atomic(_last_start_file(self.store), {"seconds": round(took, 1), "time": time.time()})
            except OSError:
                pass
        self._emit(
            "done",
            f"Started {_WHAT} at {url} in {took:.0f} s; {lifetime_note(idle, no_client)}",
            url,
        )

    def failed(self, why: str, *, interrupted: bool = False) -> None:
        self._emit("interrupted" if interrupted else "failed", f"{_WHAT[0].upper()}{_WHAT[1:]} did not start: {why}")
