"""Retrying transient errors, the one loop every caller uses (copy engine, cache, dataset).

Why: remote volumes fail transiently (``EIO`` from a FUSE mount, timeouts, dropped connections);
such an error is worth a few more tries with jittered exponential backoff, anything else fails at
once with its own message.
"""

from __future__ import annotations

import errno
import random
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["TRANSIENT_ERRNOS", "is_transient", "backoff_delay", "retry_call"]

T = TypeVar("T")

TRANSIENT_ERRNOS = frozenset(
    getattr(errno, n)
    for n in ("EIO", "ETIMEDOUT", "ECONNRESET", "ECONNABORTED", "EAGAIN", "EBUSY", "ENETRESET", "EPIPE", "ESTALE")
    if hasattr(errno, n)
)


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: I/O errors of remote storage, timeouts, dropped connections."""
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    return isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS


def backoff_delay(attempt: int, backoff: float) -> float:
    """Seconds to wait before retry *attempt* (1-based): ``backoff * 2**(attempt-1)``, capped at 2 s,
    jittered by 0.5-1.5x so many threads retrying at once do not hit the volume in lockstep."""
    return min(2.0, backoff * 2 ** (attempt - 1)) * (0.5 + random.random())


def retry_call(
    fn: Callable[[], T], *, retries: int = 4, backoff: float = 0.05, stop: Callable[[], bool] | None = None
) -> T:
    """``fn()``, retried up to *retries* more times while it raises a transient error (and *stop*,
    if given, says not to stop). The last error is raised unchanged."""
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:
            attempt += 1
            if is_transient(exc) and attempt <= retries and not (stop is not None and stop()):
                time.sleep(backoff_delay(attempt, backoff))
                continue
            raise
