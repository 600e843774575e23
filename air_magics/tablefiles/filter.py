"""A row filter: a pyarrow expression, or a small SQL condition parsed (never evaluated) into one.

The SQL form is parsed with sqlglot (Spark dialect) and translated node by node; only comparisons
(``= != <> < <= > >=``), ``AND``/``OR``/``NOT``, ``IN (...)``, ``BETWEEN``, ``IS [NOT] NULL``,
column names (backticks allowed) and literals (numbers, strings, ``true``/``false``, ``NULL``) are
accepted. Anything else (functions, subqueries, arithmetic, ``;``) is refused with a message naming
it, so a filter string can never run code or reach a SQL engine.

The translation keeps Spark's semantics exactly, so a filter keeps the rows Spark's ``WHERE`` keeps:
three-valued logic (a comparison with NULL is NULL, ``IN`` is NULL for a NULL value or, without a
match, for a list holding NULL, ``NOT NULL`` is NULL, and only TRUE rows are kept; pyarrow's
``is_in`` would match NULL to NULL), and Spark's NaN rules for floating columns (``NaN = NaN``, and
NaN is larger than every other number). Long ``AND``/``OR`` chains are flattened and rebuilt as
balanced trees; nesting deeper than :data:`MAX_DEPTH`, numbers outside 64-bit range and text that
does not tokenize are refused with one line that names the filter (never sqlglot's internals).
"""

from __future__ import annotations

from typing import Any

from ..errors import DatasetError

__all__ = ["FilterError", "parse_filter", "filter_columns", "MAX_DEPTH"]

MAX_DEPTH = 24  # nested parentheses / NOT levels a filter may have (sqlglot spends ~20 frames on each)
_EXAMPLE = 'write conditions like "label = 1 AND x > 0"'


class FilterError(DatasetError):
    """A row filter cannot be parsed or names a column the table does not have."""


def _shown(text: str) -> str:
    """The filter as an error quotes it: one line, at most ~100 characters."""
    flat = " ".join(str(text).split())
    return repr(flat if len(flat) <= 100 else flat[:97] + "...")


