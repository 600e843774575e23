"""``catalog.schema.table`` in SQL on the embedded store, by splicing table names into the query.

The embedded store keeps ``catalog.schema.table`` as ``spark_catalog.<catalog>__<schema>.<table>``
(see :mod:`air_magics.tablefiles.names`), a spelling nobody should have to know. So a query for the
embedded server is parsed with sqlglot (Spark dialect) to *find* its table references (``exp.Table``
nodes; not CTE names in their scope, not subquery aliases, not table functions such as
``range(10)``), each is mapped with :class:`TableName`'s defaults (``t`` is ``main.default.t``,
``ds.t`` is ``main.ds.t``), and the store's spelling is spliced into the original text at the
reference's token positions. Everything else goes to Spark byte for byte: sqlglot never regenerates
the query (it would rewrite ``'it''s'`` as ``CONCAT('it', 's')``, comments, hints, functions), and a
name inside a string literal or a comment is never touched.
Comments follow Spark, which nests them: ``/* a /* b */ c */`` is one comment (the query is parsed
with its comments blanked, positions kept), and a query whose bracketed comment Spark never closes
goes as written.

Scopes follow Spark: a CTE is visible in the query body and in the CTEs defined *after* it (in its
own definition only under ``WITH RECURSIVE``), so in ``WITH t AS (SELECT * FROM t)`` the inner ``t``
is the real table. Left as written: ``spark_catalog.*`` and ``global_temp.*`` names (already Spark's
own), temporary views named by one part, files (``parquet.`/path```), names the store cannot hold
(unicode, quotes, ``__`` in catalog/schema: Spark then reports its own error), and any query
sqlglot cannot parse. Refused (``TableNameError``): a quoted part holding a dot (``ds.`t.x```), which
is one part, so it can never be the table ``ds.t.x`` it looks like. A remote session gets the query
unchanged (the caller decides).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import TableNameError
from ..tablefiles.names import SEP, TableName, split_database

__all__ = ["Rewrite", "rewrite_sql", "user_spelling", "have_sqlglot"]

_SPARK_OWN = ("spark_catalog", "global_temp")
# ``<format>.`<path>``` reads files (Spark's SQL on files): never a table of the store
_FILE_FORMATS = frozenset({"parquet", "orc", "json", "csv", "text", "avro", "binaryfile", "xml", "delta", "image"})


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


def _with_of(node: Any) -> Any:
    return node.args.get("with_") or node.args.get("with")


def _cte_names(node: Any) -> set[str]:
    """CTE names visible at *node*, by Spark's scoping: every CTE of an enclosing query body, and
    inside a CTE's definition only the CTEs before it (and itself under ``WITH RECURSIVE``)."""
    from sqlglot import exp

    names: set[str] = set()
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, exp.CTE) and isinstance(parent.parent, exp.With):
            with_ = parent.parent
            ctes = list(with_.expressions)
            upto = ctes.index(parent) + (1 if with_.args.get("recursive") else 0)
            names.update(c.alias_or_name.lower() for c in ctes[:upto])
            child = with_.parent  # the query owning this WITH: its body's scope does not hold *node*
            if child is None:
                break
            parent = child.parent
            continue
        with_ = _with_of(parent)
        if with_ is not None and child is not with_:
            names.update(c.alias_or_name.lower() for c in with_.expressions)
        child, parent = parent, parent.parent
    return names


def _spelled(query: str, ident: Any) -> tuple[int, int] | None:
    """Where identifier *ident* is written in *query* (start, stop), checked against its text."""
    start, end = ident.meta.get("start"), ident.meta.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    text = query[start : end + 1]
    name = ident.this
    want = "`" + name.replace("`", "``") + "`" if ident.quoted else name
    return (start, end + 1) if text == want else None


def _mapped(parts: list[str], shown: str) -> TableName | None:
    """The store's name for a reference of 1-3 parts, ``None`` to leave it as written."""
    if len(parts) in (2, 3) and parts[0].lower() in _SPARK_OWN:
        return None
    if len(parts) == 2 and parts[0].lower() in _FILE_FORMATS and not parts[1].isidentifier():
        return None
    dotted = [p for p in parts if "." in p]
    if dotted:
        raise TableNameError(
            f"table {shown} in the query: the quoted part {dotted[0]!r} holds a dot, so it is one part, not "
            f"{' and '.join(repr(x) for x in dotted[0].split('.'))}; table names here are plain "
            f"(letters, digits, '_'): write catalog.schema.table without backticks"
        )
    try:
        return TableName.from_parts(parts)
    except ValueError:  # quotes, unicode, '__', ...: not a name the store holds; Spark will say so
        return None


