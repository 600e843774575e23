"""``StepPruner``: a checkpoint folder kept to its newest ``keep`` steps, after each commit.

Why a module of its own: pruning is not part of a save (a prune killed midway is finished by the
next one), so with one process it runs after the save's call returns, on a thread of its own
(``TAIL``), and whatever reads the folder's steps waits for it first (:meth:`StepPruner.wait`).
A prune lists the folder (20-30 ms on a volume at 2 ms a request) and takes 100+ ms for each step
it deletes: on the caller's clock that was most of a small save.

Order: a step is un-committed first (``step_N`` renamed to ``.pruning-step_N.<id>``, one atomic
step; on object stores its marker is deleted), then its files are deleted, so the folder's list of
steps never holds a half-deleted one. ``.pruning-*`` leftovers of a killed prune are never
loadable, so every prune removes them, whoever made them.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..io.pools import ProcessPool
from ..volumes.location import Location
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .commit import COMMITTED, PENDING_PREFIX, PRUNING_PREFIX, remove_folder, scan_checkpoints, uncommit_folder

__all__ = ["StepPruner", "TAIL"]

_TAIL_NAME = "air-ckpt-tail"
TAIL = ProcessPool(1, _TAIL_NAME)
"""The thread a one-process save's pruning runs on (and the ``latest`` pointer's text is written on
while the data streams: see :class:`~.held_folder.StagedText`)."""

_PRUNE_HOOK: Callable[[str], None] | None = None
"""Called with the step folder's name after a pruned step is un-committed and before its files are
deleted: the point where a kill used to leave a listed step that could not load (tests kill here)."""


class StepPruner:
    """Prunes one manager's folder (``directory``, located by ``locate(name)``) to ``keep`` steps."""

    def __init__(self, directory: VolumePath, store: VolumeStore, keep: int, locate: Callable[[str], Location]) -> None:
        self.directory, self.store, self.keep = directory, store, keep
        self._locate = locate
        self._tail: Future[None] | None = None  # the last commit's pruning, when it runs on TAIL

    def after_commit(self, record: dict[str, Any], publish: Callable[[], None], *, background: bool) -> None:
        """Prune after a commit: on ``TAIL`` when *background* (one process: nothing holds the
        caller; a failure is kept in the save's *record* as ``after_commit_error`` and published),
        else now (several ranks: rank 0 prunes before the closing barrier, a failure is raised)."""
        if background:
            self._tail = TAIL.get().submit(self._prune_reporting, record, publish)
        else:
            self.prune()

    def _prune_reporting(self, record: dict[str, Any], publish: Callable[[], None]) -> None:
        try:
            self.prune()
        except Exception as exc:
            record["after_commit_error"] = f"{type(exc).__name__}: {exc}"
            publish()

    def wait(self) -> None:
        """Wait for the last commit's pruning (a step being pruned is never picked or listed)."""
        tail = self._tail
        if tail is not None and not threading.current_thread().name.startswith(_TAIL_NAME):  # (not on itself)
            tail.result()

    def prune(self) -> None:
        found = scan_checkpoints(self.directory, self.store)
        files = found.get("files")  # (an object store's listing: what each folder holds)
        known = files if isinstance(files, dict) else {}
        for name in found["pruning"]:  # leftovers of killed prunes: never loadable, safe for anyone to delete
            remove_folder(self._locate(name), known.get(name))
        for old in found["steps"][: -self.keep]:
            self._discard(f"step_{old}", known.get(f"step_{old}"))

    def _discard(self, name: str, files: list[str] | None = None) -> None:
        """Delete a committed step: un-commit it first (one atomic step), then delete its files
        (*files*: its objects, when the listing gave them: on an object store, no second listing)."""
        doomed = uncommit_folder(self._locate(name), self._locate(f"{PRUNING_PREFIX}{name}.{uuid.uuid4().hex[:8]}"))
        if _PRUNE_HOOK is not None:
            _PRUNE_HOOK(name)
        remove_folder(doomed, None if files is None else [f for f in files if f != COMMITTED])

    def cleanup(self, *, older_than: float, active: str | None) -> list[str]:
        """Remove leftovers of crashed saves and prunes (see ``CheckpointManager.cleanup``), except the
        pending folder of the save in progress, *active*; returns their names."""
        self.wait()
        found = scan_checkpoints(self.directory, self.store)
        mine = {active, "step_" + active[len(PENDING_PREFIX) :]} if active else set()
        unowned = found["pending"] + found["uncommitted"]
        cutoff = time.time() - older_than
        mtimes = found.get("mtimes")  # an object store's folders: their newest object's (a prefix has no mtime)

        def mtime(name: str) -> float:
            return mtimes.get(name, 0.0) if isinstance(mtimes, dict) else self.store.stat(self.directory / name).mtime

        stale = [n for n in unowned if n not in mine and mtime(n) <= cutoff]
        for name in found["pruning"] + stale:
            remove_folder(self._locate(name))
        return found["pruning"] + stale
