"""The catalog's table names in the user's spelling (``catalog.schema.table``), and the ones close to a name.

Why: ``%air_table --tables`` lists them, and a misspelled name's one-line error offers the closest
(``no such table main.demo.featurs (did you mean main.demo.features?)``), as a misspelled flag gets
the closest flags. On the embedded store ``catalog.schema`` is the database ``<catalog>__<schema>``
(:mod:`air_magics.tablefiles.names`); elsewhere the session's catalog answers as it is.
"""

from __future__ import annotations

from typing import Any

from ..tablefiles.names import TableName, split_database

__all__ = ["table_names", "near_tables"]

_MAX_SCHEMAS = 50  # a did-you-mean lists at most this many schemas: it must stay a fraction of a second


def _quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def _embedded_tables(spark: Any, database: str) -> list[str]:
    """The tables of one embedded database; ``SHOW TABLES`` is one round trip (the catalog API's
    ``listTables`` loads every table's metadata: about 3x slower)."""
    rows = spark.sql(f"SHOW TABLES IN {_quote(database)}").collect()
    return [r["tableName"] for r in rows if not r["isTemporary"]]


def table_names(spark: Any, embedded: bool, schema: str | None = None, *, max_schemas: int | None = None) -> list[str]:
    """``catalog.schema.table`` names (temporary views left out), in *schema* (``catalog.schema``) or
    everywhere (at most *max_schemas* schemas)."""
    if embedded:
        if schema:
            tn = TableName.parse(f"{schema}.x")
            if not spark.catalog.databaseExists(tn.database):
                return []
            dbs = [(tn.database, tn.catalog, tn.schema)]
        else:
            names = [r["namespace"] for r in spark.sql("SHOW DATABASES").collect()]
            dbs = [(d, *split_database(d)) for d in names if split_database(d)]
        return sorted(f"{cat}.{sch}.{t}" for db, cat, sch in dbs[:max_schemas] for t in _embedded_tables(spark, db))
    tables = spark.catalog.listTables(schema) if schema else spark.catalog.listTables()
    return sorted(f"{t.catalog}.{t.namespace[0] if t.namespace else ''}.{t.name}".lstrip(".") for t in tables)


def _tables_in(spark: Any, embedded: bool, schema: str) -> list[str]:
    """The table names in *schema* (``catalog.schema``), one query; an error when it does not exist."""
    if embedded:
        return _embedded_tables(spark, TableName.parse(f"{schema}.x").database)
    return [t.name for t in spark.catalog.listTables(schema) if not t.isTemporary]


def near_tables(spark: Any, embedded: bool, name: str, n: int = 2) -> list[str]:
    """The catalog's names closest to *name* (``difflib``, case-insensitive), best first; ``[]`` when
    none is close or the catalog cannot be listed (the error being explained is what matters).

    The name's own schema is looked at first (one query: the usual typo is in the table part), the
    whole catalog only when nothing there is close."""
    from ..suggest import closest

    want = name.lower()
    schema, _, table = want.rpartition(".")
    if schema.count(".") == 1:
        try:
            tails = {t.lower(): f"{schema}.{t}" for t in _tables_in(spark, embedded, schema)}
        except Exception:  # no such schema (a typo there): the whole catalog below
            tails = {}
        close = closest(table, tails, n=n, cutoff=0.6)
        if close:
            return [tails[c] for c in close]
    try:
        have = {h.lower(): h for h in table_names(spark, embedded, max_schemas=_MAX_SCHEMAS)}
    except Exception:
        return []
    return [have[c] for c in closest(want, have, n=n, cutoff=0.75) if c != want]
