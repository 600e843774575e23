"""Delta tables: a snapshot of a ``_delta_log`` folder, resolved to its live Parquet files.

Why: a Delta table's folder holds every file any version ever wrote; only the log says which are
live. Reading the folder as plain Parquet returns removed rows (an overwrite's old files, a
delete's rewritten ones). A snapshot is read with ``deltalake`` (delta-rs: no JVM, no Spark) and
turned into what the Parquet path already streams: one entry per live file with its partition
values and, where a deletion vector applies, the mask of its rows still live (``deltalake``'s
``DeltaTable.deletion_vectors()``). The files themselves are then read raw with pyarrow, row
group by row group, so batching, shuffling, splitting and exact resume are the Parquet path's.

Honoured reader features: :data:`HONOURED_FEATURES` (deletion vectors as row masks, column mapping
by physical name, partition columns as constants, wider types cast to the table's). A table that
needs anything else, or a reader protocol above 3, is refused with one line naming the feature;
it is never read as plain Parquet. Without ``deltalake`` a Delta folder is refused with one line
naming the extra (``pip install 'air_magics[delta]'``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from ..errors import DatasetError

__all__ = [
    "DELTA_LOG",
    "HONOURED_FEATURES",
    "DeltaError",
    "DeltaFile",
    "DeltaSnapshot",
    "FileView",
    "describe_delta",
    "is_delta_folder",
    "open_snapshot",
]

DELTA_LOG = "_delta_log"
MAX_READER_VERSION = 3
HONOURED_FEATURES = frozenset(
    {
        "deletionVectors",
        "columnMapping",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
    }
)
_EXTRA = "pip install 'air_magics[delta]' (deltalake)"
_FEATURE = re.compile(r"[Ff]eature '?([A-Za-z0-9_.-]+)'?")
_PHYSICAL = "delta.columnMapping.physicalName"


class DeltaError(DatasetError):
    """A Delta table that cannot be read as asked: deltalake missing, a feature it needs that
    this reader cannot honour, or a version that is gone (vacuumed, log cleaned up)."""


@dataclass(frozen=True)
class DeltaFile:
    """One live data file: ``rel`` below the table folder (as on disk), its partition values (logical
    column, value) and ``keep``: the deletion vector's mask of live rows (a NumPy bool array), or None."""

    rel: str
    size: int
    rows: int
    partition: tuple[tuple[str, Any], ...] = ()
    keep: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class DeltaSnapshot:
    """One version of a Delta table: its logical schema, live files and what reading them needs."""

    root: str
    version: int
    table_id: str
    schema: Any  # pyarrow.Schema, logical names, partition columns included, in table order
    partition_columns: tuple[str, ...]
    physical: dict[str, str]  # logical -> physical column name (column mapping); empty without
    files: tuple[DeltaFile, ...]
    features: tuple[str, ...]

    @property
    def rows(self) -> int:
        """Live rows: the files' record counts less the rows their deletion vectors remove (-1 when
        the log lacks a file's count: its footer has it)."""
        if any(f.rows < 0 for f in self.files):
            return -1
        return sum(
            f.rows if f.keep is None else int(f.keep[: f.rows].sum()) + max(0, f.rows - len(f.keep)) for f in self.files
        )


def is_delta_folder(path: str) -> bool:
    """Whether the local folder *path* is a Delta table (it holds a ``_delta_log`` folder)."""
    return os.path.isdir(os.path.join(path, DELTA_LOG))


def _deltalake(shown: str) -> Any:
    try:
        import deltalake
    except ImportError:
        raise DeltaError(
            f"{shown} is a Delta table (it has a {DELTA_LOG} folder) and reading it needs deltalake: {_EXTRA}; "
            f"it is never read as plain Parquet (that would return removed rows)"
        ) from None
    return deltalake


def _refuse_protocol(shown: str, protocol: Any) -> None:
    """One line naming what this reader cannot honour, or nothing."""
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise DeltaError(
            f"{shown} needs Delta reader version {protocol.min_reader_version} (this reader knows up to "
            f"{MAX_READER_VERSION}); read it with a newer engine or export it with Spark"
        )
    unknown = sorted(set(protocol.reader_features or ()) - HONOURED_FEATURES)
    if unknown:
        raise DeltaError(
            f"{shown} needs the Delta reader feature {unknown[0]!r}, which this reader cannot honour; "
            f"read it with an engine that supports it (or export it with Spark to plain Parquet)"
        )


