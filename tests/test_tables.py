"""Tables against a real embedded Spark Connect server and a separately started one (sc:// URL)."""

import os
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest

from air_magics import tables
from air_magics.errors import ExportTargetError, TableNameError, TablesError, TableTooLargeError, VolumePathError
from air_magics.status import list_status
from air_magics.tables import server as srv_mod
from air_magics.tables.export import hf_cache_dir
from air_magics.volumes import VolumeStore

pytestmark = pytest.mark.spark


@pytest.fixture(autouse=True)
def _spark_env(shared_spark):
    """Every test here uses the run's shared embedded server (conftest ``spark_server``)."""


def test_concurrent_starters_share_one_server_that_outlives_them(spark_server):
    """The shared server was started by two client processes at once that then exited (conftest)."""
    (pid_a, port_a, starter_a), (pid_b, port_b, starter_b) = spark_server["servers"]
    assert (pid_a, port_a) == (pid_b, port_b)  # one server, whichever process got the lock first
    assert starter_a == starter_b and starter_a in spark_server["starters"]
    assert not psutil.pid_exists(starter_a)  # the starter has exited ...
    assert tables.read_sql("SELECT 41 + 1 AS n").n[0] == 42  # ... and its server still answers this process
    assert srv_mod.running_server().pid == pid_a  # the same one: no restart
    javas = [
        p
        for p in psutil.process_iter(["cmdline"])
        if "SparkConnectServer" in " ".join(p.info["cmdline"] or [])
        and f"-Dderby.system.home={srv_mod.store_dir()}" in " ".join(p.info["cmdline"] or [])
    ]
    assert [p.pid for p in javas] == [pid_a]


@pytest.fixture(scope="module")
def nums(spark_server, tmp_path_factory):
    """``main.test.nums`` (2,000 rows) on the shared server, written once for the module: no test here
    changes it (each write took about half a second)."""
    df = pd.DataFrame({"id": range(2000), "name": [f"n{i}" for i in range(2000)], "x": [i / 4 for i in range(2000)]})
    with pytest.MonkeyPatch.context() as mp:  # set up before the per-test AIR_HOME: one of its own
        mp.setenv("AIR_HOME", str(tmp_path_factory.mktemp("nums-home")))
        mp.setenv("AIR_SPARK_DIR", spark_server["store"])
        tables.write_table(df, "main.test.nums", mode="overwrite")
    return df


def test_write_read_select_filter_limit(nums):
    got = tables.read_table("main.test.nums")
    assert got.sort_values("id").reset_index(drop=True).equals(nums)
    sel = tables.read_table("main.test.nums", columns=["id", "x"], where="id >= 1990", limit=5)
    assert list(sel.columns) == ["id", "x"] and len(sel) == 5 and (sel.id >= 1990).all()
    arr = tables.read_table("main.test.nums", where="id < 3", to="numpy")
    assert arr.dtype.names == ("id", "name", "x") and sorted(arr["id"]) == [0, 1, 2]
    arrow = tables.read_table("main.test.nums", limit=10, to="arrow")
    assert arrow.num_rows == 10 and arrow.schema.names == ["id", "name", "x"]
    q = tables.read_sql("SELECT count(*) AS n FROM spark_catalog.main__test.nums")
    assert q.n[0] == 2000
    assert "main.test.nums" in tables.list_tables() and tables.list_tables("main.test") == ["main.test.nums"]
    assert tables.list_tables("main.nothing") == []
    summary = tables.describe_table("main.test.nums")
    assert summary.rows == 2000 and summary.columns[0] == ("id", "bigint") and "2,000 rows" in repr(summary)
    with pytest.raises(TablesError, match="already exists"):
        tables.write_table(nums, "main.test.nums")


@pytest.mark.parametrize(
    "bad", ["x;DROP TABLE y", "`a`.b", "a b", "a.b.c.d", "'q'", "", "main__x.s.t", "tablé", 'a"b', "a`b", "t;"]
)
def test_hostile_names_never_reach_sql(bad):
    with pytest.raises(TableNameError):
        tables.read_table(bad)


