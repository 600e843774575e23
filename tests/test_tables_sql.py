"""The SQL rewrite for the embedded store, on its own (no server): which references move, which stay.

The same queries run against the real embedded server in tests/test_tables.py."""

import pytest

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
    assert "'main.ds.sales' AS label" in r.sql  # a string literal is never touched
    assert "FROM recent AS r" in r.sql and "RANGE(3)" in r.sql  # CTE name and table function stay
    sub = rewrite_sql("SELECT s.x FROM (SELECT 1 AS x) AS s")
    assert not sub.changed and sub.sql == "SELECT s.x FROM (SELECT 1 AS x) AS s"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM spark_catalog.main__ds.sales",  # the store's own spelling still works
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
