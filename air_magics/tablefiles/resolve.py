"""Where a table's Parquet files are, and what they hold: files, row groups, schema.

A source is an embedded-store table name (``main.demo.features``: its warehouse folder, read in
place, no Spark session needed), a volume folder (``/Volumes/c/s/v/export``: footers read through
the volume store, data later through the cache) or a local folder (read in place). Only footers
are read here, unless a row filter needs the matching rows of each row group counted.

A folder holding ``_delta_log`` is a Delta table: its parts are the live files of one snapshot
(:mod:`.delta`), each with a :class:`~.delta.FileView` when its batches need conforming (partition
values, deletion vectors, column mapping), never every Parquet file in the folder.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import DatasetError, TableNameError, VolumePathError
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .delta import DELTA_LOG, DeltaError, DeltaSnapshot, FileView, is_delta_folder, open_snapshot

__all__ = [
    "Part",
    "Table",
    "resolve",
    "check_current",
    "warehouse_folder",
    "is_data_file",
    "TableSchemaError",
    "DeltaError",
]


class TableSchemaError(DatasetError):
    """A table's schema is not what a saved state or the selection expects."""


@dataclass(frozen=True)
class Part:
    """One Parquet data file: ``key`` names it (a volume path or a local path), ``volume`` says which."""

    key: str
    size: int
    mtime: float
    volume: bool
    row_groups: tuple[int, ...]  # rows per row group, from the footer
    view: FileView | None = field(default=None, compare=False)  # a Delta file whose batches need conforming


@dataclass(frozen=True)
class Table:
    source: str
    parts: tuple[Part, ...]
    schema: Any  # pyarrow.Schema
    fingerprint: str
    delta: DeltaSnapshot | None = field(default=None, compare=False)  # the snapshot read, for a Delta table

    @property
    def version(self) -> int | None:
        """The Delta version read, or None for a folder of plain Parquet."""
        return self.delta.version if self.delta is not None else None

    def schema_text(self) -> list[str]:
        return [f"{f.name}: {f.type}" for f in self.schema]


def is_data_file(name: str) -> bool:
    """Spark leaves ``_SUCCESS``, ``.crc`` and hidden files beside its ``part-*`` data files."""
    return not name.startswith(("_", ".")) and not name.endswith(".crc")


def warehouse_folder(name: str) -> str:
    """The embedded store's folder of table *name* (Hive lower-cases database and table names)."""
    from .. import settings
    from .names import TableName

    tn = TableName.parse(name)
    return str(settings.spark_dir() / "warehouse" / f"{tn.database.lower()}.db" / tn.table.lower())


def _local_parts(folder: str) -> list[tuple[str, int, float]]:
    out = []
    for dirpath, dirnames, files in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if is_data_file(d))
        for f in files:
            if is_data_file(f):
                p = os.path.join(dirpath, f)
                try:
                    st = os.stat(p)
                except FileNotFoundError:  # removed since the walk listed it (a rewrite under way)
                    continue
                out.append((p, st.st_size, st.st_mtime))
    return sorted(out)


def _volume_parts(vp: VolumePath, store: VolumeStore) -> list[tuple[str, int, float]]:
    entries = store.entries(vp, recursive=True, with_dirs=False, stat=True)
    return sorted(
        (str(vp.joinpath(e.rel)), e.size, e.mtime) for e in entries if all(is_data_file(x) for x in e.rel.split("/"))
    )


def _check_unpartitioned(source: str, keys: list[str], base: str) -> None:
    for k in keys:
        rel = k[len(base) :].lstrip("/")
        if "/" in rel and "=" in rel.rsplit("/", 1)[0]:
            raise DatasetError(
                f"{source} is partitioned ({rel}); UCDataset reads unpartitioned tables only: export it "
                f"(tables.export_table) to a folder and read that"
            )


def _footer(part_key: str, volume: bool, store: VolumeStore) -> Any:
    import pyarrow.parquet as pq

    if volume:
        with store.open(part_key, "rb") as f:
            return pq.ParquetFile(f).metadata
    return pq.ParquetFile(part_key).metadata


def _listing(
    source: str, store: VolumeStore, *, empty_ok: bool = False
) -> tuple[list[tuple[str, int, float]], str, bool]:
    """The data files of *source* (key, size, mtime), its base folder, and whether it is on a volume."""
    if not isinstance(source, str) or not source.strip():
        raise DatasetError(f"UCDataset source {source!r}: give a table name (main.demo.features) or a folder")
    source = source.strip()
    volume = source.startswith("/Volumes/") or source == "/Volumes"
    if volume:
        try:
            vp = VolumePath.parse(source)
        except VolumePathError as exc:
            raise DatasetError(str(exc)) from None
        if not store.exists(vp):
            raise DatasetError(f"{source} does not exist; check it with %air_volume ls {vp.parent}")
        files, base = _volume_parts(vp, store), str(vp)
    elif "/" in source or os.path.isdir(source):
        base = os.path.abspath(source)
        if not os.path.isdir(base):
            raise DatasetError(f"{source} is not a folder; give a folder of Parquet files or a table name")
        files = _local_parts(base)
    else:
        try:
            base = warehouse_folder(source)
        except TableNameError as exc:
            raise DatasetError(str(exc)) from None
        if not os.path.isdir(base):
            raise DatasetError(
                f"table {source} is not in the embedded store ({base} does not exist); list tables with "
                f"%air_table --tables. A table on a remote server: export it to a volume first "
                f"(tables.export_table(name, '/Volumes/...')) and pass that folder"
            )
        files = _local_parts(base)
    if not files and not empty_ok:
        raise DatasetError(f"no Parquet data files in {source} ({base})")
    return files, base, volume


def delta_root(base: str, volume: bool, store: VolumeStore) -> tuple[str, dict[str, str]] | None:
    """Where deltalake reads *base*'s log when it is a Delta table (it holds ``_delta_log``), else None:
    a local folder, or an object store's URL with the options that reach it (the volume's endpoint and
    credentials). The data files are read through the volume (and its cache) either way."""
    if not volume:
        return (base, {}) if is_delta_folder(base) else None
    loc = store.locate(base)
    if loc.is_local:
        return (loc.path, {}) if is_delta_folder(loc.path) else None
    if not loc.fs.exists(f"{loc.path.rstrip('/')}/{DELTA_LOG}"):
        return None
    reader_options = getattr(loc.fs, "reader_options", None)
    if reader_options is None:
        raise DeltaError(
            f"{base} is a Delta table on {loc.fs.protocol} storage that is not a registered object store; copy the "
            f"table to a local or mounted volume (%%air_copy) or register its bucket (%air_volume register)"
        )
    return loc.fs.url(loc.path.rstrip("/")), reader_options()