def _unknown(name: str, columns: list[str], what: str) -> FilterError:
    import difflib

    near = difflib.get_close_matches(name, columns, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return FilterError(f"{what} names column {name!r}, which the table does not have{hint}; columns: {columns}")


def _node_text(node: Any) -> str:
    """A node as Spark SQL, for an error message (short; never the parser's class names)."""
    try:
        s = node.sql(dialect="spark")
    except Exception:  # a tree sqlglot cannot print back (too deep, unsupported)
        s = type(node).__name__.upper()
    return repr(s if len(s) <= 60 else s[:57] + "...")


class _Translator:
    """SQL condition tree -> pyarrow expression with Spark's NULL and NaN semantics."""

    def __init__(self, text: str, schema: Any) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        self.text, self.schema, self.columns = text, schema, list(schema.names)
        self.pa, self.pc = pa, pc
        self.null = pc.scalar(pa.scalar(None, pa.bool_()))  # SQL's NULL (unknown) as a boolean

    def fail(self, what: str) -> FilterError:
        return FilterError(f"filter {_shown(self.text)}: {what}")

    # -- leaves ------------------------------------------------------------------------------------
    def field(self, n: Any) -> Any:
        from sqlglot import exp

        if not isinstance(n, exp.Column) or n.table or not isinstance(n.this, exp.Identifier):
            raise self.fail(f"expected a column name, got {_node_text(n)}")
        if n.name not in self.columns:
            raise _unknown(n.name, self.columns, f"filter {_shown(self.text)}")
        return self.pc.field(n.name)

    def floating(self, n: Any) -> bool:
        """Whether side *n* is a floating-point column (the only values that can be NaN)."""
        from sqlglot import exp

        return isinstance(n, exp.Column) and self.pa.types.is_floating(self.schema.field(n.name).type)

    def number(self, node: Any) -> Any:
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Neg):
            v = self.number(node.this)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v
        elif isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            try:
                return int(node.this)
            except ValueError:
                return float(node.this)
        elif isinstance(node, exp.Boolean):
            return bool(node.this)
        elif isinstance(node, exp.Null):
            return None
        elif isinstance(node, (exp.Concat, exp.DPipe)):  # 'a' 'b' and 'a' || 'b' are 'ab' in Spark
            parts = node.expressions if isinstance(node, exp.Concat) else [node.this, node.expression]
            values = [self.number(p) for p in parts]
            if all(isinstance(v, str) for v in values):
                return "".join(values)
        raise self.fail(f"{_node_text(node)} is not a literal; compare columns with numbers, strings, true/false")

    def literal(self, node: Any) -> Any:
        import math

        v = self.number(node)
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
            raise self.fail(f"the number {v} is outside the 64-bit integer range")
        if isinstance(v, float) and not math.isfinite(v):
            raise self.fail(f"the number {_node_text(node)} is outside the double range")
        return v

    def side(self, n: Any) -> Any:
        from sqlglot import exp

        while isinstance(n, exp.Paren):
            n = n.this
        return self.field(n) if isinstance(n, exp.Column) else self.pc.scalar(self.literal(n))

    # -- Spark comparisons ---------------------------------------------------------------------------
    def compare(self, op: str, left: Any, right: Any) -> Any:
        """``left op right`` as Spark evaluates it: NULL with a NULL side; for floating columns NaN
        equals NaN and is larger than any other number (pyarrow compares NaN as IEEE does)."""
        from sqlglot import exp

        while isinstance(left, exp.Paren):
            left = left.this
        while isinstance(right, exp.Paren):
            right = right.this
        if isinstance(left, exp.Null) or isinstance(right, exp.Null):
            self.side(right if isinstance(left, exp.Null) else left)  # the other side is still checked
            return self.null  # x = NULL, x < NULL, ...: NULL, so no row
        a, b = self.side(left), self.side(right)
        fa, fb = self.floating(left), self.floating(right)
        pc = self.pc

        def nan(x: Any) -> Any:
            return pc.is_nan(x)

        def below_nan(x: Any, is_float: bool, is_col: bool) -> Any:
            # x is a number smaller than NaN: NULL stays NULL, NaN is not
            return ~pc.is_nan(x) if is_float else (pc.is_valid(x) if is_col else pc.scalar(True))

        def eq() -> Any:
            return (a == b) | (nan(a) & nan(b)) if fa and fb else a == b

        def gt() -> Any:
            return (a > b) | (nan(a) & below_nan(b, fb, isinstance(right, exp.Column))) if fa else a > b

        def lt() -> Any:
            return (a < b) | (below_nan(a, fa, isinstance(left, exp.Column)) & nan(b)) if fb else a < b

        if op == "eq":
            return eq()
        if op == "neq":
            return ~eq()
        if op == "gt":
            return gt()
        if op == "lt":
            return lt()
        if op == "gte":
            return gt() | eq() if fa or fb else a >= b
        return lt() | eq() if fa or fb else a <= b  # lte

    def isin(self, node: Any) -> Any:
        """``x IN (v...)``: TRUE on a match; NULL for a NULL x, or without a match when the list
        holds NULL; FALSE otherwise (Spark's ``In``; pyarrow's ``is_in`` matches NULL to NULL)."""
        pa, pc = self.pa, self.pc
        x = self.field(node.this)
        values = [self.literal(v) for v in node.expressions]
        present = [v for v in values if v is not None]
        try:
            value_set = pa.array(present).cast(self.schema.field(node.this.name).type, safe=True)  # 1.5 never becomes 1
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, OverflowError):
            # values of another type (1.5 for an integer column): Spark compares them one by one
            eqs = [self.compare("eq", node.this, v) for v in node.expressions]
            return self.balanced(eqs, lambda a, b: a | b)
        hit = pc.is_in(x, value_set=value_set, skip_nulls=True)  # a NULL x: FALSE here, NULL below
        if len(present) < len(values):
            return hit | self.null  # no match against a list with NULL: unknown
        return pc.if_else(pc.is_null(x), self.null, hit)

    # -- the tree ------------------------------------------------------------------------------------
    def balanced(self, items: list[Any], combine: Any) -> Any:
        """Combine many operands as a balanced tree (a chain of 3,000 ORs nests 12 levels, not 3,000)."""
        while len(items) > 1:
            items = [
                combine(items[i], items[i + 1]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)
            ]
        return items[0]

    def expr(self, node: Any, depth: int = 0) -> Any:
        from sqlglot import exp

        if depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} levels deep; use IN (...) for long lists of values")
        while isinstance(node, exp.Paren):
            node = node.this
        cmp = {exp.EQ: "eq", exp.NEQ: "neq", exp.GT: "gt", exp.GTE: "gte", exp.LT: "lt", exp.LTE: "lte"}
        if isinstance(node, (exp.And, exp.Or)):
            parts = [self.expr(p, depth + 1) for p in node.flatten()]  # flatten walks without recursion
            return self.balanced(parts, (lambda a, b: a & b) if isinstance(node, exp.And) else (lambda a, b: a | b))
        if isinstance(node, exp.Not):
            return ~self.expr(node.this, depth + 1)
        if type(node) in cmp:
            return self.compare(cmp[type(node)], node.this, node.expression)
        if isinstance(node, exp.In) and not node.args.get("query") and not node.args.get("unnest"):
            return self.isin(node)
        if isinstance(node, exp.Between):
            low = self.compare("gte", node.this, node.args["low"])
            return low & self.compare("lte", node.this, node.args["high"])
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return self.pc.is_null(self.field(node.this))
        if isinstance(node, exp.Column):  # a boolean column on its own
            return self.field(node)
        raise self.fail(
            f"{_node_text(node)} is not supported; use comparisons, AND/OR/NOT, IN, BETWEEN, IS NULL, "
            f"or pass a pyarrow expression (pyarrow.compute.field('x') > 0)"
        )