def _load(
    deltalake: Any, root: str, shown: str, version: int | None, timestamp: Any, storage_options: dict[str, str] | None
) -> Any:
    """The table at *version* / *timestamp* (default: the latest); deltalake's errors in one line."""
    try:
        dt = deltalake.DeltaTable(root, version=version, storage_options=storage_options or None)
        if timestamp is not None:
            dt.load_as_version(timestamp)
        return dt
    except Exception as exc:  # deltalake's DeltaError / DeltaProtocolError / TableNotFoundError
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        low = text.lower()
        if "catalog-managed" in low or "catalogmanaged" in low:
            raise DeltaError(
                f"{shown} needs the Delta reader feature 'catalogManaged' (its catalog owns the commits), which "
                f"this reader cannot honour; read it through its catalog's engine"
            ) from None
        if "not supported" in low or "unsupported" in low:
            m = _FEATURE.search(text)
            what = f"the Delta reader feature {m.group(1)!r}" if m else f"something deltalake cannot read ({text})"
            raise DeltaError(f"{shown} needs {what}; read it with an engine that supports it") from None
        if version is None and timestamp is None:
            raise DeltaError(f"{shown} is not a readable Delta table ({text})") from None
        at = f"version {version}" if version is not None else f"the version at {timestamp}"
        raise DeltaError(
            f"{shown} cannot be loaded at {at} ({text}); a version is gone once its log is cleaned up or vacuumed: "
            f"read the latest (no version=/timestamp=) instead"
        ) from None


def _rel(path: str, root_uri: str) -> str:
    """A log path (URL-encoded, relative) or a file URI as the file's path below the table folder."""
    if "://" in path:
        p = unquote(urlparse(path).path)
        base = unquote(urlparse(root_uri).path).rstrip("/") + "/"
        if not p.startswith(base):
            raise DeltaError(f"Delta file {path} lies outside its table folder {base}; such tables are not read here")
        return p[len(base) :]
    rel = unquote(path)
    if rel.startswith("/") or ".." in rel.split("/"):
        raise DeltaError(f"Delta file {path!r} lies outside its table folder; such tables are not read here")
    return rel


def _keep_masks(dt: Any, root_uri: str) -> dict[str, Any]:
    """rel path -> NumPy mask of the rows its deletion vector keeps (only files that have one)."""
    import numpy as np
    import pyarrow as pa

    out: dict[str, Any] = {}
    reader = pa.RecordBatchReader.from_stream(dt.deletion_vectors())
    for batch in reader:
        paths, masks = batch.column(0).to_pylist(), batch.column(1)
        for i, p in enumerate(paths):
            out[_rel(p, root_uri)] = np.asarray(masks[i].values.to_numpy(zero_copy_only=False), dtype=bool)
    return out


def open_snapshot(
    root: str,
    *,
    shown: str | None = None,
    version: int | None = None,
    timestamp: Any = None,
    storage_options: dict[str, str] | None = None,
) -> DeltaSnapshot:
    """The snapshot of the Delta table in local folder *root* (or at the object-store URL *root*, reached
    with *storage_options*) at *version* or *timestamp* (a ``datetime`` or an ISO 8601 string; default:
    the latest). *shown* names it in errors."""
    import pyarrow as pa

    shown = shown or root
    if version is not None and timestamp is not None:
        raise DeltaError(f"{shown}: give version= or timestamp=, not both")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise DeltaError(f"version={version!r} for {shown}: give a table version number (0, 1, ...)")
    deltalake = _deltalake(shown)
    dt = _load(deltalake, root, shown, version, timestamp, storage_options)
    _refuse_protocol(shown, dt.protocol())
    fields = list(dt.schema().fields)
    physical = {f.name: f.metadata[_PHYSICAL] for f in fields if _PHYSICAL in (f.metadata or {})}
    schema = pa.schema(dt.schema().to_arrow()).remove_metadata()
    schema = pa.schema([f.remove_metadata() for f in schema])
    meta = dt.metadata()
    parts = tuple(meta.partition_columns)
    logical = {physical.get(c, c): c for c in parts}  # the add actions may name partitions either way
    logical.update({c: c for c in parts})
    actions = pa.table(dt.get_add_actions(flatten=True))
    root_uri = dt.table_uri
    masks = _keep_masks(dt, root_uri) if "deletionVectors" in (dt.protocol().reader_features or ()) else {}
    cols = {n: actions.column(n).to_pylist() for n in actions.column_names if n.startswith("partition.")}
    files = []
    for i, (path, size, rows) in enumerate(
        zip(
            actions.column("path").to_pylist(),
            actions.column("size_bytes").to_pylist(),
            actions.column("num_records").to_pylist(),
            strict=True,
        )
    ):
        rel = _rel(path, root_uri)
        pv = {logical.get(n[len("partition.") :], n[len("partition.") :]): v[i] for n, v in cols.items()}
        keep = masks.get(rel)
        if rows is None:  # no statistics in the log: the footer says (read later anyway)
            rows = -1
        files.append(DeltaFile(rel, int(size), int(rows), tuple((c, pv.get(c)) for c in parts), keep))
    files.sort(key=lambda f: f.rel)
    protocol = dt.protocol()
    return DeltaSnapshot(
        root=root,
        version=int(dt.version()),
        table_id=str(meta.id),
        schema=schema,
        partition_columns=parts,
        physical=physical,
        files=tuple(files),
        features=tuple(protocol.reader_features or ()),
    )


