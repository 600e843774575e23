"""Spark errors as one line each, and pyspark's own logging of them kept off stderr.

pyspark logs every error that carries a query context (``SQLQueryContextLogger``,
``DataFrameQueryContextLogger``) to stderr as JSON, JVM stack trace included, before the exception
is raised: a multi-KB trace in the notebook before our one-line error. :func:`quiet_pyspark_logs`
drops those records for the calls made inside it (a context variable, so other threads and the
user's own Spark calls still log as pyspark decides). :func:`one_line` says what went wrong in the
user's terms (``main.ds.sales``, not ``spark_catalog.main__ds.sales``) and what to do about it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
from collections.abc import Callable, Iterator

from .sql import have_sqlglot, user_spelling

__all__ = ["quiet_pyspark_logs", "one_line", "first_line", "LIST_TABLES_HINT"]

LIST_TABLES_HINT = "list tables with `%air_table --tables` (tables.list_tables())"
_QUIET = contextvars.ContextVar("air_quiet_pyspark", default=False)
_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
_installed = False


class _DropWhileQuiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _QUIET.get()


def _install() -> None:
    global _installed
    if _installed:
        return
    from pyspark.logger import PySparkLogger  # the loggers must be pyspark's class: it logs with extra kwargs

    for name in _LOGGERS:
        PySparkLogger.getLogger(name).addFilter(_DropWhileQuiet())
    _installed = True


@contextlib.contextmanager
def quiet_pyspark_logs() -> Iterator[None]:
    """Drop pyspark's query-context error logs (JVM stack traces) raised by the code inside."""
    try:
        _install()
    except ImportError:  # no pyspark: nothing would log
        pass
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def _strip(text: str) -> str:
    """Spark's first line without its ``SQLSTATE: ...`` tail and trailing ``;``."""
    text = re.sub(r"\s*SQLSTATE: \w+.*$", "", text).rstrip(" ;.")
    return text


def _condition(exc: BaseException) -> tuple[str, dict[str, str]]:
    try:
        cond = exc.getCondition() or ""  # type: ignore[attr-defined]
        params = exc.getMessageParameters() or {}  # type: ignore[attr-defined]
    except Exception:
        return "", {}
    return str(cond), {str(k): str(v) for k, v in params.items()}


def one_line(exc: BaseException, near: Callable[[str], list[str]] | None = None) -> str | None:
    """The error in one line with its fix, for the errors a user makes (missing table, column,
    function, bad SQL); ``None`` for others (the caller shows Spark's own first line).

    *near(name)*: the catalog's tables closest to a missing table's name (user spelling), offered
    as "did you mean"."""
    cond, p = _condition(exc)
    full = str(exc)
    if cond.startswith("TABLE_OR_VIEW_NOT_FOUND") or "TABLE_OR_VIEW_NOT_FOUND" in full:
        name = p.get("relationName") or _search(r"The table or view (\S+) cannot be found", full)
        if not name:
            return f"no such table; {LIST_TABLES_HINT}"
        shown = user_spelling(name)
        close = near(shown) if near is not None else []
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        return f"no such table {shown}{hint}; {LIST_TABLES_HINT}"
    if cond.startswith("SCHEMA_NOT_FOUND"):
        name = p.get("schemaName", "")
        return f"no such schema {user_spelling(name + '.x').rsplit('.', 1)[0] if name else ''}; {LIST_TABLES_HINT}"
    if cond.startswith("UNRESOLVED_COLUMN"):
        col = p.get("objectName", "?").strip("`")
        have = p.get("proposal", "").replace("`", "")
        there = f"; columns include {have}" if have else ""
        return f"no column {col!r}{there} (fix --columns/--where or the query)"
    if cond.startswith("UNRESOLVED_ROUTINE"):
        return f"no function {p.get('routineName', '?').replace('`', '')!r} (check the spelling in the query)"
    if cond.startswith("REQUIRES_SINGLE_PART_NAMESPACE") and not have_sqlglot():
        return f"{first_line(exc)}: catalog.schema.table in SQL needs sqlglot (pip install 'air_magics[tables]')"
    if cond.startswith("PARSE_SYNTAX_ERROR"):
        first = next((ln for ln in full.splitlines() if ln.strip()), "syntax error")
        return f"SQL syntax error: {_strip(first.replace('[PARSE_SYNTAX_ERROR] ', ''))} (fix the query)"
    return None


def _search(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    return m.group(1) if m else ""


def first_line(exc: BaseException) -> str:
    """Spark's own message, first line, without the SQLSTATE tail (a gRPC error: its ``details``)."""
    full = str(exc).strip()
    details = _search(r'details = "([^"\n]*)"', full)
    if details:
        return details
    return _strip(full.splitlines()[0]) if full else type(exc).__name__