def _doubled_quotes(flt: str, tokens: list[Any]) -> str:
    """*flt* with each doubled quote inside a string (``'it''s'``, Spark's "it's") written as
    ``\\'``: sqlglot reads it as two adjacent strings, which Spark joins only when they are apart
    (``'it' 's'`` is "its"). Same length, so error columns still match what the user wrote."""
    from sqlglot.tokens import TokenType

    chars = list(flt)
    for a, b in zip(tokens, tokens[1:], strict=False):
        if a.token_type == b.token_type == TokenType.STRING and b.start == a.end + 1 and flt[a.end] == flt[b.start]:
            chars[a.end] = "\\"
    return "".join(chars)


def _parse_sql(flt: str) -> Any:
    """The one condition tree of *flt*, or a one-line :class:`FilterError` (never sqlglot's text)."""
    import sqlglot
    from sqlglot.errors import ParseError, SqlglotError, TokenError
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.Dialect.get_or_raise("spark").tokenize(flt)
    except TokenError:
        raise FilterError(f"filter {_shown(flt)} has an unclosed quote, backtick or comment; {_EXAMPLE}") from None
    src = _doubled_quotes(flt, tokens)
    parens = run = deepest = 0
    for t in tokens:  # the parser recurses per level: refuse deep nesting before it starts
        if t.token_type == TokenType.L_PAREN:
            parens += 1
        elif t.token_type == TokenType.R_PAREN:
            parens = max(parens - 1, 0)
        if t.token_type in (TokenType.NOT, TokenType.DASH):
            run += 1  # NOT NOT ... and - - ... nest without parentheses
        elif t.token_type != TokenType.L_PAREN:
            run = 0
        deepest = max(deepest, parens + run)
    if deepest > MAX_DEPTH:
        raise FilterError(
            f"filter {_shown(flt)} is nested more than {MAX_DEPTH} levels deep; use IN (...) for long lists of values"
        )
    try:
        trees = sqlglot.parse(src, dialect="spark")
    except ParseError as exc:
        err = (exc.errors or [{}])[0]
        near = f"{err.get('start_context', '')}{err.get('highlight', '')}".strip()[-40:]
        where = f" near {near!r} (column {err['col']})" if near and err.get("col") else ""
        raise FilterError(
            f"filter {_shown(flt)} is not a SQL condition: it does not parse{where}; {_EXAMPLE}"
        ) from None
    except RecursionError:
        raise FilterError(f"filter {_shown(flt)} is nested too deeply; use IN (...) for long lists of values") from None
    except (SqlglotError, ValueError):
        raise FilterError(f"filter {_shown(flt)} is not a SQL condition; {_EXAMPLE}") from None
    if len(trees) != 1 or trees[0] is None:
        raise FilterError(f"filter {_shown(flt)}: give exactly one condition (no ';')")
    return trees[0]


def parse_filter(flt: Any, schema: Any) -> Any:
    """A pyarrow ``Expression`` for *flt* (``None``, a SQL condition string, or an expression),
    checked against *schema* (a ``pyarrow.Schema``) by applying it to an empty table."""
    if flt is None:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(flt, pc.Expression):
        expr = flt
    elif not isinstance(flt, str) or not flt.strip():
        raise FilterError(f'filter {flt!r}: give a SQL condition like "label = 1 AND x > 0" or a pyarrow expression')
    else:
        try:
            expr = _Translator(flt, schema).expr(_parse_sql(flt))
        except RecursionError:
            raise FilterError(
                f"filter {_shown(flt)} is nested too deeply; use IN (...) for long lists of values"
            ) from None
    try:
        schema.empty_table().filter(expr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
        cols = ", ".join(f"{f.name} {f.type}" for f in schema)
        raise FilterError(
            f"filter {_shown(str(flt))} does not apply to the table ({str(exc).splitlines()[0]}); columns: {cols}"
        ) from None
    return expr


def filter_columns(expr: Any, columns: list[str]) -> list[str]:
    """The columns of *columns* that expression *expr* may refer to (a superset is harmless: they are only read)."""
    import re

    if expr is None:
        return []
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(expr)))
    return [c for c in columns if c in named or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c)]
