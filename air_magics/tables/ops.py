"""Table operations on any session: read to pandas/NumPy/Arrow, write, list, describe, export.

Everything takes ``remote=`` (``sc://...``) and ``user_ns=`` (a namespace holding ``spark``) to pick
the session (see :func:`air_magics.tables.session.get_session`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ..errors import TablesError
from ..tablefiles.names import TableName
from .catalog import table_names
from .folder import is_folder_source, read_folder
from .row_limit import check_limit
from .session import Session, get_session, guarded
from .size_guard import check_size, max_bytes_limit
from .sql import rewrite_sql

__all__ = [
    "read_table",
    "read_sql",
    "write_table",
    "list_tables",
    "describe_table",
    "table_frame",
    "sql_frame",
    "convert",
    "TableSummary",
    "FORMATS",
]

FORMATS = ("pandas", "numpy", "arrow")


def table_frame(
    s: Session, name: str, *, columns: Sequence[str] | None = None, where: str | None = None, limit: int | None = None
) -> Any:
    """A lazy Spark DataFrame: column selection, filter and limit are pushed to Spark."""
    tn = TableName.parse(name)
    df = s.spark.table(tn.sql(s.embedded))
    if columns:
        df = df.select(*[c.strip() for c in columns])
    if where:
        df = df.where(where)
    if check_limit(limit) is not None:
        df = df.limit(limit)
    return df


def sql_frame(s: Session, query: str) -> Any:
    """A lazy Spark DataFrame for *query*; on the embedded store ``catalog.schema.table`` references
    are rewritten to the store's spelling (:mod:`air_magics.tables.sql`), elsewhere it goes as written."""
    if s.embedded:
        query = rewrite_sql(query, temp_views=lambda: _temp_views(s)).sql
    return s.spark.sql(query)


def _temp_views(s: Session) -> set[str]:
    return {t.name for t in s.spark.catalog.listTables() if t.isTemporary}


def convert(df: Any, to: str) -> Any:
    if to == "pandas":
        return df.toPandas()
    if to == "arrow":
        return df.toArrow()
    if to == "numpy":
        return df.toPandas().to_records(index=False)  # a structured array keeps each column's dtype
    raise TablesError(f"--to {to!r} is not one of {', '.join(FORMATS)} (or 'datasets' after --export)")


def read_table(
    name: str,
    *,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    limit: int | None = None,
    to: str = "pandas",
    max_bytes: int | str | None = None,
    remote: str | None = None,
    user_ns: dict[str, Any] | None = None,
    version: int | None = None,
    timestamp: Any = None,
) -> Any:
    """A table (or a selection of it) as pandas, a NumPy structured array, or Arrow.

    Refused before anything is transferred when its estimated size is above *max_bytes* (bytes or
    ``"4GiB"``; default: the ``table_max_bytes`` setting, else 1/8 of memory), see
    :mod:`air_magics.tables.size_guard`. *name* may be a folder (``/Volumes/.../tbl``): its
    Parquet files, or a Delta table's snapshot (*version* / *timestamp*), read without Spark
    (:mod:`air_magics.tables.folder`)."""
    if to not in FORMATS:
        convert(None, to)
    if is_folder_source(name):
        return read_folder(
            name,
            columns=columns,
            where=where,
            limit=limit,
            to=to,
            max_bytes=max_bytes_limit(max_bytes),
            version=version,
            timestamp=timestamp,
        )
    if version is not None or timestamp is not None:
        raise TablesError(f"version=/timestamp= read a Delta table folder (/Volumes/...), not table {name}")
    TableName.parse(name)  # a bad name is refused before any server is started
    check_limit(limit)
    cap = max_bytes_limit(max_bytes)
    s = get_session(remote, user_ns=user_ns)

    def run() -> Any:
        df = table_frame(s, name, columns=columns, where=where, limit=limit)
        check_size(df, cap, f"reading {name}")
        return convert(df, to)

    return guarded(s, f"reading {name}", run)


