"""The cache's self-check: compare the index with the files on disk, report each disagreement, and
repair what crashed processes left (``FileCache.check``).

Why: a process killed mid-fetch leaves a temp file, a row claimed for a fetch that never ended, a
shard folder half extracted or its overflow folder; a person may delete files behind the cache's
back. Each costs disk the limit does not see, or an entry that points at nothing. The check walks
``<root>/files`` once and reads the index once, and finds:

* ``row without file``: an entry whose file (or extracted folder) is gone;
* ``file without row``: a file or extracted folder under ``files/`` the index does not count;
* ``size mismatch`` / ``mtime mismatch``: a file whose size, or modification time (a fetched copy
  carries its source's), is not its entry's;
* ``temp file``: a fetch's temp file, a shard's part file or a staging folder whose writer is dead;
* ``fetch never finished``: an entry claimed for a fetch (``PENDING``) that no live process runs;
* ``dead overflow folder``: a dead process's overflow folder or lock file;
* ``orphan marker``: a shard's completion marker or lock without its folder or shard.

Repair (``repair=True``) removes each of those under the lock its writer would hold (the key's
stripe, the shard's fetch lock), skipping anything a live process holds, so it is safe while other
processes use the cache. The cached copies are never the only copy of anything (eviction spares
those), so removing a doubtful one costs at most a fetch.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..io.leftovers import is_leftover, owner_pid
from ..io.locks import ProcessFileLock
from ..io.process import pid_alive
from ..io.versions import same_version
from ..volumes.resolved import slot_of
from .entries import PENDING, Entries
from .liveness import dead_folders, sweep_dead
from .stripes import Stripes

__all__ = ["Finding", "CheckReport", "run_check"]

_SIDECARS = (".lock", ".complete", ".tmp", ".part", ".part-new")  # beside a shard's slot (shards.fetch/cached)
_DERIVED_TAIL = 9  # "@" + 8 hex digits: a shard's key (claimed entries, see .claims)


@dataclass(frozen=True)
class Finding:
    """One disagreement: its kind, the path it is about, and whether the repair fixed it."""

    kind: str
    path: str
    repaired: bool = False

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}" + (" (repaired)" if self.repaired else "")


@dataclass(frozen=True)
class CheckReport:
    """What :func:`run_check` found (``ok``: nothing), and whether it repaired."""

    root: str
    entries: int
    findings: tuple[Finding, ...] = field(default=())
    repair: bool = False

    @property
    def ok(self) -> bool:
        """True when the index and the files agree (nothing left unrepaired, with ``repair``)."""
        return all(f.repaired for f in self.findings) if self.repair else not self.findings

    def kinds(self) -> dict[str, int]:
        """How many findings of each kind."""
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.kind] = out.get(f.kind, 0) + 1
        return out

    def __str__(self) -> str:
        if not self.findings:
            return f"cache {self.root}: {self.entries:,} entries, index and files agree"
        fixed = sum(f.repaired for f in self.findings)
        head = f"cache {self.root}: {self.entries:,} entries, {len(self.findings):,} problems"
        head += f" ({fixed:,} repaired)" if self.repair else " (check(repair=True) or --repair fixes them)"
        lines = [head] + [f"  {f}" for f in self.findings[:50]]
        if len(self.findings) > 50:
            lines.append(
                f"  ... and {len(self.findings) - 50:,} more: "
                + ", ".join(f"{k} {n:,}" for k, n in self.kinds().items())
            )
        return "\n".join(lines)


def _derived(name: str) -> bool:
    tail = name[-_DERIVED_TAIL:]
    return len(name) > _DERIVED_TAIL and tail[0] == "@" and all(c in "0123456789abcdef" for c in tail[1:])


def _free_lock(path: str) -> ProcessFileLock | None:
    """The lock at *path* taken (nobody holds it), or None while a live process does."""
    lock = ProcessFileLock(path)
    try:
        lock.acquire(timeout=0)
    except TimeoutError:
        lock.close()
        return None
    return lock


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def run_check(
    root: Path, entries: Entries, stripes: Stripes, *, repair: bool, verify_root: Callable[[], None]
) -> CheckReport:
    """Compare the cache at *root* (its index *entries*, its *stripes*) with its files; see the module."""
    verify_root()
    files = str(root / "files")
    rows = {k: (local, size, mtime) for k, local, size, mtime in entries.all_rows()}
    findings: list[Finding] = []

    def fix(kind: str, path: str, key: str | None, action: Callable[[], bool]) -> None:
        """Report *path*; with repair, run *action* under *key*'s stripe (and a shard's fetch lock),
        unless a live process holds either."""
        done = False
        if repair:
            with stripes.try_held(stripes.of(key or path), 0.0) as held:
                lock = None
                if held and key and _derived(key) and os.path.exists(slot_of(files, key) + ".lock"):
                    lock = _free_lock(slot_of(files, key) + ".lock")
                    held = lock is not None
                if held:
                    try:
                        done = action()
                    finally:
                        if lock is not None:
                            lock.release()
                            lock.close()
        findings.append(Finding(kind, path, done))

    # -- the index against the disk -------------------------------------------------------------
    seen: set[str] = set()
    for key, (local, size, mtime) in rows.items():
        if not local.startswith(files + "/") or local != slot_of(files, key):
            continue  # not the cache's own path (eviction refuses those): left alone
        try:
            st = os.stat(local)
        except FileNotFoundError:
            st = None
        if mtime == PENDING:
            seen.add(local)

            def drop_pending(key: str = key, local: str = local) -> bool:
                if entries.row(key) is None or entries.row(key)[1] != PENDING:  # type: ignore[index]
                    return False
                entries.forget(key)
                _remove(local)
                return True

            fix("fetch never finished", local, key, drop_pending)
            continue
        if st is None:
            fix("row without file", local, key, lambda key=key: (entries.forget(key), True)[1])
            continue
        seen.add(local)
        if _derived(key):
            continue  # a shard or extracted folder: named after its content
        if st.st_size != size or not same_version(size, st.st_mtime, size, mtime):
            kind = "size mismatch" if st.st_size != size else "mtime mismatch"

            def drop(key: str = key, local: str = local) -> bool:
                entries.forget(key)
                _remove(local)
                return True

            fix(kind, local, key, drop)

    # -- the disk against the index -------------------------------------------------------------
    for dirpath, dirnames, names in os.walk(files):
        for name in list(dirnames):
            path = os.path.join(dirpath, name)
            if _derived(name):
                dirnames.remove(name)  # an extracted folder is one unit
                if path not in seen:
                    key = "/Volumes" + path[len(files) :]
                    fix("file without row", path, key, lambda path=path, key=key: _remove_unindexed(entries, key, path))
            elif name.endswith(".tmp") and _derived(name[:-4]):
                dirnames.remove(name)
                slot = path[:-4]
                fix("temp file", path, "/Volumes" + slot[len(files) :], lambda path=path: (_remove(path), True)[1])
        for name in names:
            path = os.path.join(dirpath, name)
            if is_leftover(name):
                pid = owner_pid(name)
                if pid is not None and not pid_alive(pid):
                    fix("temp file", path, None, lambda path=path: (_remove(path), True)[1])
                continue
            side = next((s for s in _SIDECARS if name.endswith(s) and _derived(name[: -len(s)])), None)
            if side is not None:
                slot = path[: -len(side)]
                key = "/Volumes" + slot[len(files) :]
                if side in (".part", ".part-new"):
                    fix("temp file", path, key, lambda path=path: (_remove(path), True)[1])
                elif slot not in seen:
                    fix("orphan marker", path, key, lambda path=path: (_remove(path), True)[1])
                continue
            if path not in seen:
                key = "/Volumes" + path[len(files) :]
                if key in rows:
                    continue  # a row whose local path is not its own: reported above or left alone
                fix("file without row", path, key, lambda path=path, key=key: _remove_unindexed(entries, key, path))

    # -- dead processes' overflow folders -------------------------------------------------------
    base = root / "overflow"
    dead = dead_folders(base)
    swept = set(sweep_dead(base)) if repair and dead else set()
    findings += [Finding("dead overflow folder", str(base / n), n in swept) for n in dead]
    findings = [f for f in findings if not (repair and not f.repaired and _gone_meanwhile(f))]
    return CheckReport(str(root), len(rows), tuple(findings), repair)


def _gone_meanwhile(f: Finding) -> bool:
    """A finding whose path another process removed while the check ran (a live fetch's temp
    file, an eviction): nothing to repair."""
    return f.kind in ("temp file", "file without row") and not os.path.lexists(f.path)


def _remove_unindexed(entries: Entries, key: str, path: str) -> bool:
    """Remove *path*, found without a row, unless its row has landed since the index was read (a
    fetch that finished meanwhile: the caller holds the key's stripe, so none can land now)."""
    if entries.row(key) is not None:
        return False
    _remove(path)
    return True
