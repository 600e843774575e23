"""Summaries of a listing: counts, size distribution and the small-files advice.

Plain values with ``_repr_html_`` (notebooks) and ``__repr__`` (terminals); no IPython import.
Why the advice: per-file latency dominates reads from remote volumes, so folders of many small
files should be copied to local disk once (``%%air_copy``) or packed into 1-10 GiB files.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from html import escape
from shlex import quote

from ..errors import VolumeNotFoundError, VolumePathError
from ..io.units import fmt_bytes
from .detect import volumes_mount_status
from .filestats import FileStats, size_stats
from .location import FileInfo, VolumeInfo
from .path import VolumePath
from .walk import Entry

__all__ = [
    "ListingSummary",
    "NamespaceListing",
    "VolumesOverview",
    "fmt_bytes",
    "pack_suggestion",
    "SMALL_FILE_BYTES",
    "MANY_FILES",
    "DEFAULT_ROWS",
    "HISTOGRAM_BOUNDS",
]

SMALL_FILE_BYTES = 1 << 20  # median below this counts as "small"
MANY_FILES = 500  # ... when a folder holds at least this many files
_BUCKETS = [
    (64 << 10, "< 64 KiB"),
    (1 << 20, "64 KiB - 1 MiB"),
    (16 << 20, "1 - 16 MiB"),
    (256 << 20, "16 - 256 MiB"),
    (1 << 30, "256 MiB - 1 GiB"),
    (None, ">= 1 GiB"),
]
_BOUNDS = [limit for limit, _ in _BUCKETS if limit is not None]
HISTOGRAM_BOUNDS = [1 << (10 + 2 * i) for i in range(12)]  # 1 KiB, 4 KiB, ... 4 GiB: the histogram's bins
DEFAULT_ROWS = 50  # rows ``%air_volume ls`` shows unless --limit says otherwise


def pack_suggestion(path: str | VolumePath, pattern: str | None = None) -> str:
    """The ``%air_volume pack`` command(s) that pack folder *path*, with a destination pack accepts.

    The destination may not be inside the source, so a folder packs into a sibling
    (``.../imgs`` -> ``.../imgs_packed``); a whole volume can only pack into another volume, which
    is created first (``main.me.raw`` -> ``main.me.raw_packed``)."""
    src = VolumePath.parse(path)
    pat = f" --pattern {quote(pattern)}" if pattern else ""
    try:
        if not src.is_root:
            return f"`%air_volume pack {quote(str(src))} {quote(str(src.parent / (src.name + '_packed')))}{pat}`"
        dest = VolumePath(src.catalog, src.schema, src.volume + "_packed")
    except VolumePathError:  # a name too long for the suffix: the user names the destination
        return f"`%air_volume pack {quote(str(src))} DEST{pat}` (DEST: a folder outside {src})"
    return (
        f"`%air_volume create {dest.volume_id}` then `%air_volume pack {quote(str(src))} {quote(str(dest))}{pat}` "
        f"(a whole volume packs into another volume)"
    )


@dataclass
class ListingSummary:
    """What ``%air_volume ls`` shows: the first rows of a listing and statistics over all its files.

    Made from the raw listing rows (:class:`~air_magics.volumes.walk.Entry`, relative to *base*) in
    one pass: a million files cost their walk, not a :class:`FileInfo` each. ``entries``,
    ``files`` and ``folders`` (full :class:`FileInfo` lists) are made on first use. ``limit``
    bounds the rows shown (the statistics always cover everything).
    """

    path: str
    rows: Sequence[Entry]
    base: VolumePath
    recursive: bool = False
    pattern: str | None = None
    packed: str | None = None  # what a packed folder holds (shards, members, generation), shown first
    delta: str | None = None  # a Delta table: "Delta table, version N, K files, R rows", shown instead of files
    limit: int = DEFAULT_ROWS

    def __post_init__(self) -> None:
        if self.limit < 0:
            raise ValueError(f"limit={self.limit}: give the number of rows to show (0 or more)")
        sizes = self._sizes()
        self.total_bytes, self._counts, self.median_size = size_stats(sizes, _BOUNDS)
        self.n_files = len(sizes)
        self.n_folders = len(self.rows) - self.n_files

    def _sizes(self) -> array:
        if isinstance(self.rows, FileStats):  # files alone, as columns (``ls -r`` on this disk)
            return self.rows.sizes
        return array("q", [e.size or 0 for e in self.rows if not e.is_dir])

    def size_histogram(self) -> list[tuple[int, int | None, int]]:
        """``(from, to, files)`` per power-of-4 size bin (``from`` included, ``to`` excluded, ``None``:
        no upper end), from the first bin holding a file to the last: the finer shape of
        :meth:`distribution` that a chart draws. One more pass over the sizes, made on demand."""
        _, counts, _ = size_stats(self._sizes(), HISTOGRAM_BOUNDS)
        held = [i for i, c in enumerate(counts) if c]
        if not held:
            return []
        edges = [0, *HISTOGRAM_BOUNDS, None]
        return [(edges[i] or 0, edges[i + 1], counts[i]) for i in range(held[0], held[-1] + 1)]

    @cached_property
    def entries(self) -> list[FileInfo]:
        """Every entry as a :class:`FileInfo` (made on first use)."""
        return [FileInfo(self.base.joinpath(e.rel), e.size or 0, e.mtime or 0.0, e.is_dir) for e in self.rows]

    @property
    def files(self) -> list[FileInfo]:
        return [e for e in self.entries if not e.is_dir]

    @property
    def folders(self) -> list[FileInfo]:
        return [e for e in self.entries if e.is_dir]

    def distribution(self) -> list[tuple[str, int]]:
        """``(bucket label, file count)`` for the non-empty size buckets."""
        return [(label, c) for (_, label), c in zip(_BUCKETS, self._counts, strict=True) if c]

    def advice(self) -> str | None:
        """The small-files hint, or ``None`` when the folder is fine as it is."""
        if self.delta:  # a table's files are the log's business, not a folder to copy or pack
            return None
        n = self.n_files
        if n < MANY_FILES or self.median_size >= SMALL_FILE_BYTES:
            return None
        return (
            f"{n:,} files with a median size of {fmt_bytes(self.median_size)}: reading many small files "
            f"from a volume is latency-bound. Copy them to local disk once with "
            f"`%%air_copy --to /local_disk0/...` (or use UCVolumeDataset's cache), or pack them into "
            f"1-10 GiB tar shards: {pack_suggestion(self.path, self.pattern)} "
            f"(UCVolumeDataset reads the packed folder like this one)."
        )

    def _head(self) -> str:
        what = f"{self.n_files:,} file{'' if self.n_files == 1 else 's'}"
        if self.n_folders:
            what += f", {self.n_folders:,} folder{'' if self.n_folders == 1 else 's'}"
        mode = " (recursive)" if self.recursive else ""
        pat = f" matching {self.pattern!r}" if self.pattern else ""
        return f"{self.path}{mode}{pat}: {what}, {fmt_bytes(self.total_bytes)}"

    def _rows(self) -> list[tuple[str, str, str]]:
        prefix = "" if str(self.base) == self.path.rstrip("/") else f"{self.base}/"  # a glob: full paths
        rows = []
        for e in self.rows[: self.limit]:
            name = f"{prefix}{e.rel}" if e.rel else str(self.base)
            if e.is_dir:
                rows.append((name + "/", "", ""))
            else:
                mtime = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.mtime or 0.0))
                rows.append((name, fmt_bytes(e.size or 0), mtime))
        return rows

    def _more(self) -> int:
        return max(0, len(self.rows) - self.limit)

    def __repr__(self) -> str:
        if self.delta:
            return f"{self.path}: {self.delta}"
        lines = [self._head()] + ([self.packed] if self.packed else [])
        dist = self.distribution()
        if dist:
            lines.append("sizes: " + ", ".join(f"{label}: {c:,}" for label, c in dist))
        width = max([len(r[0]) for r in self._rows()] + [4])
        lines += [f"  {n:<{width}}  {s:>10}  {m}".rstrip() for n, s, m in self._rows()]
        if self._more():
            lines.append(f"  ... {self._more():,} more (--limit N shows more rows)")
        if tip := self.advice():
            lines.append("tip: " + tip)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        if self.delta:
            return f"<div><b>{escape(self.path)}</b>: {escape(self.delta)}</div>"
        dist = "".join(
            f"<tr><td>{escape(label)}</td><td style='text-align:right'>{c:,}</td></tr>"
            for label, c in self.distribution()
        )
        rows = "".join(
            f"<tr><td><code>{escape(n)}</code></td><td style='text-align:right'>{escape(s)}</td><td>{escape(m)}</td></tr>"
            for n, s, m in self._rows()
        )
        more = f"<p>... {self._more():,} more (--limit N shows more rows)</p>" if self._more() else ""
        tip = (
            f"<p style='padding:4px;border-left:3px solid #f9a825'>&#9888; {escape(t)}</p>"
            if (t := self.advice())
            else ""
        )
        dist_t = f"<table><tr><th>size</th><th>files</th></tr>{dist}</table>" if dist else ""
        packed = f"<p>{escape(self.packed)}</p>" if self.packed else ""
        return (
            f"<div><b>{escape(self._head())}</b>{packed}{dist_t}"
            f"<table><tr><th>name</th><th>size</th><th>modified</th></tr>{rows}</table>{more}{tip}</div>"
        )


@dataclass
class NamespaceListing:
    """What ``%air_volume ls`` shows above volume level: the catalogs (``/Volumes``), a catalog's
    schemas (``/Volumes/main``) or a schema's volumes (``/Volumes/main/demo``), each as a path."""

    path: str
    level: str  # "catalogs", "schemas" or "volumes"
    rows: list[tuple[str, str]]  # (the /Volumes/... path, what it holds or where it lives)

    @classmethod
    def of(cls, parts: tuple[str, ...], volumes: list[VolumeInfo]) -> NamespaceListing:
        """The listing of catalog/schema *parts* (``()`` for all catalogs) over *volumes*; one that
        matches no volume is a ``VolumeNotFoundError`` naming what does exist."""
        path = "/".join(("/Volumes", *parts))
        level = ("catalogs", "schemas", "volumes")[len(parts)]
        below: dict[str, list[VolumeInfo]] = {}
        for v in volumes:
            ids = v.volume_id.split(".")
            if ids[: len(parts)] == list(parts):
                below.setdefault(ids[len(parts)], []).append(v)
        if not below:
            kind = ("catalog", "schema")[len(parts) - 1] if parts else None
            if kind is None:
                raise VolumeNotFoundError("no volumes yet: create one with `%air_volume create catalog.schema.volume`")
            others = sorted(  # the ones beside it: a catalog's other schemas, the other catalogs
                {
                    ".".join(ids[: len(parts)])
                    for v in volumes
                    if (ids := v.volume_id.split("."))[: len(parts) - 1] == list(parts[:-1])
                }
            )
            have = f" ({kind}s with volumes: {', '.join(others)})" if others else ""
            raise VolumeNotFoundError(
                f"{path}: no {kind} {'.'.join(parts)!r} holds a volume{have}; create one with "
                f"`%air_volume create {'.'.join(parts)}{'.schema' if len(parts) == 1 else ''}.volume`"
            )
        rows = []
        for name in sorted(below):
            vs = below[name]
            if level == "volumes":
                detail = f"{vs[0].kind} {vs[0].location}"
            else:
                schemas = {v.volume_id.split(".")[1] for v in vs}
                detail = (f"{len(schemas)} schema{'s' * (len(schemas) != 1)}, " if level == "catalogs" else "") + (
                    f"{len(vs)} volume{'s' * (len(vs) != 1)}"
                )
            rows.append((f"{path}/{name}", detail))
        return cls(path, level, rows)

    @property
    def names(self) -> list[str]:
        return [p.rsplit("/", 1)[1] for p, _ in self.rows]

    def __repr__(self) -> str:
        width = max(len(p) for p, _ in self.rows)
        head = f"{self.path}: {len(self.rows)} {self.level if len(self.rows) != 1 else self.level[:-1]}"
        return "\n".join([head] + [f"  {p:<{width}}  {d}" for p, d in self.rows])

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td><code>{escape(p)}</code></td><td>{escape(d)}</td></tr>" for p, d in self.rows)
        return f"<div><b>{escape(repr(self).splitlines()[0])}</b><table>{rows}</table></div>"


