"""``PlanFile``: where a DataLoader's persistent workers learn the epoch they are to run.

Why a file: torch starts each iteration of a persistent worker with nothing but a seed, and the
worker never sees ``set_epoch`` or ``load_state_dict`` in the main process; the loader writes the
plan (epoch, start time, resume point) before it tells the workers to start, and each worker reads
it at the top of its iteration. Only the path travels to the workers (any start method).

Where: under the cache root (``<cache>/plans/<pid>-<token>.json``), never ``/tmp``. The loader
holds an ``flock`` on its plan for as long as it lives (the kernel drops it however the process
dies); the next loader that starts removes the plans whose lock it can take, so nothing piles up.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Any

from ..io.atomic import write_json_atomic

__all__ = ["PlanFile", "sweep_plans"]

_SUFFIX = ".json"


class PlanFile:
    """One loader's plan under *root*/plans; ``write()`` in the main process, ``read()`` in a worker."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        folder = Path(root) / "plans"
        folder.mkdir(parents=True, exist_ok=True)
        sweep_plans(folder)
        self.path = str(folder / f"{os.getpid()}-{secrets.token_hex(4)}{_SUFFIX}")
        self._fd: int | None = self._create()

    def _create(self) -> int:
        """The plan file, created and locked before anyone can see it (a sweeper never finds it unlocked)."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_fd": None}  # a worker reads; it never holds the lock

    def write(self, plan: dict[str, Any]) -> None:
        """Replace the plan's content in place (the lock is on the file: it must stay the same inode)."""
        data = json.dumps(plan).encode()
        if self._fd is None:
            write_json_atomic(self.path, plan)
            return
        if os.fstat(self._fd).st_nlink == 0:  # removed with the cache folder: the workers have its path
            os.close(self._fd)
            self._fd = self._create()
        os.pwrite(self._fd, data, 0)  # then cut what a longer plan left: no truncation to zero (a
        os.ftruncate(self._fd, len(data))  # block freed and taken again at every epoch)

    def read(self) -> dict[str, Any]:
        with open(self.path, "rb") as f:
            return json.loads(f.read() or b"{}")

    def close(self) -> None:
        """Remove the plan (the loader is gone)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)


def sweep_plans(folder: str | os.PathLike[str]) -> list[str]:
    """Remove the plans in *folder* whose owner is gone (their lock can be taken); the names removed."""
    removed = []
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return removed
    for name in names:
        if not name.endswith(_SUFFIX):
            continue
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its loader is alive
        try:
            os.unlink(path)
            removed.append(name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed
