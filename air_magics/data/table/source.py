"""Where a table's Parquet files are, and what they hold: files, row groups, schema.

A source is an embedded-store table name (``main.demo.features``: its warehouse folder, read in
place, no Spark session needed), a volume folder (``/Volumes/c/s/v/export``: footers read through
the volume store, data later through the cache) or a local folder (read in place). Only footers
are read here, unless a row filter needs the matching rows of each row group counted.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from ...errors import DatasetError, TableNameError, VolumePathError
from ...volumes.path import VolumePath
from ...volumes.store import VolumeStore

__all__ = ["Part", "Table", "resolve", "check_current", "warehouse_folder", "is_data_file", "TableSchemaError"]


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


@dataclass(frozen=True)
class Table:
    source: str
    parts: tuple[Part, ...]
    schema: Any  # pyarrow.Schema
    fingerprint: str

    def schema_text(self) -> list[str]:
        return [f"{f.name}: {f.type}" for f in self.schema]


def is_data_file(name: str) -> bool:
    """Spark leaves ``_SUCCESS``, ``.crc`` and hidden files beside its ``part-*`` data files."""
    return not name.startswith(("_", ".")) and not name.endswith(".crc")


def warehouse_folder(name: str) -> str:
    """The embedded store's folder of table *name* (Hive lower-cases database and table names)."""
    from ...tables.names import TableName
    from ...tables.server import store_dir

    tn = TableName.parse(name)
    return str(store_dir() / "warehouse" / f"{tn.database.lower()}.db" / tn.table.lower())


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


def _listing(source: str, store: VolumeStore) -> tuple[list[tuple[str, int, float]], str, bool]:
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
    if not files:
        raise DatasetError(f"no Parquet data files in {source} ({base})")
    return files, base, volume


def resolve(source: str, store: VolumeStore) -> Table:
    """The Parquet files of *source* with their row groups and the common schema."""
    files, base, volume = _listing(source, store)
    source = source.strip()
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


def check_current(table: Table, store: VolumeStore) -> None:
    """Refuse to read *table* if its files changed since it was resolved (one listing, no footers
    unless something changed): a table overwritten between epochs would otherwise fail deep in
    pyarrow (a vanished file, a missing column) or, rewritten in place, yield other rows than planned.
    Raises :class:`TableSchemaError` when the schema changed, :class:`DatasetError` otherwise."""
    fix = "build a new UCDataset to read the new data (and start the epoch fresh)"
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
