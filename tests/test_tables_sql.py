"""The SQL rewrite for the embedded store, on its own (no server): which references move, which stay.

The same queries run against the real embedded server in tests/test_tables.py."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from air_magics.errors import AirError, TableNameError
from air_magics.tablefiles.names import TableName
from air_magics.tables.spark_errors import one_line
from air_magics.tables.sql import rewrite_sql, user_spelling

E = "`spark_catalog`.`main__ds`"


@pytest.mark.parametrize(
    "query,tables,has",
    [
        ("SELECT * FROM main.ds.sales", ["main.ds.sales"], [f"{E}.`sales`"]),
        ("SELECT * FROM `main`.`ds`.`sales` AS s", ["main.ds.sales"], [f"{E}.`sales` AS s"]),
        ("SELECT * FROM ds.sales", ["main.ds.sales"], [f"{E}.`sales`"]),
        ("SELECT * FROM sales", ["main.default.sales"], ["`spark_catalog`.`main__default`.`sales`"]),
        (
            "SELECT a.id FROM main.ds.a JOIN other.s2.b ON a.id = b.id WHERE a.id IN (SELECT id FROM ds.c)",
            ["main.ds.a", "other.s2.b", "main.ds.c"],
            [f"{E}.`a`", "`spark_catalog`.`other__s2`.`b`", f"{E}.`c`"],
        ),
        ("INSERT INTO main.ds.t SELECT * FROM main.ds.u", ["main.ds.t", "main.ds.u"], [f"INSERT INTO {E}.`t`"]),
    ],
)
def test_table_references_are_rewritten(query, tables, has):
    r = rewrite_sql(query)
    assert r.changed and list(r.tables) == tables
    for piece in has:
        assert piece in r.sql


def test_only_table_references_move():
    q = "WITH recent AS (SELECT * FROM main.ds.sales) SELECT 'main.ds.sales' AS label, r.* FROM recent r, range(3)"
    r = rewrite_sql(q)
    assert r.tables == ("main.ds.sales",)
    assert r.sql == q.replace("FROM main.ds.sales", f"FROM {E}.`sales`")  # literal, CTE name, range(3) stay
    sub = rewrite_sql("SELECT s.x FROM (SELECT 1 AS x) AS s")
    assert not sub.changed and sub.sql == "SELECT s.x FROM (SELECT 1 AS x) AS s"


def test_everything_but_table_names_goes_byte_for_byte():
    """sqlglot regenerating the query turned 'O''Brien' into CONCAT('O', 'Brien'): another value."""
    q = (
        "SELECT /*+ REPARTITION(4) */ name, 'it''s' AS s, \"a\\\"b\" AS d, nvl(x, 0) AS x -- main.ds.people\n"
        "FROM main.ds.people  p   WHERE name = 'O''Brien' /* ds.people */ AND p.x <=> NULL;\n"
        "select * from `main` . `ds`.`people`"
    )
    r = rewrite_sql(q)
    want = q.replace("main.ds.people  p", f"{E}.`people`  p").replace("`main` . `ds`.`people`", f"{E}.`people`")
    assert r.changed and r.sql == want and r.tables == ("main.ds.people", "main.ds.people")


_PART = hst.from_regex(r"tb[a-z0-9]{0,5}(_[a-z0-9]{1,3})?", fullmatch=True)
_TEXT = hst.text(hst.characters(blacklist_categories=("Cs", "Cc")) | hst.sampled_from("'\"\\\n-/*;`.?"), max_size=12)


def _literal(text: str, quote: str) -> str:
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "\\n") + quote


@settings(max_examples=150, deadline=None)
@given(
    parts=hst.lists(_PART, min_size=1, max_size=3),
    backticks=hst.lists(hst.booleans(), min_size=3, max_size=3),
    texts=hst.lists(_TEXT, min_size=4, max_size=4),
    quotes=hst.lists(hst.sampled_from("'\""), min_size=2, max_size=2),
    upper=hst.booleans(),
)
def test_rewrite_changes_the_table_reference_only(parts, backticks, texts, quotes, upper):
    ref = ".".join(f"`{p}`" if q else p for p, q in zip(parts, backticks, strict=False))
    ref = ref.upper() if upper else ref
    # no '/' in the comment: "*/" would end it early, and "/*" would nest (Spark nests comments)
    head = f"SELECT {_literal(texts[0], quotes[0])} AS c1, /* {texts[1].replace('/', '')} */ c2 FROM "
    tail = f" AS x WHERE c = {_literal(texts[2], quotes[1])} -- {texts[3].replace(chr(10), ' ')}"
    r = rewrite_sql(head + ref + tail)
    tn = TableName.from_parts([p.upper() if upper else p for p in parts])
    assert r.sql == head + tn.embedded_sql() + tail and r.tables == (str(tn),)


def test_an_unclosed_nested_comment_is_left_as_written():
    """Spark reads ``/* /* */ ...`` as one comment never closed: the query goes to Spark untouched
    (it reports the error), never with a name after the first ``*/`` rewritten."""
    query = "SELECT 1 AS a, /* /* */ c2 FROM tb"
    assert rewrite_sql(query).sql == query


@pytest.mark.parametrize(
    "query,want",
    [
        ("SELECT /* a /* b */ c */ x FROM tb", "SELECT /* a /* b */ c */ x FROM {d}.`tb`"),
        ("SELECT x FROM /* a /* ds.t */ main.ds.t */ main.ds.u", "SELECT x FROM /* a /* ds.t */ main.ds.t */ {e}.`u`"),
        (
            "SELECT x FROM ds.t -- /* \n/* a /* b */ */ WHERE 1=1",
            "SELECT x FROM {e}.`t` -- /* \n/* a /* b */ */ WHERE 1=1",
        ),
    ],
)
def test_a_nested_comment_is_one_comment_as_in_spark(query, want):
    """Spark nests bracketed comments and sqlglot does not: the query is rewritten as Spark reads
    it (the whole nested comment is one comment, left byte for byte; names after it are rewritten;
    a name inside it never is). Issue 36: the rewrite used to give up, and the store's 3-part name
    failed with REQUIRES_SINGLE_PART_NAMESPACE."""
    r = rewrite_sql(query)
    assert r.sql == want.format(d="`spark_catalog`.`main__default`", e=E)
    assert r.changed


def test_comment_markers_inside_strings_do_not_count_as_nesting():
    r = rewrite_sql("SELECT '/* /*' AS a FROM tb")
    assert r.sql != "SELECT '/* /*' AS a FROM tb" and "/* /*" in r.sql  # rewritten: the string holds no comment


@pytest.mark.parametrize(
    "query,want",
    [
        # a CTE is not visible in its own definition: the inner t is the real table
        ("WITH t AS (SELECT * FROM t) SELECT * FROM t", "WITH t AS (SELECT * FROM {d}.`t`) SELECT * FROM t"),
        # ... nor in the CTEs before it: inside a, b is the real table b
        (
            "WITH a AS (SELECT * FROM b), b AS (SELECT * FROM a) SELECT * FROM a JOIN b",
            "WITH a AS (SELECT * FROM {d}.`b`), b AS (SELECT * FROM a) SELECT * FROM a JOIN b",
        ),
        ("WITH x AS (SELECT 1) SELECT * FROM (WITH y AS (SELECT * FROM x) SELECT * FROM y)", None),
        (
            "SELECT * FROM (WITH y AS (SELECT 1) SELECT * FROM y) JOIN y",
            "SELECT * FROM (WITH y AS (SELECT 1) SELECT * FROM y) JOIN {d}.`y`",
        ),
        ("WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r", None),
        ("WITH T AS (SELECT 1) SELECT * FROM t", None),
    ],
)
def test_cte_names_follow_spark_scopes(query, want):
    r = rewrite_sql(query)
    assert r.sql == (want or query).format(d="`spark_catalog`.`main__default`")


@pytest.mark.parametrize("query", ["SELECT * FROM ds.`t.x`", "SELECT * FROM main.`ds.t`.x", "SELECT 1 FROM `a.b`"])
def test_a_quoted_part_with_a_dot_is_refused(query):
    """ds.`t.x` was joined and split again: main... no, catalog ds, schema t, table x, another table."""
    with pytest.raises(TableNameError, match=r"holds a dot, so it is one part") as e:
        rewrite_sql(query)
    assert isinstance(e.value, (AirError, ValueError)) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM parquet.`/tmp/x.parquet`",  # a file (Spark's SQL on files), not a table
        "SELECT * FROM spark_catalog.main__ds.sales",  # the store's own spelling still works  # the store's own spelling still works
        "SELECT * FROM global_temp.v",
        "SELECT * FROM parquet.`/tmp/x`",
        "SELECT * FROM `ünï`.`a;b`.`c``d`",  # not a name the store holds: Spark says so
        "SELECT * FROM main.a__b.t",
        "SELEC 1 FROM main.ds.sales",  # sqlglot cannot parse it: Spark's own error
        "SELECT * FROM main.ds.t WHERE",
        "SHOW TABLES IN main.ds",
    ],
)
def test_left_as_written(query):
    r = rewrite_sql(query)
    assert r.sql == query and not r.changed


def test_one_part_temporary_views_stay_and_are_asked_for_once():
    asked = []

    def views():
        asked.append(1)
        return {"Recent"}

    r = rewrite_sql("SELECT * FROM recent JOIN sales USING (id) JOIN main.ds.x USING (id)", temp_views=views)
    assert r.tables == ("main.default.sales", "main.ds.x") and "JOIN recent" not in r.sql
    assert "FROM recent" in r.sql and asked == [1]
    rewrite_sql("SELECT * FROM main.ds.x", temp_views=views)
    assert asked == [1]  # no one-part name: the session is not asked


def test_user_spelling():
    assert user_spelling("`spark_catalog`.`main__ds`.`sales`") == "main.ds.sales"
    assert user_spelling("main__ds.sales") == "main.ds.sales"
    assert user_spelling("`spark_catalog`.`default`.`t`") == "default.t"
    assert user_spelling("`cat`.`s`.`t`") == "cat.s.t"


class _Err(Exception):
    def __init__(self, cond, params, text=""):
        super().__init__(text or cond)
        self.cond, self.params = cond, params

    def getCondition(self):
        return self.cond

    def getMessageParameters(self):
        return self.params


def test_one_line_messages_name_the_fix():
    missing = one_line(_Err("TABLE_OR_VIEW_NOT_FOUND", {"relationName": "`spark_catalog`.`main__ds`.`sales`"}))
    assert missing.startswith("no such table main.ds.sales") and "%air_table --tables" in missing
    col = one_line(_Err("UNRESOLVED_COLUMN.WITH_SUGGESTION", {"objectName": "`nope`", "proposal": "`id`, `x`"}))
    assert "no column 'nope'" in col and "id, x" in col and "--where" in col
    bad = one_line(
        _Err("PARSE_SYNTAX_ERROR", {}, "\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'. SQLSTATE: 42601")
    )
    assert bad == "SQL syntax error: Syntax error at or near 'SELEC' (fix the query)"
    assert one_line(_Err("DIVIDE_BY_ZERO", {})) is None  # Spark's own first line is shown
    assert all("\n" not in m for m in (missing, col, bad))


def test_without_sqlglot_the_query_goes_as_written_and_the_error_says_what_to_install(monkeypatch):
    import importlib.util

    from air_magics.tables import sql

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sqlglot" else real(name, *a))
    assert not sql.have_sqlglot()
    assert rewrite_sql("SELECT * FROM main.ds.sales").sql == "SELECT * FROM main.ds.sales"
    msg = one_line(
        _Err(
            "REQUIRES_SINGLE_PART_NAMESPACE",
            {"sessionCatalog": "spark_catalog", "namespace": "`main`.`ds`"},
            "[REQUIRES_SINGLE_PART_NAMESPACE] spark_catalog requires a single-part namespace. SQLSTATE: 42K05",
        )
    )
    assert "pip install 'air_magics[tables]'" in msg and "\n" not in msg
