"""What the sidebar's REST API answers, as plain functions over the core API (no tornado here).

Every function returns a JSON-ready dict. They read volumes only through :class:`VolumeStore`
(listings and stats, never file contents) and state only through the status documents, the
same ones the notebook widgets render. Blocking: the handlers run them on thread pools.

Status documents are data written by other processes: their fields are type-checked before use,
and none of them ever chooses what is deleted (clearing acts on this server's own cache root).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from ..errors import AirError, VolumePathError
from ..events import CacheEvent, CopyEvent, Event, ExportEvent, PackEvent
from ..io.pools import ProcessPool, threads
from ..io.process import pid_alive
from ..status import current_loaders, list_status, read_status
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .redact import redact

__all__ = [
    "list_volumes",
    "list_folder",
    "cache_summary",
    "training",
    "clear_cache",
    "jobs",
    "checkpoints",
    "JOB_EVENTS",
    "JOB_EXTRA",
    "PAGE_DEFAULT",
    "PAGE_MAX",
    "STALE_AFTER",
]

PAGE_DEFAULT = 200  # entries per page of a folder listing
PAGE_MAX = 1000
STALE_AFTER = 30.0  # a "running" job whose document is older than this lost its process
RECENT_JOBS = 3600.0  # finished jobs are shown for an hour
MAX_JOBS = 20
MAX_CHECKPOINTS = 10
_LISTING_TTL = 2.0  # seconds a folder's name listing is reused while paging through it
_LISTINGS_KEPT = 16

JOB_EVENTS: dict[str, type[Event]] = {"copy": CopyEvent, "export": ExportEvent, "pack": PackEvent}
"""The events whose documents the jobs endpoint lists, by ``kind``: each job is that event's
document (:meth:`~air_magics.events.Event.keys`) plus :data:`JOB_EXTRA`."""
JOB_EXTRA = ("name", "updated", "progress", "stale")
"""What the jobs endpoint adds to an event's document: the document's name and write time, the
progress as 0..1 and whether a running job's process is gone."""

_listings: OrderedDict[tuple[str, str], tuple[float, list[tuple[str, bool]]]] = OrderedDict()
_listings_lock = threading.Lock()
_stat_pool = ProcessPool(threads("stream"), "air-api-stat")  # made at the first listing page


def _store() -> VolumeStore:
    return VolumeStore(workers=8)


# -- volumes --------------------------------------------------------------------------------------
def list_volumes() -> dict[str, Any]:
    """Every volume as a tree: catalogs -> schemas -> volumes.

    A folder that is not a volume (a name that is not an identifier, a link out of the root, an
    unreadable folder) is left out with a line in ``notes``; it never fails the whole tree."""
    store = _store()
    catalogs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    vols, notes = store.scan_volumes()
    count = 0
    for v in vols:
        try:
            cat, sch, vol = v.volume_id.split(".")
            path = str(VolumePath(cat, sch, vol))
        except (ValueError, AirError):
            notes.append(f"{v.volume_id}: skipped, not a catalog.schema.volume name")
            continue
        catalogs.setdefault(cat, {}).setdefault(sch, []).append({"name": vol, "path": path, "kind": v.kind})
        count += 1
    return {
        "root": str(store.root),
        "kind": store.kind,
        "count": count,
        "notes": [redact(n) for n in notes],
        "catalogs": [
            {"name": c, "schemas": [{"name": s, "volumes": catalogs[c][s]} for s in sorted(catalogs[c])]}
            for c in sorted(catalogs)
        ],
    }


def _names(store: VolumeStore, vp: VolumePath) -> list[tuple[str, bool]]:
    """(name, is_dir) of a folder's children, folders first, each group sorted; reused for a moment
    so that paging through a huge folder lists it once, not once per page."""
    key = (f"{store.kind}:{store.root}", str(vp))
    now = time.monotonic()
    with _listings_lock:
        hit = _listings.get(key)
        if hit and now - hit[0] < _LISTING_TTL:
            _listings.move_to_end(key)
            return hit[1]
    entries = store.entries(vp, recursive=False, with_dirs=True, stat=False)  # names only: one readdir
    if len(entries) == 1 and entries[0].rel == "":
        raise VolumePathError(f"{str(vp)!r} is a file, not a folder: list its folder {str(vp.parent)!r} instead")
    names = [(e.rel, True) for e in entries if e.is_dir] + [(e.rel, False) for e in entries if not e.is_dir]
    with _listings_lock:
        _listings[key] = (now, names)
        _listings.move_to_end(key)
        while len(_listings) > _LISTINGS_KEPT:
            _listings.popitem(last=False)
    return names