def read_sql(
    query: str,
    *,
    to: str = "pandas",
    max_bytes: int | str | None = None,
    remote: str | None = None,
    user_ns: dict[str, Any] | None = None,
) -> Any:
    """A SQL query's result as pandas, NumPy or Arrow.

    Tables are named ``catalog.schema.table`` (or ``schema.table``, ``table``) on every store; the
    embedded store's own spelling ``spark_catalog.<catalog>__<schema>.<table>`` works too. The
    result is size-checked like :func:`read_table`."""
    if not query or not query.strip():
        raise TablesError("empty query: pass a SELECT statement")
    if to not in FORMATS:
        convert(None, to)
    cap = max_bytes_limit(max_bytes)
    s = get_session(remote, user_ns=user_ns)

    def run() -> Any:
        df = sql_frame(s, query)
        check_size(df, cap, "running the query")
        return convert(df, to)

    return guarded(s, "running the query", run)


def write_table(
    df: Any, name: str, *, mode: str = "error", remote: str | None = None, user_ns: dict[str, Any] | None = None
) -> str:
    """Write a pandas DataFrame (or Arrow table) as a table; ``mode``: error, overwrite or append."""
    if mode not in ("error", "overwrite", "append"):
        raise TablesError(f"mode {mode!r}: use 'error', 'overwrite' or 'append'")
    tn = TableName.parse(name)
    s = get_session(remote, user_ns=user_ns)

    def run() -> str:
        if s.embedded:
            s.spark.sql(f"CREATE DATABASE IF NOT EXISTS `{tn.database}`")
        if mode == "error" and s.spark.catalog.tableExists(tn.sql(s.embedded).replace("`", "")):
            raise TablesError(f"table {tn} already exists; pass mode='overwrite' or 'append'")
        sdf = s.spark.createDataFrame(df)
        sdf.write.mode(mode).saveAsTable(tn.sql(s.embedded))
        return str(tn)

    return guarded(s, f"writing {tn}", run)


def list_tables(
    schema: str | None = None, *, remote: str | None = None, user_ns: dict[str, Any] | None = None
) -> list[str]:
    """``catalog.schema.table`` names, in *schema* (``catalog.schema``) or everywhere."""
    if schema:
        TableName.parse(f"{schema}.x")  # a bad name is refused before any server is started
    s = get_session(remote, user_ns=user_ns)

    def run() -> list[str]:
        return table_names(s.spark, s.embedded, schema)

    return guarded(s, f"listing tables{' in ' + schema if schema else ''}", run)


@dataclass
class TableSummary:
    """What ``%air_table NAME`` shows: schema, row count and a preview."""

    name: str
    columns: list[tuple[str, str]]
    rows: int
    preview: Any = field(repr=False)

    def __repr__(self) -> str:
        cols = ", ".join(f"{n} {t}" for n, t in self.columns)
        return f"{self.name}: {self.rows:,} rows; columns: {cols}\n{self.preview.to_string(index=False)}"

    def _repr_html_(self) -> str:
        cols = "".join(f"<tr><td><code>{escape(n)}</code></td><td>{escape(t)}</td></tr>" for n, t in self.columns)
        return (
            f"<div><b>{escape(self.name)}</b>: {self.rows:,} rows<table><tr><th>column</th><th>type</th></tr>{cols}</table>"
            f"<p>preview</p>{self.preview.to_html(index=False)}</div>"
        )


def describe_table(
    name: str, *, preview: int = 5, remote: str | None = None, user_ns: dict[str, Any] | None = None
) -> TableSummary:
    """Schema, row count and the first *preview* rows of table *name* (or of a folder: see :func:`read_table`)."""
    if is_folder_source(name):
        from .folder import describe_folder

        cols, rows, head = describe_folder(name, preview)
        return TableSummary(name.strip(), cols, rows, head)
    TableName.parse(name)  # a bad name is refused before any server is started
    s = get_session(remote, user_ns=user_ns)

    def run() -> TableSummary:
        df = table_frame(s, name)
        cols = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        return TableSummary(str(TableName.parse(name)), cols, df.count(), df.limit(preview).toPandas())

    return guarded(s, f"reading {name}", run)
