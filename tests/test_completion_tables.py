"""``%air_table NAME<Tab>``: table names from the session this process already has (issue 18, item 9).

Starts the embedded Spark Connect server once (the test's own table write does; a Tab never does)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def tables_server(tmp_path_factory):
    import os

    from air_magics import tables

    saved = {k: os.environ.get(k) for k in ("AIR_SPARK_DIR", "SPARK_REMOTE")}
    os.environ["AIR_SPARK_DIR"] = str(tmp_path_factory.mktemp("spark"))
    os.environ.pop("SPARK_REMOTE", None)
    try:
        import pandas as pd

        for name in ("main.comp.alpha", "main.comp.beta", "main.other.gamma"):
            tables.write_table(pd.DataFrame({"x": [1]}), name, mode="overwrite")
        yield
    finally:
        tables.stop_server()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _complete(ip, line: str) -> list[str]:
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        return [c.text for c in ip.Completer.completions(line, len(line))]


def test_table_names_complete_from_the_running_server(ip, tables_server, monkeypatch):
    monkeypatch.setenv("AIR_SPARK_DIR", __import__("os").environ["AIR_SPARK_DIR"])
    assert _complete(ip, "%air_table main.comp.") == ["main.comp.alpha", "main.comp.beta"]
    assert _complete(ip, "%air_table main.o") == ["main.other.gamma"]
    assert _complete(ip, "%air_table main.comp.alpha --as pandas --li") == ["--limit"]