def test_missing_table_and_bad_arguments():
    with pytest.raises(TablesError, match="no such table"):
        tables.read_table("main.test.does_not_exist")
    with pytest.raises(TablesError, match="not one of"):
        tables.read_table("main.test.nums", to="excel")
    with pytest.raises(TablesError, match="empty query"):
        tables.read_sql("  ")
    with pytest.raises(TablesError, match="sc://"):
        tables.read_table("t", remote="http://localhost:15002")


def test_dead_server_reported_in_seconds():
    t0 = time.time()
    with pytest.raises(TablesError, match="cannot reach the Spark Connect server at sc://127.0.0.1:1"):
        tables.read_table("t", remote="sc://127.0.0.1:1")
    assert time.time() - t0 < 30  # not the default ten-minute retry policy


@pytest.mark.parametrize("via", ["server", "client"])
def test_export_then_load_with_datasets(nums, via):
    VolumeStore().create("main.test.exports", exist_ok=True)
    dest = f"/Volumes/main/test/exports/nums_{via}"
    r = tables.export_table("main.test.nums", dest, via=via, rows_per_file=700, mode="overwrite")
    assert r.rows == 2000 and r.via == via and len(r.files) >= 3 and all(f.startswith(dest) for f in r.files)
    ds = r.load_dataset()
    assert ds.num_rows == 2000 and sorted(ds["id"]) == list(range(2000))
    hf_cache = hf_cache_dir()  # datasets' Arrow cache stays under AIR_HOME (None: the user set HF_HOME)
    assert hf_cache is None or all(f["filename"].startswith(str(hf_cache)) for f in ds.cache_files)
    folder = VolumeStore().locate(dest).path  # Parquet files only: every reader takes the folder as it is
    assert sorted(os.listdir(folder)) == sorted(n for n in os.listdir(folder) if n.endswith(".parquet"))
    import datasets
    import pandas as pd
    import pyarrow.dataset as pads

    assert len(pd.read_parquet(folder)) == 2000 and pads.dataset(folder).count_rows() == 2000
    assert datasets.load_dataset("parquet", data_dir=folder, split="train").num_rows == 2000
    with pytest.raises(TablesError, match="already exists"):
        tables.export_table("main.test.nums", dest)
    r2 = tables.export_table(sql="SELECT id FROM main.test.nums WHERE id < 10", dest=dest, mode="overwrite", via=via)
    assert r2.rows == 10  # replaced
    jobs = list_status("job-export-")
    assert jobs and jobs[0]["state"] == "done" and jobs[0]["rows"] == 10


def test_failed_export_leaves_nothing(nums):
    store = VolumeStore()
    store.create("main.test.exports", exist_ok=True)
    with pytest.raises(TablesError):
        tables.export_table(
            sql="SELECT raise_error('boom') AS x FROM spark_catalog.main__test.nums",
            dest="/Volumes/main/test/exports/broken",
        )
    parent = store.locate("/Volumes/main/test/exports").path
    assert not os.path.exists(os.path.join(parent, "broken"))
    assert not [d for d in os.listdir(parent) if d.startswith(".pending-export")]
    with pytest.raises(VolumePathError, match="outside /Volumes"):
        tables.export_table("main.test.nums", "/tmp/out")
    with pytest.raises(TablesError, match="volume root"):
        tables.export_table("main.test.nums", "/Volumes/main/test/exports")


