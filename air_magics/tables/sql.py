"""``catalog.schema.table`` in SQL on the embedded store, by rewriting the parsed query.

The embedded store keeps ``catalog.schema.table`` as ``spark_catalog.<catalog>__<schema>.<table>``
(see :mod:`air_magics.tables.names`), a spelling nobody should have to know. So a query for the
embedded server is parsed with sqlglot (Spark dialect) and every table reference (``exp.Table``
nodes; not CTE names, not subquery aliases, not table functions such as ``range(10)``) is mapped
with :class:`TableName`'s defaults (``t`` is ``main.default.t``, ``ds.t`` is ``main.ds.t``), then
the query is generated again. Never string replacement: a name inside a string literal or a
comment is never touched. Left as written: ``spark_catalog.*`` and ``global_temp.*`` names (already
Spark's own), temporary views named by one part, names the store cannot hold (quotes, unicode,
``__`` in catalog/schema), and any query sqlglot cannot parse or generate (Spark then reports its
own one-line error). A remote session gets the query unchanged (the caller decides).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from .names import SEP, TableName, split_database

__all__ = ["Rewrite", "rewrite_sql", "user_spelling", "have_sqlglot"]

_SPARK_OWN = ("spark_catalog", "global_temp")


@dataclass(frozen=True)
class Rewrite:
    """The SQL to send and the tables it names (``catalog.schema.table``, in the order they appear)."""

    sql: str
    tables: tuple[str, ...] = field(default=())
    changed: bool = False


def have_sqlglot() -> bool:
    """Whether the rewrite can run (``pip install 'air_magics[tables]'`` brings sqlglot)."""
    import importlib.util

    return importlib.util.find_spec("sqlglot") is not None


def _parse(query: str) -> list | None:
    if not have_sqlglot():  # the query goes as written; the error then says what to install
        return None
    import sqlglot
    from sqlglot.errors import ErrorLevel, SqlglotError

    logger = logging.getLogger("sqlglot")  # "falling back to parsing as a Command" is not the user's business
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return sqlglot.parse(query, dialect="spark", error_level=ErrorLevel.RAISE)
    except (SqlglotError, ValueError, RecursionError):
        return None
    finally:
        logger.setLevel(level)


def _cte_names(node: object) -> set[str]:
    """CTE names visible at *node*: those of every enclosing ``WITH``."""
    names: set[str] = set()
    parent = getattr(node, "parent", None)
    while parent is not None:
        with_ = parent.args.get("with") or parent.args.get("with_")
        if with_ is not None:
            names.update(cte.alias_or_name.lower() for cte in with_.expressions)
        parent = parent.parent
    return names


def _mapped(parts: list[str]) -> TableName | None:
    """The store's name for a reference of 1-3 parts, or ``None`` to leave it as written."""
    if len(parts) == 3 and parts[0].lower() in _SPARK_OWN or len(parts) == 2 and parts[0].lower() in _SPARK_OWN:
        return None
    try:
        return TableName.parse(".".join(parts))
    except ValueError:  # quotes, unicode, '__', ...: not a name the store holds; Spark will say so
        return None


def rewrite_sql(query: str, *, temp_views: Callable[[], set[str]] | None = None) -> Rewrite:
    """*query* with ``catalog.schema.table`` references spelled for the embedded store.

    *temp_views* (called at most once, only if the query has one-part names) returns the session's
    temporary view names, which Spark resolves before tables and so are left alone."""
    statements = _parse(query)
    if not statements or any(s is None for s in statements):
        return Rewrite(query)
    from sqlglot import exp
    from sqlglot.errors import ErrorLevel, SqlglotError

    views: set[str] | None = None
    names: list[str] = []
    changed = False
    for stmt in statements:
        for table in list(stmt.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier):
                continue  # range(10), a table function
            parts = [p for p in (table.catalog, table.db, table.name) if p]
            if len(parts) == 1:
                if parts[0].lower() in _cte_names(table):
                    continue
                if views is None:
                    views = {v.lower() for v in temp_views()} if temp_views else set()
                if parts[0].lower() in views:
                    continue
            tn = _mapped(parts)
            if tn is None:
                continue
            names.append(str(tn))
            table.set("catalog", exp.to_identifier("spark_catalog", quoted=True))
            table.set("db", exp.to_identifier(tn.database, quoted=True))
            table.set("this", exp.to_identifier(tn.table, quoted=True))
            changed = True
    if not changed:
        return Rewrite(query, tuple(names))
    try:
        sql = ";\n".join(s.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE) for s in statements)
    except (SqlglotError, ValueError):
        return Rewrite(query)
    return Rewrite(sql, tuple(names), True)


def user_spelling(spark_name: str) -> str:
    """``spark_catalog.main__ds.sales`` (backticks or not) -> ``main.ds.sales``; other names unchanged
    but for their backticks, so an error names the table as the user wrote it."""
    parts = [p.strip("`") for p in spark_name.strip().split(".")]
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) == 2 and SEP in parts[0]:
        cat_sch = split_database(parts[0])
        if cat_sch:
            return f"{cat_sch[0]}.{cat_sch[1]}.{parts[1]}"
    return ".".join(parts)
