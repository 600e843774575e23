"""Small JSON status documents under ``$AIR_HOME/run/``: what viewers in other processes read.

The core reports through :mod:`air_magics.events`; the
:class:`~air_magics.listeners.StatusDocuments` listener (attached by default) writes the copy,
export, pack, cache, loader and checkpoint events here (and ``probe`` a volume's measured rates), and
notebook widgets and the JupyterLab sidebar read the same documents. Writes are atomic (temp + rename), so a reader never sees half a
document. No secrets and no file contents go in them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from . import settings
from .io.atomic import write_json_atomic

__all__ = ["run_dir", "write_status", "read_status", "list_status", "latest_loader", "rank_loaders", "current_loaders"]

_LOADER_FRESH = 120.0  # a loader document older than this is not "current"


def run_dir() -> Path:
    return settings.air_home() / "run"


def _file(name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"status name {name!r} must be a plain file name")
    return run_dir() / f"{name}.json"


def write_status(name: str, doc: dict[str, Any]) -> None:
    """Atomically replace status document *name* (``updated`` is stamped in)."""
    write_json_atomic(_file(name), dict(doc, updated=time.time()))


def _valid(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("updated", 0), (int, float))


def read_status(name: str) -> dict[str, Any] | None:
    """The document, or ``None`` if it is missing or not a well-formed document."""
    try:
        doc = json.loads(_file(name).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return doc if _valid(doc) else None


def list_status(prefix: str) -> list[dict[str, Any]]:
    """Every document whose name starts with *prefix*, newest first."""
    out = []
    d = run_dir()
    if not d.is_dir():
        return out
    for p in d.glob(f"{prefix}*.json"):
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if not _valid(doc):  # someone else's or a damaged file: skip, never fail the viewers
            continue
        doc.setdefault("name", p.stem)
        out.append(doc)
    out.sort(key=lambda doc: doc.get("updated", 0), reverse=True)
    return out


def current_loaders(now: float | None = None) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """From one read of the loader documents: the most recently updated one, if it is recent, and
    the current loader of each rank of its launch (``%%air_torchrun``), by rank (just that one when
    it is not part of a launch; ``(None, [])`` when none is current)."""
    now = time.time() if now is None else now
    fresh = [d for d in list_status("loader-") if now - d.get("updated", 0) < _LOADER_FRESH]
    if not fresh:
        return None, []
    launch = fresh[0].get("launch")
    if not launch:
        return fresh[0], fresh[:1]
    by_rank: dict[int, dict[str, Any]] = {}
    for d in fresh:  # newest first: the first document of each rank is its current one
        if d.get("launch") == launch:
            rank = d.get("rank")  # a document is data any process wrote: a rank that is not a number is 0
            by_rank.setdefault(rank if isinstance(rank, int) else 0, d)
    return fresh[0], [by_rank[r] for r in sorted(by_rank)]


def rank_loaders(now: float | None = None) -> list[dict[str, Any]]:
    """Each rank's current loader of the latest launch (see :func:`current_loaders`)."""
    return current_loaders(now)[1]


def latest_loader(now: float | None = None) -> dict[str, Any] | None:
    """The most recently updated DataLoader document, if it is recent (widget and sidebar agree)."""
    return current_loaders(now)[0]