def test_an_interrupted_export_says_so_in_one_line_and_leaves_nothing(nums, ip, capsys):
    """A real SIGINT mid-export (client side, writing Parquet files): the one line, no partial folder,
    the server's job stopped; the magic shows that line alone; a re-run exports."""
    import re
    import signal
    import threading

    from air_magics.errors import Interrupted

    store = VolumeStore()
    store.create("main.test.exports", exist_ok=True)
    parent = store.locate("/Volumes/main/test/exports").path
    pending = lambda: [d for d in os.listdir(parent) if d.startswith(".pending-export")]  # noqa: E731

    def ctrl_c_once_writing() -> threading.Thread:
        def watch() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any(
                f.endswith(".parquet") for d in pending() for f in os.listdir(os.path.join(parent, d))
            ):
                time.sleep(0.01)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        th = threading.Thread(target=watch, daemon=True)
        th.start()
        return th

    big = "SELECT id, repeat('x', 200) AS s FROM range(2000000)"
    watcher = ctrl_c_once_writing()
    with pytest.raises(KeyboardInterrupt) as err:
        tables.export_table(sql=big, dest="/Volumes/main/test/exports/big", via="client", rows_per_file=20_000)
    watcher.join()
    assert isinstance(err.value, Interrupted) and err.value.what == "export"
    assert str(err.value) == (
        "export interrupted: nothing was written to /Volumes/main/test/exports/big (the partial export was "
        "removed and its Spark job stopped); re-run to export again"
    )
    assert not os.path.exists(os.path.join(parent, "big")) and pending() == []
    watcher = ctrl_c_once_writing()
    result = ip.run_cell(f'%air_table --sql "{big}" --export /Volumes/main/test/exports/big --via client')
    watcher.join()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert [ln for ln in lines if "interrupted" in ln or "Traceback" in ln] == [f"UsageError: {err.value}"], lines
    assert not os.path.exists(os.path.join(parent, "big")) and pending() == []
    done = tables.export_table(sql=big, dest="/Volumes/main/test/exports/big", limit=1000)
    assert done.rows == 1000 and re.search(r"1,000 rows", repr(done))


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_export_removes_what_killed_exports_left(nums):
    store = VolumeStore()
    store.create("main.test.exports", exist_ok=True)
    parent = store.locate("/Volumes/main/test/exports").path
    dead = _dead_pid()
    stale = os.path.join(parent, f".pending-export-{dead}-0123456789ab")
    os.makedirs(os.path.join(stale, "_temporary", "0"))
    open(os.path.join(stale, "_temporary", "0", "part-00000.parquet"), "wb").close()
    stale_trash = os.path.join(parent, f".trash-export-{dead}-0123456789ab")
    os.makedirs(stale_trash)
    live = os.path.join(parent, f".pending-export-{os.getppid()}-ba9876543210")  # a running export elsewhere
    os.makedirs(live)
    r = tables.export_table("main.test.nums", "/Volumes/main/test/exports/after_kill", mode="overwrite")
    assert r.rows == 2000
    assert not os.path.exists(stale) and not os.path.exists(stale_trash)
    assert os.path.isdir(live)
    assert not [n for n in os.listdir(parent) if n.startswith(".") and str(os.getpid()) in n]  # ours went too


def test_export_onto_a_file_is_explained(nums):
    store = VolumeStore()
    store.create("main.test.exports", exist_ok=True)
    parent = store.locate("/Volumes/main/test/exports").path
    with open(os.path.join(parent, "afile"), "w") as f:
        f.write("not a folder")
    for dest, says in [
        ("/Volumes/main/test/exports/afile", "is a file"),
        ("/Volumes/main/test/exports/afile/sub", "lies below the file /Volumes/main/test/exports/afile"),
    ]:
        with pytest.raises(ExportTargetError, match=says) as err:
            tables.export_table("main.test.nums", dest, mode="overwrite")
        assert isinstance(err.value, NotADirectoryError) and dest in str(err.value) and "remove" in str(err.value)
    assert open(os.path.join(parent, "afile")).read() == "not a folder"


@pytest.mark.parametrize("parts,k", [({0: 5, 1: 3}, 4), ({0: 0, 2: 7, 5: 1}, 3), ({3: 10}, 10), ({0: 1, 1: 1}, 1)])
def test_row_ranges_cover_every_row_once(parts, k):
    from air_magics.tables.result_stream import row_ranges

    ranges = row_ranges(parts, k)
    ids = [(p << 33) + i for p, n in parts.items() for i in range(n)]
    got = [i for i in ids for lo, hi in ranges if lo <= i < hi]
    assert sorted(got) == sorted(ids) and all(sum(lo <= i < hi for i in ids) <= k for lo, hi in ranges)


