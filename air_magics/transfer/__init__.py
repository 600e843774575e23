"""Copying many files fast and safely: the planner, the parallel engine and the per-file copy.

Layers inside the package point one way: :mod:`.task` (the values) at the bottom, :mod:`.file`
(one file, atomically and confined) and :mod:`.copy_plan` (sources and a destination -> tasks, every
check before a byte is written) above it, :mod:`.engine` (the thread pool, retries, progress) on
top. The public names are re-exported here: ``from air_magics.transfer import copy_files``.
"""

from __future__ import annotations

from ..io.leftovers import TEMP_MARK
from ..io.retry import TRANSIENT_ERRNOS, is_transient
from .copy_plan import CopyPlan, parse_sources, plan_copy
from .engine import CHECK_THREADS, DEFAULT_WORKERS, copy_files, copy_one
from .task import DESTINATION, SOURCE, CopyFailure, CopyProgress, CopyReport, CopyTask, Landed

__all__ = [
    "CopyTask",
    "Landed",
    "CopyFailure",
    "SOURCE",
    "DESTINATION",
    "CopyProgress",
    "CopyReport",
    "CopyPlan",
    "copy_files",
    "copy_one",
    "plan_copy",
    "parse_sources",
    "is_transient",
    "TEMP_MARK",
    "DEFAULT_WORKERS",
    "CHECK_THREADS",
    "TRANSIENT_ERRNOS",
]
