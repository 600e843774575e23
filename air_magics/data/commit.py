"""Small storage steps of the checkpoint commit protocol, for OS paths and fsspec locations alike."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from typing import TYPE_CHECKING, Any

from ..volumes.store import Location

if TYPE_CHECKING:  # pragma: no cover
    from ..volumes.store import VolumeStore

__all__ = ["write_text_atomic", "read_text", "commit_folder", "remove_folder", "METADATA", "COMMITTED",
           "PENDING_PREFIX", "STEP_RE", "status_name", "checkpoint_status"]

METADATA = ".metadata"        # torch DCP's metadata file: uploaded last by UCVolumeWriter
COMMITTED = "_COMMITTED"      # the manager's marker: written after .metadata, before the rename
PENDING_PREFIX = ".pending-step_"
STEP_RE = re.compile(r"^step_(\d+)$")


def status_name(directory: str) -> str:
    """Name of the status document of the checkpoints under *directory*."""
    return "checkpoints-" + hashlib.sha1(directory.encode()).hexdigest()[:12]


def checkpoint_status(directory: str, store: "VolumeStore | None" = None) -> dict[str, Any]:
    """What the widget and sidebar show: committed steps on the volume plus the recent saves
    (with their state) reported by the manager. Cheap and torch-free."""
    from ..status import read_status
    from ..volumes.path import VolumePath
    from ..volumes.store import VolumeStore

    store = store or VolumeStore()
    vp = VolumePath.parse(directory)
    steps, pending = [], []
    if store.exists(vp):
        for e in store.entries(vp, recursive=False, with_dirs=True):
            m = STEP_RE.match(e.rel)
            if m and store.exists(vp / e.rel / COMMITTED) and store.exists(vp / e.rel / METADATA):
                steps.append(int(m.group(1)))
            elif e.is_dir and e.rel.startswith(PENDING_PREFIX):
                pending.append(e.rel)
    doc = read_status(status_name(str(vp))) or {}
    latest = read_text(store.locate(vp / "latest")) if store.exists(vp) else None
    return {"directory": str(vp), "steps": sorted(steps), "pending": sorted(pending),
            "latest": int(latest[5:]) if latest and STEP_RE.match(latest) and int(latest[5:]) in steps else (max(steps) if steps else None),
            "saves": doc.get("saves", []), "updated": doc.get("updated")}


def write_text_atomic(loc: Location, text: str) -> None:
    """Replace a small text file so readers see the old or the new content, never a mix."""
    if loc.is_local:
        d = os.path.dirname(loc.path)
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".air-tmp-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, loc.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    else:  # object stores publish a whole object at once
        with loc.fs.open(loc.path, "w") as f:
            f.write(text)


def read_text(loc: Location) -> str | None:
    try:
        if loc.is_local:
            with open(loc.path) as f:
                return f.read().strip()
        with loc.fs.open(loc.path, "r") as f:
            return f.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None


def commit_folder(src: Location, dst: Location, *, last: str) -> None:
    """Make folder *src* visible as *dst*: one atomic rename on OS paths; on object stores copy
    every file, the marker *last* at the end, then drop *src*."""
    if src.is_local:
        os.rename(src.path, dst.path)
        return
    fs = src.fs
    files = [f for f in fs.find(src.path) if not f.endswith("/" + last)]
    for f in files:
        fs.copy(f, dst.path.rstrip("/") + f[len(src.path.rstrip("/")):])
    fs.copy(f"{src.path.rstrip('/')}/{last}", f"{dst.path.rstrip('/')}/{last}")
    fs.rm(src.path, recursive=True)


def remove_folder(loc: Location) -> None:
    if loc.is_local:
        shutil.rmtree(loc.path, ignore_errors=True)
    elif loc.fs.exists(loc.path):
        loc.fs.rm(loc.path, recursive=True)
