"""Small JSON status documents under ``$AIR_HOME/run/``: what viewers in other processes read.

The core reports through :mod:`air_magics.events`; the
:class:`~air_magics.listeners.StatusDocuments` listener (attached by default) writes the copy,
export, pack, cache, loader and checkpoint events here, and notebook widgets and the JupyterLab sidebar
read the same documents. Writes are atomic (temp + rename), so a reader never sees half a
document. No secrets and no file contents go in them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from . import settings
from .io.atomic import write_json_atomic

__all__ = ["run_dir", "write_status", "read_status", "list_status", "latest_loader"]

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


def latest_loader(now: float | None = None) -> dict[str, Any] | None:
    """The most recently updated DataLoader document, if it is recent (widget and sidebar agree)."""
    docs = list_status("loader-")
    now = time.time() if now is None else now
    return docs[0] if docs and now - docs[0].get("updated", 0) < _LOADER_FRESH else None