@dataclass
class VolumesOverview:
    """What ``%air_volume`` with no arguments shows: where volumes resolve and which exist."""

    root: str
    kind: str
    registry: str
    default_volume: str | None
    volumes: list[VolumeInfo]
    why: str | None = None  # why the root is a mount or the embedded one; None: worked out here

    def __post_init__(self) -> None:
        if self.why is None and self.kind in ("mount", "embedded"):
            self.why = volumes_mount_status()[1]

    def __repr__(self) -> str:
        lines = [
            f"volumes resolve to: {self.root} ({self.kind})" + (f"; {self.why}" if self.why else ""),
            f"registry: {self.registry}",
            f"default volume: {self.default_volume or '(none; set with %air_volume use catalog.schema.volume)'}",
        ]
        if not self.volumes:
            lines.append("no volumes yet: %air_volume create catalog.schema.volume")
        lines += [
            f"  /Volumes/{v.volume_id.replace('.', '/'):<40} {v.kind:<8} {v.location}{_endpoint(v)}"
            for v in self.volumes
        ]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>/Volumes/{escape(v.volume_id.replace('.', '/'))}</code></td><td>{escape(v.kind)}</td>"
            f"<td><code>{escape(v.location)}</code>{escape(_endpoint(v))}</td></tr>"
            for v in self.volumes
        )
        empty = "" if self.volumes else "<p>No volumes yet: <code>%air_volume create catalog.schema.volume</code></p>"
        return (
            f"<div><b>Volumes resolve to</b> <code>{escape(self.root)}</code> ({escape(self.kind)}"
            f"{'; ' + escape(self.why) if self.why else ''}); "
            f"default volume: <code>{escape(self.default_volume or 'none')}</code>"
            f"<table><tr><th>volume</th><th>kind</th><th>location</th></tr>{rows}</table>{empty}</div>"
        )


def _endpoint(v: VolumeInfo) -> str:
    """`` (endpoint URL)`` for a registered volume: the stored one, or where the backend's default
    chain sends it now; "" for a local or mounted volume."""
    if v.kind != "fsspec" or v.location.startswith(("file:", "local:", "memory:")):
        return ""
    from .access import endpoint_of

    return f" (endpoint {v.endpoint or endpoint_of(v.location.partition('://')[0].lower(), v.options or {})})"
