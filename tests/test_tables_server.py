"""The embedded server's life: nothing starts for a bad request, an unused server stops itself, a
crashed one is started again, ``%air_table --stop`` stops it.

The tests that wait for a server to stop by itself start one of their own (own store, AIR_SPARK_DIR):
the run's shared server (conftest ``spark_server``) must not stop while other tests use it. The last
test crashes and stops the shared one: this module runs after every other module that uses it."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from air_magics import tables
from air_magics.errors import TableNameError, TablesError
from air_magics.tables import activity
from air_magics.tables import server as srv_mod
from air_magics.tables.starting import last_start_seconds
from air_magics.volumes import VolumeStore

pytestmark = pytest.mark.spark


def _store_processes(store) -> list[psutil.Process]:
    """Processes (supervisor, JVM) whose command line names *store*."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if str(store) in " ".join(p.info["cmdline"] or []) and p.pid != os.getpid():
            out.append(p)
    return out


def _exited(p: psutil.Process) -> bool:
    """*p* has exited: gone, or a zombie (this process started it and has not reaped it yet)."""
    try:
        return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def own_store(tmp_path, monkeypatch):
    store = tmp_path / "spark"
    monkeypatch.setenv("AIR_SPARK_DIR", str(store))
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    yield store
    rec = srv_mod.read_record(store)
    if rec is not None:  # a failed test must not leave its JVM running
        srv_mod.stop_server()


@pytest.mark.parametrize("bad", ["x;DROP TABLE y", "`a`.b", "a b", "a.b.c.d", "main__x.s.t"])
def test_hostile_names_start_no_server(own_store, bad):
    VolumeStore().create("main.test.exports", exist_ok=True)
    calls = [
        lambda: tables.read_table(bad),
        lambda: tables.describe_table(bad),
        lambda: tables.write_table(pd.DataFrame({"a": [1]}), bad),
        lambda: tables.export_table(bad, "/Volumes/main/test/exports/x"),
        lambda: tables.list_tables(bad),
    ]
    for call in calls:
        with pytest.raises(TableNameError):
            call()
    assert srv_mod.read_record(own_store) is None and not (own_store / "server.log").exists()
    assert _store_processes(own_store) == []


def test_bad_settings_are_explained(own_store, monkeypatch):
    monkeypatch.setenv("AIR_SPARK_IDLE_TIMEOUT", "soon")
    with pytest.raises(TablesError, match="AIR_SPARK_IDLE_TIMEOUT='soon'"):
        tables.read_sql("SELECT 1")
    monkeypatch.delenv("AIR_SPARK_IDLE_TIMEOUT")
    monkeypatch.setenv("AIR_SPARK_DRIVER_MEMORY", "lots")
    with pytest.raises(TablesError, match="AIR_SPARK_DRIVER_MEMORY='lots'"):
        tables.read_sql("SELECT 1")
    assert srv_mod.read_record(own_store) is None and _store_processes(own_store) == []
    monkeypatch.delenv("AIR_SPARK_DRIVER_MEMORY")
    heap = srv_mod.driver_memory_mb()
    assert 1024 <= heap <= 8192 and heap <= psutil.virtual_memory().total // (1 << 20)


_START_AND_LISTEN = """
import json, time
from air_magics import tables
from air_magics.events import ServerEvent, channel
from air_magics.tables.server import read_record, store_dir
seen = []
def on(e):
    if isinstance(e, ServerEvent):  # [state, message, seconds reported, when it came, metastore open by then]
        log = (store_dir() / "server.log").read_text() if e.terminal else ""
        seen.append([e.state, e.message, e.elapsed, time.monotonic(), "HiveMetaStore" in log])
channel.attach(on)
t0 = time.monotonic()
tables.read_sql('SELECT 1')
wall = time.monotonic() - t0
print(json.dumps({"events": seen, "record": read_record(store_dir()), "t0": t0, "wall": wall}))
"""


def _env(store: Path, **settings: str) -> dict[str, str]:
    """This process's environment for a client of *store*'s server with these AIR_SPARK_* settings."""
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    env.update(AIR_SPARK_DIR=str(store), AIR_SPARK_DRIVER_MEMORY="1g", **settings)
    return env