def test_client_export_fetches_bounded_chunks_of_one_result(nums, monkeypatch):
    from air_magics.tables import result_stream as stream
    from air_magics.tables.session import get_session

    s = get_session()
    df = s.spark.sql("SELECT id, name FROM spark_catalog.main__test.nums WHERE rand() < 0.5")
    chunks = [c.toArrow() for c in stream._chunks(df, budget=4000)]
    ids = [i for c in chunks for i in c.column("id").to_pylist()]
    assert len(chunks) > 3 and len(ids) == len(set(ids)) and 0 < len(ids) < 2000  # one draw, each row once
    assert max(c.nbytes for c in chunks) < 3 * 4000
    monkeypatch.setenv("AIR_EXPORT_CHUNK_BYTES", "8000")
    VolumeStore().create("main.test.exports", exist_ok=True)
    r = tables.export_table(
        sql="SELECT id FROM spark_catalog.main__test.nums WHERE rand() < 0.5",
        dest="/Volumes/main/test/exports/sampled",
        via="client",
        rows_per_file=300,
        mode="overwrite",
    )
    got = r.load_dataset()["id"]
    assert r.rows == len(got) == len(set(got)) and 0 < r.rows < 2000


def test_remote_server_by_url(remote_spark):
    df = pd.DataFrame({"k": [1, 2, 3]})
    tables.write_table(df, "spark_catalog.default.remote_t", mode="overwrite", remote=remote_spark)
    got = tables.read_table("spark_catalog.default.remote_t", remote=remote_spark)
    assert sorted(got.k) == [1, 2, 3]
    os.environ["SPARK_REMOTE"] = remote_spark
    try:
        assert "spark_catalog.default.remote_t" in tables.list_tables("default")
    finally:
        del os.environ["SPARK_REMOTE"]


def test_notebook_spark_object_is_used(remote_spark):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(remote_spark).create()
    tables.write_table(
        pd.DataFrame({"v": [7]}), "spark_catalog.default.ns_t", mode="overwrite", user_ns={"spark": spark}
    )
    assert tables.read_table("spark_catalog.default.ns_t", user_ns={"spark": spark}).v[0] == 7


_AFTER_DEAD_REMOTE = """
from air_magics import tables
from air_magics.errors import TablesError
try:
    tables.read_table("t", remote="sc://127.0.0.1:1")
except TablesError:
    pass
dest = "/Volumes/main/test/exports/after_dead_remote"
print(tables.export_table("main.test.nums", dest, via="client", mode="overwrite").rows)
"""