def _source(query: str, parts: list[Any]) -> str:
    return query[parts[0].meta.get("start", 0) : parts[-1].meta.get("end", len(query)) + 1] or ".".join(
        p.this for p in parts
    )


def _spark_comments(query: str) -> tuple[bool, str | None]:
    """Whether *query* nests a bracketed comment in another (outside string literals and line
    comments), and *query* with every comment blanked by Spark's rules (each character but a
    newline made a space: same length, so positions carry over), or ``None`` when a bracketed
    comment is never closed. Spark reads ``/* a /* b */ c */`` as one comment, sqlglot ends it at
    the first ``*/``: parsing the blanked text gives sqlglot Spark's view."""
    out = list(query)
    i, n, depth, quote, nested, start = 0, len(query), 0, "", False, 0
    while i < n:
        two = query[i : i + 2]
        if quote:
            if query[i] == quote:
                quote = ""
            elif query[i] == "\\" and quote != "`":
                i += 1
        elif depth:
            if two == "/*":
                depth, nested, i = depth + 1, True, i + 1
            elif two == "*/":
                depth, i = depth - 1, i + 1
                if not depth:
                    out[start : i + 1] = [" " if c != "\n" else c for c in query[start : i + 1]]
        elif two == "/*":
            depth, start, i = 1, i, i + 1
        elif two == "--":
            nl = query.find("\n", i)
            i = n if nl < 0 else nl
            continue
        elif query[i] in "'\"`":
            quote = query[i]
        i += 1
    return nested, (None if depth else "".join(out))


def rewrite_sql(query: str, *, temp_views: Callable[[], set[str]] | None = None) -> Rewrite:
    """*query* with ``catalog.schema.table`` references spelled for the embedded store, and every
    other character as written.

    *temp_views* (called at most once, only if the query has one-part names) returns the session's
    temporary view names, which Spark resolves before tables and so are left alone. Raises
    :class:`~air_magics.errors.TableNameError` for a quoted name part that holds a dot."""
    original = query
    nested, blanked = _spark_comments(query)
    if nested:  # Spark nests /* */ comments, sqlglot does not: it parses the text without them
        if blanked is None:  # never closed: Spark reports it; nothing here guesses
            return Rewrite(query)
        query = blanked  # same length: every position found in it is the original's
    statements = _parse(query)
    if not statements or any(s is None for s in statements):
        return Rewrite(original)
    from sqlglot import exp

    views: set[str] | None = None
    edits: list[tuple[int, int, str, str]] = []
    for stmt in statements:
        for table in stmt.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                continue  # range(10), a table function
            idents = [table.args.get(k) for k in ("catalog", "db", "this") if table.args.get(k) is not None]
            if not all(isinstance(i, exp.Identifier) for i in idents):
                continue
            parts = [i.this for i in idents]
            if len(parts) == 1:
                if parts[0].lower() in _cte_names(table):
                    continue
                if views is None:
                    views = {v.lower() for v in temp_views()} if temp_views else set()
                if parts[0].lower() in views:
                    continue
            tn = _mapped(parts, _source(query, idents))
            if tn is None:
                continue
            spans = [_spelled(query, i) for i in idents]
            if any(s is None for s in spans):
                return Rewrite(original)  # not placed in the text for sure: send it as written
            edits.append((spans[0][0], spans[-1][1], tn.embedded_sql(), str(tn)))  # type: ignore[index]
    if not edits:
        return Rewrite(original)
    edits.sort()
    names = tuple(e[3] for e in edits)
    out, pos = [], 0
    for start, stop, text, _ in edits:
        if start < pos:
            return Rewrite(original)  # overlapping references: never guess
        out += [original[pos:start], text]
        pos = stop
    out.append(original[pos:])
    return Rewrite("".join(out), names, True)


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