def _wait_stopped(store: Path, jvm: psutil.Process, sup: psutil.Process) -> None:
    deadline = time.monotonic() + 120
    while (jvm.is_running() or sup.is_running()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not jvm.is_running() and not sup.is_running()
    assert srv_mod.read_record(store) is None and _store_processes(store) == []


def _idle_server_stops_itself_but_not_while_in_use(store: Path) -> None:
    code = (
        "import json; from air_magics import tables; from air_magics.tables.server import read_record, store_dir; "
        "tables.read_sql('SELECT 1'); print(json.dumps(read_record(store_dir())))"
    )
    env = _env(store, AIR_SPARK_IDLE_TIMEOUT="3")
    store.mkdir(parents=True)
    # an operation in flight (what every API call holds) keeps it up well past the idle timeout; held
    # from before the start, so no gap between the starter's exit and the hold can count as idle
    with activity.operation(store):
        run = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=280, env=env
        )
        rec = json.loads(run.stdout.strip().splitlines()[-1])
        jvm, sup = psutil.Process(rec["pid"]), psutil.Process(rec["supervisor"])
        assert rec["heap_mb"] == 1024 and "-Xmx1024m" in jvm.cmdline() and rec["idle_timeout"] == 3
        assert sup.ppid() != os.getpid() and os.getsid(sup.pid) == sup.pid  # detached: its own session
        for _ in range(3):  # 7.5 s: 2.5 idle timeouts, 10 supervisor polls (every 0.75 s here)
            time.sleep(2.5)
            assert jvm.is_running() and srv_mod.read_record(store)["pid"] == rec["pid"]
    # unused: it stops by itself, record removed, no process left
    _wait_stopped(store, jvm, sup)
    assert "stopped after" in (store / "server.log").read_text()