def describe_delta(root: str, shown: str) -> str:
    """One line for listings: ``Delta table, version N, K files, R rows (size)`` and how to read it."""
    from ..io.units import fmt_bytes

    snap = open_snapshot(root, shown=shown)
    n, rows, size = len(snap.files), snap.rows, sum(f.size for f in snap.files)
    counted = f"{rows:,} rows" if rows >= 0 else "rows not counted in the log"
    parts = f", partitioned by {', '.join(snap.partition_columns)}" if snap.partition_columns else ""
    return (
        f"Delta table, version {snap.version}, {n:,} file{'s' * (n != 1)}, {counted} ({fmt_bytes(size)}){parts}; "
        f"read it with UCDataset({shown!r}) (version=N for an older one)"
    )


class FileView:
    """How one Delta file's batches become the table's: physical -> logical names, partition columns
    as constants, columns the file lacks as nulls, types cast to the table's, deletion-vector rows
    dropped. Made once per file; :meth:`conform` runs per record batch read."""

    def __init__(self, snap: DeltaSnapshot, f: DeltaFile, file_schema: Any) -> None:
        self.snap, self.keep = snap, f.keep
        self.partition = dict(f.partition)
        have = set(file_schema.names)
        self.file_types = {n: file_schema.field(n).type for n in file_schema.names}
        self._plans: dict[tuple[str, ...], tuple[Any, list[tuple[str, Any, Any]]]] = {}
        self.source = {}  # logical -> physical name present in the file
        for name in snap.schema.names:
            if name in self.partition:
                continue
            phys = snap.physical.get(name, name)
            if phys in have:
                self.source[name] = phys
            elif name in have:  # written before column mapping was turned on
                self.source[name] = name

    @property
    def trivial(self) -> bool:
        """True when the file's batches are already the table's (no renaming, constants, nulls,
        casts or deleted rows): it is then read exactly as a plain Parquet file."""
        return (
            self.keep is None
            and not self.partition
            and all(self.source.get(c) == c for c in self.snap.schema.names)
            and all(self.file_types[c] == self.snap.schema.field(c).type for c in self.snap.schema.names)
        )

    def columns(self, wanted: list[str]) -> list[str]:
        """The physical columns to read from the file for the logical columns *wanted*."""
        return [self.source[c] for c in wanted if c in self.source]

    def _plan(self, wanted: list[str]) -> tuple[Any, list[tuple[str, Any, Any]]]:
        """Per column of *wanted*: ("p", scalar) a partition constant, ("c", physical name, type) a
        file column (cast when its type differs), ("n", type) nulls; made once per column list."""
        import pyarrow as pa

        key = tuple(wanted)
        plan = self._plans.get(key)
        if plan is None:
            steps: list[tuple[str, Any, Any]] = []
            for c in wanted:
                typ = self.snap.schema.field(c).type
                if c in self.partition:
                    steps.append(("p", pa.scalar(self.partition[c], type=typ), typ))
                elif c in self.source:
                    same = self.file_types.get(self.source[c]) == typ
                    steps.append(("c", self.source[c], None if same else typ))
                else:  # a column added after this file was written
                    steps.append(("n", None, typ))
            plan = self._plans[key] = (pa.schema([self.snap.schema.field(c) for c in wanted]), steps)
        return plan

    def conform(self, batch: Any, wanted: list[str], offset: int) -> Any:
        """*batch* (physical columns, file rows ``offset..``) as the table's *wanted* columns, live rows only."""
        import numpy as np
        import pyarrow as pa

        schema, steps = self._plan(wanted)
        n = batch.num_rows
        arrays = []
        for kind, what, typ in steps:
            if kind == "p":
                arrays.append(pa.repeat(what, n))
            elif kind == "c":
                a = batch.column(what)
                arrays.append(a if typ is None else a.cast(typ))
            else:
                arrays.append(pa.nulls(n, type=typ))
        out = pa.RecordBatch.from_arrays(arrays, schema=schema)
        if self.keep is not None:
            mask = self.keep[offset : offset + n]
            if len(mask) < n:  # a mask stops at its last deleted row: the rest are live
                mask = np.concatenate([mask, np.ones(n - len(mask), dtype=bool)])
            if not mask.all():
                out = out.filter(pa.array(mask))
        return out
