"""Process liveness, the one check every "is its owner still running?" question uses."""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """True while process *pid* exists and is not a zombie (psutil: no /proc parsing of our own)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # it exists; we may not look at it
        return True