def _server_stops_soon_after_its_last_client_exits(store: Path) -> None:
    env = _env(store, AIR_SPARK_NO_CLIENT_TIMEOUT="3", AIR_SPARK_IDLE_TIMEOUT="1800")
    store.mkdir(parents=True)
    stay_code = (
        "import sys, time; from pathlib import Path; from air_magics.tables import activity; "
        "activity.touch(Path(sys.argv[1])); print('ok', flush=True); time.sleep(600)"
    )
    # a client that stays (a notebook left open): it used the server and lives on, idle
    stay = subprocess.Popen([sys.executable, "-c", stay_code, str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert stay.stdout.readline().strip() == "ok"
        run = subprocess.run(
            [sys.executable, "-c", _START_AND_LISTEN], capture_output=True, text=True, timeout=280, check=True, env=env
        )
        out = json.loads(run.stdout.strip().splitlines()[-1])
        assert run.stderr.strip() == ""  # a script prints nothing by itself: the events are for listeners
        states = [e[0] for e in out["events"]]
        assert states[0] == "running" and set(states[:-1]) == {"running"} and states[-1] == "done", states
        assert out["events"][0][1].startswith("Starting the embedded Spark Connect server (a first start takes")
        rec = out["record"]
        assert f"at sc://127.0.0.1:{rec['port']} in" in out["events"][-1][1]
        assert "3 s after the last process using it exits" in out["events"][-1][1]
        assert [e[2] for e in out["events"]] == sorted(e[2] for e in out["events"])  # seconds waited, rising
        # the seconds reported are the whole wait: from the call (not the JVM's launch) until its session
        # has answered a catalog query (the Hive metastore is open before the first query runs)
        done = out["events"][-1]
        waited = done[3] - out["t0"]  # the wall clock from the call to the done event
        assert waited - 2.0 <= done[2] <= out["wall"], (done, out["wall"])  # slack: the call's own checks
        shown = re.search(r" in (\d+) s;", done[1])
        assert shown and abs(int(shown.group(1)) - done[2]) <= 1 and done[4], done
        assert rec["no_client_timeout"] == 3 and last_start_seconds(store) > 0
        jvm, sup = psutil.Process(rec["pid"]), psutil.Process(rec["supervisor"])
        # its starter has exited, but a client is alive: it stays up well past the no-client timeout
        for _ in range(3):  # 7.5 s: 2.5 no-client timeouts, 10 supervisor polls (every 0.75 s here)
            time.sleep(2.5)
            assert jvm.is_running() and srv_mod.read_record(store)["pid"] == rec["pid"]
    finally:
        stay.kill()
        stay.wait()
    _wait_stopped(store, jvm, sup)
    assert "after the last client process exited" in (store / "server.log").read_text()


@pytest.fixture
def two_stores(tmp_path):
    stores = (tmp_path / "idle" / "spark", tmp_path / "noclient" / "spark")
    yield stores
    for store in stores:  # a failed test must not leave its JVM running
        if (rec := srv_mod.read_record(store)) is not None:
            srv_mod.terminate(int(rec.get("supervisor") or rec["pid"]))
            srv_mod.terminate(int(rec["pid"]))


def test_unused_servers_stop_themselves(two_stores):
    """Two servers of their own, each started by a script and watched until it stops by itself, side by
    side (each is a JVM start of 20-60 s here, then about 10 s of waiting):

    * idle: ``AIR_SPARK_IDLE_TIMEOUT`` seconds unused, it stops; an operation in flight keeps it up;
    * no client: a closed notebook (its kernel gone) no longer leaves the JVM up for the idle timeout
      (30 min): it stops ``AIR_SPARK_NO_CLIENT_TIMEOUT`` seconds after the last process that used it
      has exited, and not while one that used it still lives. This one also checks what a script's
      start says to listeners (and that it prints nothing itself)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        idle = pool.submit(_idle_server_stops_itself_but_not_while_in_use, two_stores[0])
        no_client = pool.submit(_server_stops_soon_after_its_last_client_exits, two_stores[1])
        no_client.result()
        idle.result()


_USE_THEN_WAIT = """
import sys
from air_magics import tables
print(tables.read_sql('SELECT 41 + 1 AS n').n[0], flush=True)
sys.stdin.readline()
"""


def test_shared_server_survives_a_crash_says_it_restarts_and_stop_stops_it(shared_spark, ip, capsys):
    """The run's shared server (conftest ``spark_server``), by its last user (modules run in name order;
    a later one would just start it again). Killed mid-query: the query fails in one line and the
    notebook's next call starts a new server on the same store, saying so, with the tables still there
    (one JVM start, the point of the test: 30-90 s in all on a 2-core machine, with two client processes). ``%air_table --stop`` then stops it while another process
    still has a session to it, and that process exits quietly: pyspark's exit hook sent a clean-up
    call to the stopped server, retried and printed ``[RETRIES_EXCEEDED]``; sessions we open are
    closed before it."""
    store = Path(shared_spark)
    code = (
        "import pandas as pd; from air_magics import tables; "
        "tables.write_table(pd.DataFrame({'a': [1, 2]}), 'main.test.other_proc', mode='overwrite')"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ), timeout=300)
    assert sorted(tables.read_table("main.test.other_proc").a) == [1, 2]  # written by another process
    running = srv_mod.running_server()
    errors = []

    def long_query():
        try:
            tables.read_sql("SELECT count(*) FROM range(100000000000)")
        except Exception as exc:
            errors.append(exc)

    t = threading.Thread(target=long_query)
    t.start()
    time.sleep(4)
    os.killpg(running.pid, signal.SIGKILL)  # the server dies mid-query
    t.join(timeout=60)
    assert not t.is_alive() and len(errors) == 1
    assert isinstance(errors[0], TablesError) and "\n" not in str(errors[0])
    capsys.readouterr()
    # the next call starts a new server on the same store and says so: the tables are still there
    assert ip.run_line_magic("air_table", '--sql "SELECT sum(a) AS n FROM main.test.other_proc"').n[0] == 3
    err = capsys.readouterr().err
    rec = srv_mod.read_record(store)
    assert rec["pid"] != running.pid and srv_mod.running_server().pid == rec["pid"]
    assert "Starting the embedded Spark Connect server (the last start here took " in err, err
    assert f"Started the embedded Spark Connect server at sc://127.0.0.1:{rec['port']} in " in err
    assert "5 min after the last process using it exits" in err and "%air_table --stop" in err
    # our session to the dead server is retired: pyspark asks its first session's conf in F.col,
    # which failed a client export (UNAVAILABLE) after the restart
    VolumeStore().create("main.test.exports", exist_ok=True)
    r = tables.export_table("main.test.other_proc", "/Volumes/main/test/exports/restarted", via="client")
    assert r.rows == 2
    assert ip.run_line_magic("air_table", '--sql "SELECT 1 AS n"').n[0] == 1
    assert "embedded Spark Connect server" not in capsys.readouterr().err  # a running server is just used
    jvm, sup = psutil.Process(rec["pid"]), psutil.Process(rec["supervisor"])
    client = subprocess.Popen(
        [sys.executable, "-c", _USE_THEN_WAIT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert client.stdout.readline() == b"42\n"  # it uses the running server, with a session of its own
        ip.run_line_magic("air_table", "--stop")
        assert f"Stopped the embedded Spark Connect server of {store}" in capsys.readouterr().out
        assert not jvm.is_running() and srv_mod.read_record(store) is None
        _, client_err = client.communicate(b"\n", timeout=120)  # now it exits, its server gone
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0 and client_err.decode().strip() == "", client_err.decode()[-2000:]
    deadline = time.monotonic() + 30  # the supervisor notices within a second
    while not _exited(sup) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _exited(sup) and _store_processes(store) == []