def resolve(source: str, store: VolumeStore, *, version: int | None = None, timestamp: Any = None) -> Table:
    """The Parquet files of *source* with their row groups and the common schema; for a Delta
    table, the live files of its snapshot at *version* / *timestamp* (default: the latest)."""
    files, base, volume = _listing(source, store, empty_ok=True)
    source = source.strip()
    root = delta_root(base, volume, store)
    if root is not None:
        where, options = root
        snap = open_snapshot(where, shown=source, version=version, timestamp=timestamp, storage_options=options)
        return _resolve_delta(source, store, files, base, volume, snap)
    if version is not None or timestamp is not None:
        raise DatasetError(
            f"{source} is a folder of plain Parquet (no {DELTA_LOG}); version=/timestamp= read Delta tables only"
        )
    if not files:
        raise DatasetError(f"no Parquet data files in {source} ({base})")
    _check_unpartitioned(source, [k for k, _, _ in files], base)
    parts, schema = [], None
    for key, size, mtime in files:
        try:
            meta = _footer(key, volume, store)
        except FileNotFoundError:
            raise DatasetError(f"{key} vanished while {source} was read (rewritten?); try again") from None
        except Exception as exc:  # pyarrow.ArrowInvalid: not Parquet
            raise DatasetError(f"{key} is not a Parquet file ({exc}); remove it from {source}") from None
        s = meta.schema.to_arrow_schema().remove_metadata()
        if schema is None:
            schema = s
        elif not s.equals(schema):
            raise TableSchemaError(
                f"{key} has schema ({s}) but {files[0][0]} has ({schema}); the files of {source} must share one schema"
            )
        rgs = tuple(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
        parts.append(Part(key, size, mtime, volume, rgs))
    h = hashlib.sha1()
    for p in parts:
        h.update(f"{p.key[len(base) :]}\0{p.size}\0{p.mtime}\0{p.row_groups}\n".encode())
    return Table(source, tuple(parts), schema, h.hexdigest()[:16])


def _resolve_delta(
    source: str,
    store: VolumeStore,
    files: list[tuple[str, int, float]],
    base: str,
    volume: bool,
    snap: DeltaSnapshot,
) -> Table:
    """The parts of a Delta snapshot: its live files (found in the folder's listing, else vacuumed)."""
    listed = {k: (size, mtime) for k, size, mtime in files}
    vp = VolumePath.parse(base) if volume else None
    parts = []
    h = hashlib.sha1(f"delta\0{snap.table_id}\0{snap.version}\n".encode())
    for f in snap.files:
        key = str(vp.joinpath(f.rel)) if vp is not None else os.path.join(base, f.rel)
        if key not in listed:
            raise DeltaError(
                f"version {snap.version} of {source} is gone: its file {f.rel} was removed (vacuumed); "
                f"read the latest version (a new UCDataset, or refresh=True) instead"
            )
        size, mtime = listed[key]
        try:
            meta = _footer(key, volume, store)
        except FileNotFoundError:
            raise DeltaError(f"{key} vanished while {source} was read (vacuumed?); try again") from None
        except Exception as exc:  # pyarrow.ArrowInvalid: not Parquet
            raise DatasetError(f"{key} of Delta table {source} is not a Parquet file ({exc})") from None
        rgs = tuple(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
        view = FileView(snap, f, meta.schema.to_arrow_schema())
        parts.append(Part(key, size, mtime, volume, rgs, None if view.trivial else view))
        live = -1 if f.keep is None else int(f.keep[: sum(rgs)].sum())
        h.update(f"{f.rel}\0{size}\0{rgs}\0{live}\n".encode())
    return Table(source, tuple(parts), snap.schema, h.hexdigest()[:16], snap)


def check_current(table: Table, store: VolumeStore) -> None:
    """Refuse to read *table* if its files changed since it was resolved (one listing, no footers
    unless something changed): a table overwritten between epochs would otherwise fail deep in
    pyarrow (a vanished file, a missing column) or, rewritten in place, yield other rows than planned.
    Raises :class:`TableSchemaError` when the schema changed, :class:`DatasetError` otherwise."""
    fix = "build a new UCDataset to read the new data (and start the epoch fresh)"
    if table.delta is not None:  # a snapshot's files never change; only a vacuum removes them
        return _check_delta(table, store)
    try:
        files, _, _ = _listing(table.source, store)
    except DatasetError as exc:
        raise DatasetError(f"{table.source} changed since this UCDataset was made ({exc}); {fix}") from None
    if files == [(p.key, p.size, p.mtime) for p in table.parts]:
        return
    try:
        now = resolve(table.source, store)
    except DatasetError as exc:
        raise DatasetError(f"{table.source} changed since this UCDataset was made ({exc}); {fix}") from None
    old, new = table.schema_text(), now.schema_text()
    if old != new:
        gone, added = [c for c in old if c not in new], [c for c in new if c not in old]
        raise TableSchemaError(
            f"the schema of {table.source} changed since this UCDataset was made (was {gone}, now {added}); {fix}"
        )
    raise DatasetError(
        f"the data of {table.source} changed since this UCDataset was made ({len(table.parts)} files then, "
        f"{len(now.parts)} now; files rewritten); {fix}"
    )


def _check_delta(table: Table, store: VolumeStore) -> None:
    """Refuse a Delta snapshot whose files were vacuumed since it was resolved."""
    assert table.delta is not None
    files, _, _ = _listing(table.source, store, empty_ok=True)
    have = {k for k, _, _ in files}
    gone = [p.key for p in table.parts if p.key not in have]
    if gone:
        raise DeltaError(
            f"version {table.delta.version} of {table.source} was vacuumed while it was read ({gone[0]} is gone); "
            f"read the latest version (a new UCDataset, or refresh=True) and start the epoch fresh"
        )
