"""``%air_volume ls``: a folder's files with their size distribution and advice, or what a catalog or
schema holds (``/Volumes``, ``/Volumes/c``, ``/Volumes/c/s``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from IPython.core.error import UsageError

from ...volumes import VolumePath
from ...volumes.path import parse_namespace
from ...volumes.summary import DEFAULT_ROWS, ListingSummary, NamespaceListing
from ...volumes.walk import Entry
from .._state import default_volume, store
from .command import Command, option

__all__ = ["LS", "ListingProgress"]


def _ls(magics: Any, args: Any) -> Any:
    st = store()
    target = args.args[0] if args.args else ""
    default = default_volume(magics)
    if not target and default is None:
        raise UsageError(
            "%air_volume ls needs a PATH (or set a default volume with %air_volume use catalog.schema.volume)"
        )
    parts = parse_namespace(target)
    if parts is not None:  # /Volumes, a catalog or a schema: what it holds, one level down
        if args.recursive or args.pattern:
            raise UsageError(f"-r/--pattern list inside a volume; {target} is above volume level")
        from ...volumes import catalog_volumes

        if catalog_volumes.connection() is not None:  # with the catalog's empty catalogs and schemas too
            from .connect_cmd import catalog_namespace

            return catalog_namespace(parts)
        return NamespaceListing.of(parts, st.volumes())
    vp = VolumePath.parse(target or ".", default=default)
    # a pattern naming subfolders ('train/*/x.bin', '**/*.png') can only match below PATH
    recursive = args.recursive or bool(args.pattern and ("/" in args.pattern or "**" in args.pattern))
    base, rows = _listing_rows(st, vp, recursive, args.pattern)
    delta = None if recursive or args.pattern else _delta_note(st, vp)
    return ListingSummary(
        str(vp), rows, base, recursive, args.pattern, _packed_note(st, vp), delta, limit=_limit(args.limit)
    )


def _delta_note(st: Any, vp: VolumePath) -> str | None:
    """What a Delta table folder holds (its latest version), shown instead of its files; None for
    any other folder. A table that cannot be read says why in the same line."""
    from ...errors import AirError
    from ...tablefiles.delta import describe_delta, is_delta_folder

    try:
        loc = st.locate(vp)
    except (AirError, OSError):
        return None
    if not loc.is_local or not is_delta_folder(loc.path):
        return None
    try:
        return describe_delta(loc.path, str(vp))
    except AirError as exc:
        return f"Delta table, unreadable: {exc} (ls -r lists its files)"


def _listing_rows(st: Any, vp: VolumePath, recursive: bool, pattern: str | None) -> tuple[VolumePath, Sequence[Entry]]:
    """The raw rows ``ls`` summarizes and the folder they are relative to (a glob's fixed part),
    without the files air_magics keeps for itself in a user's folder (a pack's lock)."""
    from ...shards.dest import LOCK_NAME

    with ListingProgress(str(vp)) as progress:
        stats = st.file_stats(vp, progress=progress, drop=(LOCK_NAME,)) if recursive and not pattern else None
        if stats is not None:  # a folder on this disk: the files' columns, no object per file
            return vp, stats
        base, rows = st.listing(vp, recursive=recursive, pattern=pattern, progress=progress)
    return base, [e for e in rows if not e.rel.endswith(LOCK_NAME) or e.rel.rpartition("/")[2] != LOCK_NAME]


class ListingProgress:
    """A ``\\r``-rewritten line while a listing runs long (a notebook's stream output rewrites it
    too): nothing for a listing under :attr:`after` seconds, then its count so far."""

    after = 1.0

    def __init__(self, what: str) -> None:
        self.what, self.shown = what, False
        self.start = time.monotonic()

    def __call__(self, n: int) -> None:
        if time.monotonic() - self.start >= self.after:
            print(f"\rlisting {self.what}: {n:,} entries so far", end="", flush=True)
            self.shown = True

    def __enter__(self) -> ListingProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.shown:
            print(f"\rlisting {self.what}: done in {time.monotonic() - self.start:.1f} s", flush=True)


def _limit(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_ROWS
    if limit < 0:
        raise UsageError(f"--limit {limit}: give the number of rows to show (0 or more)")
    return int(limit)


def _packed_note(st: Any, vp: VolumePath) -> str | None:
    """One line on what a packed folder holds, or None for any other folder."""
    from ...errors import AirError
    from ...io.units import fmt_bytes, plural
    from ...shards import open_packed

    try:
        packed = open_packed(st, vp)
    except AirError as exc:  # a damaged packed folder is still listed; say what is wrong with it
        return f"packed folder, unreadable: {exc}"
    except OSError:
        return None
    if packed is None:
        return None
    m = packed.manifest
    return (
        f"packed folder: {plural(m.files, 'member')} ({fmt_bytes(m.bytes)}) in {plural(len(m.shards), 'shard')}, generation "
        f"{m.generation}, packed from {m.source}; read it with UCVolumeDataset({str(vp)!r})"
    )


LS = Command(
    "ls",
    "[PATH]",
    (0, 1),
    "a folder's files, size distribution, advice; above volume level: /Volumes the catalogs, /Volumes/c its "
    "schemas, /Volumes/c/s its volumes",
    _ls,
    (
        option("-r", "--recursive", action="store_true", help="list every file below PATH"),
        option(
            "--limit",
            type=int,
            metavar="N",
            help=f"rows to show (default {DEFAULT_ROWS}); the counts and sizes always cover every file",
        ),
        option(
            "--pattern",
            metavar="GLOB",
            help="only entries matching GLOB (e.g. '*.jpg', 'train/**/*.png'); a GLOB with '/' or '**' looks "
            "below PATH as -r does",
        ),
    ),
    paths=True,
)