def _entry(store: VolumeStore, vp: VolumePath, name: str, is_dir: bool) -> dict[str, Any]:
    child = vp / name
    out: dict[str, Any] = {"name": name, "path": str(child), "is_dir": is_dir, "size": None, "mtime": None}
    try:
        st = store.stat(child)
    except (AirError, OSError):  # vanished since the listing, or a link leaving the volume
        return out
    out.update(size=None if st.is_dir else st.size, mtime=st.mtime, is_dir=is_dir or st.is_dir)
    return out


def list_folder(path: str, offset: int = 0, limit: int = PAGE_DEFAULT) -> dict[str, Any]:
    """One page of a folder's direct children (folders first), with sizes and mtimes.

    Only the page's entries are stat'ed, so a folder of 100,000 files costs one readdir (reused
    for a moment across pages) plus ``limit`` stats per request."""
    if offset < 0 or not 1 <= limit <= PAGE_MAX:
        raise ValueError(f"offset {offset} must be >= 0 and limit {limit} between 1 and {PAGE_MAX}")
    vp = VolumePath.parse(path)
    store = _store()
    names = _names(store, vp)
    page = names[offset : offset + limit]
    entries = list(_stat_pool.get().map(lambda item: _entry(store, vp, *item), page))
    end = offset + len(page)
    return {
        "path": str(vp),
        "offset": offset,
        "limit": limit,
        "total": len(names),
        "next_offset": end if end < len(names) else None,
        "entries": entries,
    }


# -- cache ----------------------------------------------------------------------------------------
# the cache document's numbers: every key of its event but the root, and the status layer's times
_CACHE_NUMBERS = (*(k for k in CacheEvent.keys() if k != "root"), "updated", "snapshot_time")


def _cache_doc() -> dict[str, Any] | None:
    """The ``cache`` status document with wrongly typed fields set to null (the viewers then show "?")."""
    doc = read_status("cache")
    if doc is None:
        return None
    out = dict(doc)
    for k in _CACHE_NUMBERS:
        if k in out and out[k] is not None and _num(out[k]) is None:
            out[k] = None
    if "root" in out and not isinstance(out["root"], str):
        out["root"] = None
    return out


def cache_summary() -> dict[str, Any]:
    """The shared cache statistics and the current loader's timing: what ``%air_volume cache`` shows."""
    from ..status import current_loaders

    loader, loaders = current_loaders()
    return {"cache": _cache_doc(), "loader": loader, "loaders": loaders}


def training() -> dict[str, Any]:
    """The latest run's training chart (:func:`air_magics.charts.training_spec`: one series per
    rank when ranks run; ``spec`` null before a loader has a history) and its one-line text."""
    from ..charts import training_line, training_spec
    from ..status import current_loaders

    spec = training_spec(current_loaders()[1])
    return {"spec": spec, "text": training_line(spec)}


def clear_cache(reset_stats: bool = False) -> dict[str, Any]:
    """Drop the cached files of this server's cache (``AIR_CACHE_DIR`` or ``$AIR_HOME/cache``).

    Never a root named by a status document: any process may write one, so it cannot be allowed
    to choose what gets deleted. Files used in the last ``pin_seconds`` (a training loop may hold
    their paths) are kept and counted; sources are never touched."""
    from ..cache import FileCache

    cache = FileCache()
    report = cache.clear(reset_stats=reset_stats)
    return {
        "removed": report.removed,
        "kept": report.kept,
        "bytes_removed": report.bytes,
        "pin_seconds": report.pin_seconds,
        "root": str(cache.root),
        "summary": str(report),
        **cache_summary(),
    }


