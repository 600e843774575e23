"""Small storage steps of the checkpoint commit protocol, for OS paths and fsspec locations alike,
and the checksums that let a load tell a corrupt file from a state that does not fit."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from ..io.atomic import write_atomic
from ..io.confined import open_file
from ..io.folders import publish_folder, withdraw_folder
from ..volumes.location import Location

if TYPE_CHECKING:  # pragma: no cover
    from ..volumes.path import VolumePath
    from ..volumes.store import VolumeStore

__all__ = [
    "write_text_atomic",
    "read_text",
    "commit_folder",
    "uncommit_folder",
    "remove_folder",
    "METADATA",
    "COMMITTED",
    "CHECKSUMS",
    "PENDING_PREFIX",
    "PRUNING_PREFIX",
    "STEP_RE",
    "status_name",
    "checkpoint_status",
    "save_state",
    "scan_checkpoints",
    "commit_marker",
]

METADATA = ".metadata"  # torch DCP's metadata file: uploaded last by UCVolumeWriter
COMMITTED = "_COMMITTED"  # the manager's marker: written after .metadata, before the rename
CHECKSUMS = ".checksums.json"  # UCVolumeWriter's manifest (size + checksum per file), uploaded before .metadata
PENDING_PREFIX = ".pending-step_"
PRUNING_PREFIX = ".pruning-"  # a pruned step renamed out of sight before its files are deleted
STEP_RE = re.compile(r"step_([0-9]+)\Z")


def status_name(directory: str) -> str:
    """Name of the status document of the checkpoints under *directory*."""
    return "checkpoints-" + hashlib.sha1(directory.encode()).hexdigest()[:12]


def scan_checkpoints(vp: VolumePath, store: VolumeStore) -> dict[str, list[Any]]:
    """One listing of a manager's folder: ``steps`` (committed, sorted), ``pending`` (saves in
    progress or crashed), ``pruning`` (un-committed trash) and ``uncommitted`` (``step_N``
    folders without both ``.metadata`` and ``_COMMITTED``: never loaded)."""
    found: dict[str, list[Any]] = {"steps": [], "pending": [], "pruning": [], "uncommitted": []}
    if not store.exists(vp):
        return found
    for e in store.entries(vp, recursive=False, with_dirs=True):
        m = STEP_RE.match(e.rel)
        if m and store.exists(vp / e.rel / COMMITTED) and store.exists(vp / e.rel / METADATA):
            found["steps"].append(int(m.group(1)))
        elif m and e.is_dir:
            found["uncommitted"].append(e.rel)
        elif e.is_dir and e.rel.startswith(PENDING_PREFIX):
            found["pending"].append(e.rel)
        elif e.is_dir and e.rel.startswith(PRUNING_PREFIX):
            found["pruning"].append(e.rel)
    for names in found.values():
        names.sort()
    return found


def checkpoint_status(directory: str, store: VolumeStore | None = None) -> dict[str, Any]:
    """What the widget and sidebar show: committed steps on the volume plus the recent saves
    (with their state) reported by the manager. Cheap and torch-free."""
    from ..status import read_status
    from ..volumes.path import VolumePath
    from ..volumes.store import VolumeStore

    store = store or VolumeStore.shared()
    vp = VolumePath.parse(directory)
    found = scan_checkpoints(vp, store)
    steps, pending = found["steps"], found["pending"]
    doc = read_status(status_name(str(vp))) or {}
    latest = read_text(store.locate(vp / "latest")) if store.exists(vp) else None
    return {
        "directory": str(vp),
        "steps": steps,
        "pending": pending,
        "latest": int(latest[5:])
        if latest and STEP_RE.match(latest) and int(latest[5:]) in steps
        else (max(steps) if steps else None),
        "saves": doc.get("saves", []),
        "updated": doc.get("updated"),
    }


def save_state(save: Mapping[str, Any], committed: Collection[Any] | None) -> str:
    """A reported save's state as of now: one that committed but whose step the folder no longer
    holds (*committed*: :func:`checkpoint_status`'s ``steps``; ``None``: not known) was ``pruned``
    since by the manager's retention rule."""
    state = str(save.get("state", "?"))
    return "pruned" if state == "committed" and committed is not None and save.get("step") not in committed else state


def write_text_atomic(loc: Location, text: str, *, fsync: bool = True) -> None:
    """Replace a small text file so readers see the old or the new content, never a mix (and, with
    *fsync*, one that survives a power cut)."""
    if loc.is_local:  # confined: temp + fsync + rename inside the verified folder
        write_atomic(loc.path, text, root=loc.root, fsync=fsync)
    else:  # object stores publish a whole object at once
        with loc.fs.open(loc.path, "w") as f:
            f.write(text)


def read_text(loc: Location) -> str | None:
    try:
        if loc.is_local:
            with open_file(loc.path, loc.root, "r") as f:
                return f.read().strip()
        with loc.fs.open(loc.path, "r") as f:
            return f.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None


def commit_folder(src: Location, dst: Location, *, last: str) -> None:
    """Make folder *src* visible as *dst*: one atomic rename on OS paths
    (:func:`air_magics.io.folders.publish_folder`: a non-empty *dst* is refused, never replaced);
    on object stores copy every file, the marker *last* at the end, then drop *src*."""
    if src.is_local:
        publish_folder(src.path, dst.path, root=src.root)
        return
    fs = src.fs
    files = [f for f in fs.find(src.path) if not f.endswith("/" + last)]
    for f in files:
        fs.copy(f, dst.path.rstrip("/") + f[len(src.path.rstrip("/")) :])
    fs.copy(f"{src.path.rstrip('/')}/{last}", f"{dst.path.rstrip('/')}/{last}")
    fs.rm(src.path, recursive=True)


def remove_folder(loc: Location) -> None:
    if loc.is_local:
        shutil.rmtree(loc.path, ignore_errors=True)
    elif loc.fs.exists(loc.path):
        loc.fs.rm(loc.path, recursive=True)


def uncommit_folder(loc: Location, trash: Location) -> Location:
    """Take committed folder *loc* out of sight *before* any of its files is deleted, so a kill at
    any later point never leaves a listed step that cannot load. OS paths: one atomic rename to
    *trash*; object stores (no atomic rename): delete the marker first. Returns what to delete."""
    if loc.is_local:
        withdraw_folder(loc.path, trash.path, root=loc.root)
        return trash
    marker = f"{loc.path.rstrip('/')}/{COMMITTED}"
    if loc.fs.exists(marker):
        loc.fs.rm(marker)
    return loc


# -- checksums ------------------------------------------------------------------------------------
def commit_marker(step: int, files: Mapping[str, Mapping[str, Any]] | None, algorithm: str) -> str:
    """Text of ``_COMMITTED``: the step, the time and, when known, the checksum of every file
    (made with *algorithm*, :data:`air_magics.checkpoints.digests.ALGORITHM` for a new save)."""
    doc: dict[str, Any] = {"step": int(step), "time": time.time()}
    if files:
        doc.update(algorithm=algorithm, files=dict(sorted(files.items())))
    return json.dumps(doc, indent=1)
