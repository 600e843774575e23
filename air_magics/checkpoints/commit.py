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
from ..io.folders import withdraw_folder
from ..volumes.location import Location, fs_mtime
from ..volumes.object_io import delete_objects, list_tree, put_bytes, read_small, remove_tree

if TYPE_CHECKING:  # pragma: no cover
    from ..volumes.path import VolumePath
    from ..volumes.store import VolumeStore

__all__ = [
    "write_text_atomic",
    "read_text",
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
    folders without both ``.metadata`` and ``_COMMITTED``: never loaded). On an object store the
    listing is one request (every object under the folder), ``mtimes`` holds each folder's newest
    object's time and ``files`` its objects' names (deleted then without another listing)."""
    found: dict[str, list[Any]] = {"steps": [], "pending": [], "pruning": [], "uncommitted": []}
    loc = store.locate(vp)
    if not loc.is_local:
        return _scan_objects(loc, found)
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


def _scan_objects(loc: Location, found: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """:func:`scan_checkpoints` from one listing of every object under *loc* (no folder to ask about)."""
    files: dict[str, set[str]] = {}
    mtimes: dict[str, float] = {}
    for rel, info in list_tree(loc.fs, loc.path).items():
        top, _, rest = rel.partition("/")
        if rest:
            files.setdefault(top, set()).add(rest)
            mtimes[top] = max(mtimes.get(top, 0.0), fs_mtime(info))
    for top, names in files.items():
        m = STEP_RE.match(top)
        if m and COMMITTED in names and METADATA in names:
            found["steps"].append(int(m.group(1)))
        elif m:
            found["uncommitted"].append(top)
        elif top.startswith(PENDING_PREFIX):
            found["pending"].append(top)
        elif top.startswith(PRUNING_PREFIX):
            found["pruning"].append(top)
    for names in found.values():
        names.sort()
    found["mtimes"] = mtimes  # type: ignore[assignment]
    found["files"] = {top: sorted(names) for top, names in files.items()}  # type: ignore[assignment]
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
    where = store.locate(vp / "latest")
    latest = read_text(where) if not where.is_local or store.exists(vp) else None
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
    else:  # object stores publish a whole object at once (one PUT)
        put_bytes(loc.fs, loc.path, text.encode())


def read_text(loc: Location) -> str | None:
    """The text of the small file at *loc*, stripped; ``None`` when it is not there (one GET on an
    object store)."""
    try:
        if loc.is_local:
            with open_file(loc.path, loc.root, "r") as f:
                return f.read().strip()
        data = read_small(loc.fs, loc.path)
        return None if data is None else data.decode().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None


def remove_folder(loc: Location, files: Collection[str] | None = None) -> None:
    """Delete folder *loc* and everything in it; on an object store one listing (unless its
    *files*, relative names, are known) and one batch delete."""
    if loc.is_local:
        shutil.rmtree(loc.path, ignore_errors=True)
        return
    remove_tree(loc.fs, loc.path, files)


def uncommit_folder(loc: Location, trash: Location) -> Location:
    """Take committed folder *loc* out of sight *before* any of its files is deleted, so a kill at
    any later point never leaves a listed step that cannot load. OS paths: one atomic rename to
    *trash*; object stores (no atomic rename): delete the marker first (one request). Returns what
    to delete."""
    if loc.is_local:
        withdraw_folder(loc.path, trash.path, root=loc.root)
        return trash
    delete_objects(loc.fs, [f"{loc.path.rstrip('/')}/{COMMITTED}"])
    return loc


# -- checksums ------------------------------------------------------------------------------------
def commit_marker(step: int, files: Mapping[str, Mapping[str, Any]] | None, algorithm: str) -> str:
    """Text of ``_COMMITTED``: the step, the time and, when known, the checksum of every file
    (made with *algorithm*, :data:`air_magics.checkpoints.digests.ALGORITHM` for a new save)."""
    doc: dict[str, Any] = {"step": int(step), "time": time.time()}
    if files:
        doc.update(algorithm=algorithm, files=dict(sorted(files.items())))
    return json.dumps(doc, indent=1)
