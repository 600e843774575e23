"""``LoggingListener``: events as log records on the loggers of the modules that emit them."""

from __future__ import annotations

import logging

from ..events import Event

__all__ = ["LoggingListener"]

_LOGGERS = {
    "copy": "air_magics.transfer.engine",
    "cache": "air_magics.cache",
    "loader": "air_magics.datasets.loader",
    "checkpoint": "air_magics.checkpoints.manager",
    "export": "air_magics.tables.export",
    "pack": "air_magics.shards.writer",
    "server": "air_magics.tables.server",
}


class LoggingListener:
    """Logs a job's progress at ``level`` (default DEBUG), its end at INFO and a failure at WARNING.

    Attach it throttled for long jobs: ``channel.attach(throttled(LoggingListener(), 5))``.
    """

    def __init__(self, level: int = logging.DEBUG) -> None:
        self.level = level

    def __call__(self, event: Event) -> None:
        log = logging.getLogger(_LOGGERS.get(event.source, "air_magics"))
        level = logging.WARNING if event.state == "failed" else logging.INFO if event.terminal else self.level
        if log.isEnabledFor(level):
            fields = {k: v for k, v in event.to_dict().items() if k not in ("kind", "state", "job", "pid", "saves")}
            log.log(level, "%s %s%s: %s", event.source, f"{event.job} " if event.job else "", event.state, fields)

    def __repr__(self) -> str:
        return f"LoggingListener(level={logging.getLevelName(self.level)})"