# -- jobs -----------------------------------------------------------------------------------------
def _num(value: Any) -> float | None:
    """A number from a status document, or None (documents are data: never trust their types)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _fraction(done: Any, total: Any) -> float | None:
    d, t = _num(done), _num(total)
    return None if d is None or not t else max(0.0, min(1.0, d / t))


def _progress(doc: dict[str, Any]) -> float | None:
    if doc.get("kind") == "copy":
        p = _fraction(doc.get("files_done", 0), doc.get("files_total"))
    elif doc.get("kind") == "export":
        p = _fraction(doc.get("tasks_done", 0), doc.get("tasks"))
    elif doc.get("kind") == "pack":
        p = _fraction(doc.get("bytes_done", 0), doc.get("bytes_total")) if _num(doc.get("bytes_total")) else None
        p = _fraction(doc.get("files_done", 0), doc.get("files_total")) if p is None else p
    else:
        p = None
    return 1.0 if p is None and doc.get("state") == "done" else p


def jobs(recent: float = RECENT_JOBS, now: float | None = None) -> dict[str, Any]:
    """Copies, exports and pack runs running, or finished in the last *recent* seconds, newest first.

    Each job has exactly the keys of its event's document (:data:`JOB_EVENTS`; missing ones are
    null) plus :data:`JOB_EXTRA`: ``progress`` is 0..1 (None when unknown); a running job whose
    document stopped being updated is marked ``stale`` (its process was killed)."""
    now = time.time() if now is None else now
    out = []
    for doc in list_status("job-"):
        if not isinstance(doc, dict):
            continue
        updated = _num(doc.get("updated")) or 0.0
        running = doc.get("state") == "running"
        if not running and now - (_num(doc.get("finished")) or updated) > recent:
            continue
        name = str(doc.get("name", ""))
        kind = doc.get("kind") or (name.split("-", 2)[1] if name.count("-") >= 2 else None)
        event = JOB_EVENTS.get(kind) if isinstance(kind, str) else None
        if event is None:  # another program's document, or a kind this version does not know
            continue
        job = {k: doc.get(k) for k in event.keys()}
        if not isinstance(job["job"], str) or not job["job"]:
            job["job"] = name.split("-", 2)[-1]
        job.update(
            kind=kind,
            name=name,
            updated=_num(doc.get("updated")),
            progress=_progress(doc),
            stale=running and (now - updated > STALE_AFTER or not _pid_alive(doc.get("pid"))),
        )
        out.append(job)
        if len(out) >= MAX_JOBS:
            break
    return {"jobs": out, "now": now}


def _pid_alive(pid: Any) -> bool:
    """False only when the job's process is known to be gone (same machine, pid not running)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return True
    return pid_alive(pid)


# -- checkpoints ----------------------------------------------------------------------------------
def checkpoints(limit: int = MAX_CHECKPOINTS) -> dict[str, Any]:
    """The most recently active checkpoint folders: committed steps, latest, recent saves with state
    (saves whose step was pruned since are left out: the folder no longer holds them), and their time
    line (:func:`air_magics.charts.saves.save_timeline`)."""
    from ..charts.saves import save_timeline, volume_rate
    from ..checkpoints.commit import checkpoint_status, save_state

    out = []
    loaders = current_loaders()[1]  # the step rate drawn above each folder's time line
    for doc in [d for d in list_status("checkpoints-") if isinstance(d, dict)][:limit]:
        directory = doc.get("directory")
        item: dict[str, Any] = {
            "name": doc.get("name"),
            "directory": directory,
            "keep": doc.get("keep"),
            "latest": doc.get("latest"),
            "steps": [],
            "pending": [],
            "saves": doc.get("saves", []),
            "updated": doc.get("updated"),
            "error": None,
            "timeline": None,
        }
        try:
            st = checkpoint_status(directory)
            # a save the manager's retention rule pruned since is gone from the volume: not listed
            saves = [s for s in st["saves"] if save_state(s, st["steps"]) != "pruned"]
            item.update(latest=st["latest"], steps=st["steps"], pending=st["pending"], saves=saves)
            item["timeline"] = save_timeline({"saves": saves}, loaders, volume=volume_rate(directory))
        except (AirError, OSError, TypeError, ValueError) as exc:  # volume gone, unreadable, malformed document
            error = str(exc) if isinstance(exc, AirError) else f"{type(exc).__name__}: {exc}"
            item["error"] = redact(error, keep=[directory] if isinstance(directory, str) else [])
        out.append(item)
    return {"checkpoints": out}
