"""``%air_table NAME<Tab>``: table names from the session this process already has (issue 18, item 9).

The tables are written to the run's shared embedded Spark Connect server; a Tab never starts one."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def tables_server(spark_server):
    """Three tables on the run's shared embedded server (conftest ``spark_server``)."""
    import pandas as pd

    from air_magics import tables

    for name in ("main.comp.alpha", "main.comp.beta", "main.other.gamma"):
        tables.write_table(pd.DataFrame({"x": [1]}), name, mode="overwrite")
    return spark_server["store"]


def _complete(ip, line: str) -> list[str]:
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        return [c.text for c in ip.Completer.completions(line, len(line))]


def test_table_names_complete_from_the_running_server(ip, tables_server, shared_spark, monkeypatch):
    from air_magics.magics import completion

    # listing every schema of the shared server took 1.5-4 s on a busy 2-core machine: over the 2 s a
    # Tab waits, the Tab said nothing (a flake); what this test checks is where the names come from
    monkeypatch.setattr(completion, "TABLES_TIMEOUT", 60.0)
    assert _complete(ip, "%air_table main.comp.") == ["main.comp.alpha", "main.comp.beta"]
    assert _complete(ip, "%air_table main.o") == ["main.other.gamma"]
    assert _complete(ip, "%air_table main.comp.alpha --as pandas --li") == ["--limit"]
