"""The values a volume store answers with: where a file is (``Location``), what it is (``FileInfo``),
where a volume lives (``VolumeInfo``).

Why a module of its own: every layer passes these around (the cache, the copy engine, the
checkpoint writer), and none of them needs the store's resolution to do so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .path import VolumePath

__all__ = ["FileInfo", "VolumeInfo", "Location", "fs_mtime"]


@dataclass(frozen=True)
class FileInfo:
    """A file or directory inside a volume."""

    path: VolumePath
    size: int
    mtime: float
    is_dir: bool = False


@dataclass(frozen=True)
class VolumeInfo:
    """Where one volume lives: ``kind`` is ``embedded``, ``mount`` or ``fsspec``. A registered
    (``fsspec``) volume also carries its stored endpoint (None: the backend's default chain) and the
    backend options its filesystem is opened with (no secrets: those come from the credentials chain)."""

    volume_id: str
    kind: str
    location: str
    endpoint: str | None = None
    options: dict[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, eq=False, slots=True)
class Location:
    """A concrete file location: an OS path when ``fs`` is None, else a path on an fsspec filesystem.

    ``root`` is the folder a local location is confined to (its volume, or a copy's destination):
    every open goes through :mod:`air_magics.io.confined`, which refuses to leave it at the moment
    of use. ``None``: no containment (a file the user named explicitly, a private staging file).
    """

    path: str
    fs: Any = None
    root: str | None = None

    @property
    def is_local(self) -> bool:
        return self.fs is None

    def exists(self) -> bool:
        """Whether something is at this location (a link counts only where it leads somewhere)."""
        return os.path.exists(self.path) if self.fs is None else bool(self.fs.exists(self.path))

    def join(self, rel: str) -> Location:
        """The location *rel* (``/``-separated) below this one."""
        if not rel:
            return self
        if self.fs is None:
            if os.sep == "/":  # a listing joins thousands of names: plain concatenation
                return Location(f"{self.path.rstrip('/')}/{rel}", root=self.root)
            return Location(os.path.join(self.path, *rel.split("/")), root=self.root)
        return Location(f"{self.path.rstrip('/')}/{rel}", self.fs)

    def __str__(self) -> str:
        if self.fs is None:
            return self.path
        proto = self.fs.protocol[0] if isinstance(self.fs.protocol, (tuple, list)) else self.fs.protocol
        return f"{proto}://{self.path.lstrip('/')}" if proto != "file" else self.path


def fs_mtime(info: dict[str, Any]) -> float:
    """A file's mtime from an fsspec ``info()`` dict, whichever key and type its filesystem uses
    (0.0 when it has none)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created", "time"):
        v = info.get(key)
        if v is None:
            continue
        if isinstance(v, datetime):
            return v.timestamp()
        if isinstance(v, (int, float)):
            return float(v)
        try:
            return datetime.fromisoformat(str(v).replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
    return 0.0
