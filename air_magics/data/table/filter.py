"""A row filter: a pyarrow expression, or a small SQL condition parsed (never evaluated) into one.

The SQL form is parsed with sqlglot (Spark dialect) and translated node by node; only comparisons
(``= != <> < <= > >=``), ``AND``/``OR``/``NOT``, ``IN (...)``, ``BETWEEN``, ``IS [NOT] NULL``,
column names (backticks allowed) and literals (numbers, strings, ``true``/``false``, ``NULL``) are
accepted. Anything else (functions, subqueries, arithmetic, ``;``) is refused with a message naming
it, so a filter string can never run code or reach a SQL engine.
"""

from __future__ import annotations

from typing import Any

from ...errors import DatasetError

__all__ = ["FilterError", "parse_filter", "filter_columns"]


class FilterError(DatasetError):
    """A row filter cannot be parsed or names a column the table does not have."""


def _unknown(name: str, columns: list[str], what: str) -> FilterError:
    import difflib

    near = difflib.get_close_matches(name, columns, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return FilterError(f"{what} names column {name!r}, which the table does not have{hint}; columns: {columns}")


def _literal(node: Any, text: str) -> Any:
    from sqlglot import exp

    if isinstance(node, exp.Neg):
        v = _literal(node.this, text)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    elif isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        s = node.this
        try:
            return int(s)
        except ValueError:
            return float(s)
    elif isinstance(node, exp.Boolean):
        return bool(node.this)
    elif isinstance(node, exp.Null):
        return None
    raise FilterError(f"filter {text!r}: {node.sql()!r} is not a literal; compare columns with numbers or strings")


def _to_expr(node: Any, text: str, columns: list[str]) -> Any:
    import pyarrow.compute as pc
    from sqlglot import exp

    def field(n: Any) -> Any:
        if not isinstance(n, exp.Column) or n.table:
            raise FilterError(f"filter {text!r}: expected a column name, got {n.sql()!r}")
        if n.name not in columns:
            raise _unknown(n.name, columns, f"filter {text!r}")
        return pc.field(n.name)

    def side(n: Any) -> Any:
        return field(n) if isinstance(n, exp.Column) else pc.scalar(_literal(n, text))

    cmp = {
        exp.EQ: lambda a, b: a == b,
        exp.NEQ: lambda a, b: a != b,
        exp.GT: lambda a, b: a > b,
        exp.GTE: lambda a, b: a >= b,
        exp.LT: lambda a, b: a < b,
        exp.LTE: lambda a, b: a <= b,
    }
    if isinstance(node, exp.Paren):
        return _to_expr(node.this, text, columns)
    if isinstance(node, exp.And):
        return _to_expr(node.this, text, columns) & _to_expr(node.expression, text, columns)
    if isinstance(node, exp.Or):
        return _to_expr(node.this, text, columns) | _to_expr(node.expression, text, columns)
    if isinstance(node, exp.Not):
        return ~_to_expr(node.this, text, columns)
    if type(node) in cmp:
        return cmp[type(node)](side(node.this), side(node.expression))
    if isinstance(node, exp.In) and not node.args.get("query"):
        return field(node.this).isin([_literal(v, text) for v in node.expressions])
    if isinstance(node, exp.Between):
        f = field(node.this)
        return (f >= _literal(node.args["low"], text)) & (f <= _literal(node.args["high"], text))
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return field(node.this).is_null()
    if isinstance(node, exp.Column):  # a boolean column on its own
        return field(node)
    raise FilterError(
        f"filter {text!r}: {node.sql()!r} is not supported; use comparisons, AND/OR/NOT, IN, BETWEEN, IS NULL, "
        f"or pass a pyarrow expression (pyarrow.compute.field('x') > 0)"
    )


def parse_filter(flt: Any, schema: Any) -> Any:
    """A pyarrow ``Expression`` for *flt* (``None``, a SQL condition string, or an expression),
    checked against *schema* (a ``pyarrow.Schema``) by applying it to an empty table."""
    if flt is None:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = list(schema.names)
    if isinstance(flt, pc.Expression):
        expr = flt
    elif not isinstance(flt, str) or not flt.strip():
        raise FilterError(f'filter {flt!r}: give a SQL condition like "label = 1 AND x > 0" or a pyarrow expression')
    else:
        import sqlglot
        from sqlglot.errors import ParseError

        try:
            trees = sqlglot.parse(flt, dialect="spark")
        except ParseError as exc:
            first = str(exc).splitlines()[0]
            raise FilterError(f"filter {flt!r} is not a SQL condition ({first})") from None
        if len(trees) != 1 or trees[0] is None:
            raise FilterError(f"filter {flt!r}: give exactly one condition (no ';')")
        expr = _to_expr(trees[0], flt, columns)
    try:
        schema.empty_table().filter(expr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
        cols = ", ".join(f"{f.name} {f.type}" for f in schema)
        raise FilterError(
            f"filter {flt} does not apply to the table ({str(exc).splitlines()[0]}); columns: {cols}"
        ) from None
    return expr


def filter_columns(expr: Any, columns: list[str]) -> list[str]:
    """The columns of *columns* that expression *expr* may refer to (a superset is harmless: they are only read)."""
    import re

    if expr is None:
        return []
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(expr)))
    return [c for c in columns if c in named or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c)]
