"""Atomic replacement of a small file: the one helper behind status documents, the registry, the
server record, checkpoint markers and ``latest`` pointers.

Why: readers in other processes (the sidebar, DataLoader workers, a second notebook) must see the
old or the new content, never a torn or empty file, and a process killed mid-write must leave
nothing but a temp name that listings ignore and the next writer can sweep.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .confined import open_dir, publish_at, write_all
from .leftovers import temp_name

__all__ = ["write_atomic", "write_json_atomic"]


def write_atomic(
    path: str | os.PathLike[str], data: bytes | str, *, root: str | None = None, fsync: bool = False, mtime: float = 0.0
) -> None:
    """Replace *path* with *data*: temp file beside it, optional ``fsync`` (for what must survive a
    power cut: commit markers), *mtime* stamped when given, rename into place. Parent folders are
    made; with *root* every folder is confined to it (:mod:`air_magics.io.confined`)."""
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    raw = data.encode() if isinstance(data, str) else data
    dfd = open_dir(folder, root if root is not None else folder, create=True)
    try:
        publish_at(dfd, name, lambda fd: write_all(fd, raw), mtime=mtime, temp=temp_name(name), fsync=fsync)
    finally:
        os.close(dfd)


def write_json_atomic(
    path: str | os.PathLike[str], doc: Any, *, root: str | None = None, fsync: bool = False, **dumps: Any
) -> None:
    """:func:`write_atomic` of ``json.dumps(doc, **dumps)``."""
    write_atomic(path, json.dumps(doc, **dumps), root=root, fsync=fsync)