def test_a_failed_remote_first_does_not_break_the_embedded_server(nums):
    """pyspark makes the first session a process creates its active one and consults it from calls on
    other sessions: a dead remote tried first failed every later client-side export (UNAVAILABLE)."""
    VolumeStore().create("main.test.exports", exist_ok=True)
    run = subprocess.run([sys.executable, "-c", _AFTER_DEAD_REMOTE], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.split()[-1:] == ["2000"], run.stderr[-2000:]


def test_java_missing_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("AIR_SPARK_DIR", str(tmp_path / "nojava"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(TablesError, match="Java"):
        tables.read_table("main.test.nums")


def test_air_table_magic(nums, tmp_path):
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()  # the shell may already run (tests/test_magics.py)
    ip.run_line_magic("load_ext", "air_magics")
    summary = ip.run_line_magic("air_table", "main.test.nums")
    assert summary.rows == 2000
    ip.run_line_magic("air_table", 'main.test.nums --to pandas -o df --columns id,name --where "id < 10" --limit 3')
    assert list(ip.user_ns["df"].columns) == ["id", "name"] and len(ip.user_ns["df"]) == 3
    out = ip.run_line_magic("air_table", '--sql "SELECT max(id) AS m FROM main.test.nums" --to numpy')
    assert out["m"][0] == 1999
    assert "main.test.nums" in ip.run_line_magic("air_table", "--tables main.test")
    VolumeStore().create("main.test.exports", exist_ok=True)
    ip.run_line_magic(
        "air_table", "main.test.nums --export /Volumes/main/test/exports/magic --mode overwrite --to datasets -o ds"
    )
    assert ip.user_ns["ds"].num_rows == 2000
    for line, needle in [
        ("", "needs a table NAME"),
        ("a;b", "invalid table name"),
        ("main.test.nope", "no such table"),
        ("main.test.nums --to datasets", "add --export"),
        ("x --sql 'SELECT 1'", "not both"),
        ("main.test.nums --to excel", "invalid choice"),
        ("main.test.nums --export /Volumes/main/test/exports/magic", "already exists"),
    ]:
        with pytest.raises(UsageError, match=needle):
            ip.run_line_magic("air_table", line)


def test_a_misspelled_table_gets_the_closest_names(nums):
    """Like a misspelled flag: the catalog's closest table names, in the user's spelling, on one line."""
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    for call, near in [
        (lambda: tables.read_table("main.test.num"), "main.test.nums"),  # the table part: its own schema looked at
        (lambda: tables.describe_table("main.tset.nums"), "main.test.nums"),  # the schema part: the whole catalog
        (lambda: tables.read_sql("SELECT * FROM main.test.numz"), "main.test.nums"),
        (lambda: tables.read_table("MAIN.TEST.NUMSS"), "main.test.nums"),
    ]:
        with pytest.raises(TablesError) as err:
            call()
        msg = str(err.value)
        assert f"(did you mean {near}?)" in msg and "\n" not in msg and "main__" not in msg, msg
    with pytest.raises(TablesError) as err:  # nothing close: no guess
        tables.read_table("main.test.zzzzzzzz")
    assert "no such table main.test.zzzzzzzz;" in str(err.value) and "did you mean" not in str(err.value)
    ip = start_ipython() or get_ipython_shell()
    ip.run_line_magic("load_ext", "air_magics")
    with pytest.raises(UsageError, match=r"no such table main\.test\.num \(did you mean main\.test\.nums\?\)"):
        ip.run_line_magic("air_table", "main.test.num")


def get_ipython_shell():
    from IPython import get_ipython

    return get_ipython()


def test_three_part_names_in_sql(nums):
    n = lambda q: int(tables.read_sql(q).n[0])  # noqa: E731
    assert n("SELECT count(*) AS n FROM main.test.nums") == 2000
    assert n("SELECT count(*) AS n FROM `main`.`test`.`nums` WHERE name <> 'main.test.nums'") == 2000
    assert n("SELECT count(*) AS n FROM test.nums") == 2000  # schema.table: catalog main
    assert n("SELECT count(*) AS n FROM spark_catalog.main__test.nums") == 2000  # the store's spelling still works
    cte = "WITH top AS (SELECT id FROM main.test.nums WHERE id >= 1990) SELECT count(*) AS n FROM top JOIN main.test.nums t USING (id)"
    assert n(cte) == 10
    from air_magics.tables.session import get_session

    spark = get_session().spark  # a temporary view named by one part is the session's, not main.default's
    spark.createDataFrame(pd.DataFrame({"v": [1, 2, 3]})).createOrReplaceTempView("air_tv")
    try:
        assert sorted(tables.read_sql("SELECT v FROM air_tv").v) == [1, 2, 3]
    finally:
        spark.catalog.dropTempView("air_tv")


def test_sql_errors_are_one_line_in_the_users_terms(nums, capfd):
    with pytest.raises(TablesError) as err:
        tables.read_sql("SELECT * FROM main.test.missing")
    msg = str(err.value)
    assert "no such table main.test.missing" in msg and "%air_table --tables" in msg and "main__" not in msg
    with pytest.raises(TablesError, match="syntax error") as err:  # sqlglot cannot parse it: Spark's error
        tables.read_sql("SELEC id FROM main.test.nums")
    with pytest.raises(TablesError, match="no column 'nope'.*id, name, x") as err:
        tables.read_table("main.test.nums", where="nope > 1")
    with pytest.raises(TablesError, match="no column 'nope'") as err:
        tables.read_table("main.test.nums", columns=["id", "nope"])
    with pytest.raises(TablesError, match="DIVIDE_BY_ZERO") as err:
        tables.read_sql("SELECT 1 / (id - id) FROM main.test.nums")
    assert "\n" not in str(err.value)
    err_text = capfd.readouterr().err
    assert "stacktrace" not in err_text.lower() and "org.apache" not in err_text and "nope" not in err_text


def test_remote_sql_passes_unchanged(remote_spark):
    tables.write_table(
        pd.DataFrame({"k": [1, 2]}), "spark_catalog.default.remote_sql", mode="overwrite", remote=remote_spark
    )
    got = tables.read_sql("SELECT count(*) AS n FROM spark_catalog.default.remote_sql", remote=remote_spark)
    assert got.n[0] == 2
    with pytest.raises(TablesError) as err:  # not mapped to spark_catalog.main__ds: the remote catalog decides
        tables.read_sql("SELECT * FROM main.ds.remote_sql", remote=remote_spark)
    assert "main__ds" not in str(err.value) and "\n" not in str(err.value)


def test_no_warning_or_trace_at_interpreter_exit(nums):
    code = (
        "from air_magics import tables\n"
        "assert tables.read_sql('SELECT count(*) AS n FROM main.test.nums').n[0] == 2000\n"
        "try:\n    tables.read_table('main.test.nums', where='nope > 1')\nexcept Exception as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=280, env=dict(os.environ)
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "no column 'nope'" in out.stdout
    assert out.stderr.strip() == "", out.stderr[-2000:]  # no RETRIES_EXCEEDED, no JVM trace, nothing


def _segments(err: str) -> list[str]:
    return [seg.strip() for seg in err.replace("\n", "\r").split("\r") if seg.strip()]


def test_export_progress_text_ends_and_does_not_repeat(nums, capfd, monkeypatch):
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "air_magics")
    monkeypatch.setenv("AIR_EXPORT_CHUNK_BYTES", "8000")  # several Spark queries: their tasks add up
    VolumeStore().create("main.test.exports", exist_ok=True)
    capfd.readouterr()
    dest = "/Volumes/main/test/exports/progress"
    ip.run_line_magic("air_table", f"main.test.nums --export {dest} --mode overwrite --via client")
    segs = [s for s in _segments(capfd.readouterr().err) if s.startswith(f"export to {dest}")]
    assert segs and segs[-1].endswith(" · done"), segs  # the final counts with the verdict
    assert all(a != b for a, b in zip(segs, segs[1:], strict=False)), segs  # no line twice in a row
    last = segs[-1]
    assert "2,000 rows" in last, segs
    if "tasks" in last:  # Spark reported tasks: the last count has them all done
        done, total = last.split("tasks ")[1].split(" ")[0].split("/")
        assert done == total, segs
    with pytest.raises(UsageError, match="already exists"):  # refused by its checks: no progress line at all
        ip.run_line_magic("air_table", f"main.test.nums --export {dest}")
    assert "export to" not in capfd.readouterr().err


def test_size_guard_refuses_large_reads_and_passes_small_ones(nums, monkeypatch):
    import psutil
    from IPython import get_ipython
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    from air_magics.tables import size_guard
    from air_magics.tables.session import get_session

    assert size_guard.max_bytes_limit() == size_guard.default_max_bytes() == psutil.virtual_memory().total // 8
    assert size_guard.plan_bytes(get_session().spark.table("spark_catalog.main__test.nums")) > 0
    with pytest.raises(TableTooLargeError, match="over the") as err:
        tables.read_table("main.test.nums", max_bytes=2000)
    assert isinstance(err.value, TablesError) and isinstance(err.value, MemoryError)
    assert "2,000 rows" in str(err.value) and "--to /Volumes" in str(err.value) and "--limit" in str(err.value)
    with pytest.raises(TablesError, match="over the"):
        tables.read_sql("SELECT * FROM main.test.nums", max_bytes="2KB", to="arrow")
    assert len(tables.read_table("main.test.nums", limit=5, max_bytes=2000)) == 5
    # Spark's plan says the whole table for a filter; measured, the 10 rows are well under the limit
    assert len(tables.read_table("main.test.nums", where="id < 10", max_bytes=2000, to="numpy")) == 10
    assert len(tables.read_table("main.test.nums", max_bytes="100MB")) == 2000
    with pytest.raises(TablesError, match="'lots'"):
        tables.read_table("main.test.nums", max_bytes="lots")
    monkeypatch.setenv("AIR_TABLE_MAX_BYTES", "2000")
    with pytest.raises(TablesError, match="over the"):
        tables.read_table("main.test.nums")
    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "air_magics")
    with pytest.raises(UsageError, match="over the"):
        ip.run_line_magic("air_table", '--sql "SELECT * FROM main.test.nums" --as pandas')
    monkeypatch.delenv("AIR_TABLE_MAX_BYTES")
    with pytest.raises(UsageError, match="over the"):
        ip.run_line_magic("air_table", "main.test.nums --max-bytes 2KB")
    assert len(ip.run_line_magic("air_table", "main.test.nums --max-bytes 1GiB --as arrow")) == 2000
