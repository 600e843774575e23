"""The embedded server's life: nothing starts for a bad request, and an unused server stops itself.

Each test has its own store (AIR_SPARK_DIR), so it never touches the run's shared server (conftest
``spark_server``): these tests start, stop and wait for a server, which the shared one must not do."""

import json
import os
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest

from air_magics import tables
from air_magics.errors import TableNameError
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


def test_idle_server_stops_itself_but_not_while_in_use(own_store, monkeypatch):
    """A server of its own (one JVM start, 20-60 s here): the test waits for it to stop by itself."""
    monkeypatch.setenv("AIR_SPARK_IDLE_TIMEOUT", "3")
    monkeypatch.setenv("AIR_SPARK_DRIVER_MEMORY", "1g")
    code = (
        "import json; from air_magics import tables; from air_magics.tables.server import read_record, store_dir; "
        "tables.read_sql('SELECT 1'); print(json.dumps(read_record(store_dir())))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=280).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    jvm, sup = psutil.Process(rec["pid"]), psutil.Process(rec["supervisor"])
    assert rec["heap_mb"] == 1024 and "-Xmx1024m" in jvm.cmdline() and rec["idle_timeout"] == 3
    assert sup.ppid() != os.getpid() and os.getsid(sup.pid) == sup.pid  # detached: its own session
    # an operation in flight (what every API call holds) keeps it up well past the idle timeout
    with activity.operation(own_store):
        for _ in range(4):
            time.sleep(3)
            assert jvm.is_running() and srv_mod.read_record(own_store)["pid"] == rec["pid"]
    # unused: it stops by itself, record removed, no process left
    deadline = time.monotonic() + 120
    while (jvm.is_running() or sup.is_running()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not jvm.is_running() and not sup.is_running()
    assert srv_mod.read_record(own_store) is None and _store_processes(own_store) == []
    assert "stopped after" in (own_store / "server.log").read_text()


def test_bad_settings_are_explained(own_store, monkeypatch):
    from air_magics.errors import TablesError

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
import json
from air_magics import tables
from air_magics.events import ServerEvent, channel
from air_magics.tables.server import read_record, store_dir
seen = []
channel.attach(lambda e: seen.append([e.state, e.message, e.elapsed]) if isinstance(e, ServerEvent) else None)
tables.read_sql('SELECT 1')
print(json.dumps({"events": seen, "record": read_record(store_dir())}))
"""


def test_server_stops_soon_after_its_last_client_exits(own_store, monkeypatch):
    """A closed notebook (its kernel gone) no longer leaves the JVM up for the idle timeout (30 min):
    it stops AIR_SPARK_NO_CLIENT_TIMEOUT seconds after the last process that used it has exited.
    A server of its own (one JVM start, 20-60 s here): the test watches its start and its stop."""
    monkeypatch.setenv("AIR_SPARK_NO_CLIENT_TIMEOUT", "3")
    monkeypatch.setenv("AIR_SPARK_IDLE_TIMEOUT", "1800")
    monkeypatch.setenv("AIR_SPARK_DRIVER_MEMORY", "1g")
    own_store.mkdir(parents=True)
    stay_code = (
        "import sys, time; from pathlib import Path; from air_magics.tables import activity; "
        "activity.touch(Path(sys.argv[1])); print('ok', flush=True); time.sleep(600)"
    )
    # a client that stays (a notebook left open): it used the server and lives on, idle
    stay = subprocess.Popen([sys.executable, "-c", stay_code, str(own_store)], stdout=subprocess.PIPE, text=True)
    try:
        assert stay.stdout.readline().strip() == "ok"
        run = subprocess.run(
            [sys.executable, "-c", _START_AND_LISTEN], capture_output=True, text=True, timeout=280, check=True
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
        assert rec["no_client_timeout"] == 3 and last_start_seconds(own_store) > 0
        jvm, sup = psutil.Process(rec["pid"]), psutil.Process(rec["supervisor"])
        # its starter has exited, but a client is alive: it stays up well past the no-client timeout
        for _ in range(3):
            time.sleep(3)
            assert jvm.is_running() and srv_mod.read_record(own_store)["pid"] == rec["pid"]
    finally:
        stay.kill()
        stay.wait()
    deadline = time.monotonic() + 120
    while (jvm.is_running() or sup.is_running()) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not jvm.is_running() and not sup.is_running()
    assert srv_mod.read_record(own_store) is None and _store_processes(own_store) == []
    assert "after the last client process exited" in (own_store / "server.log").read_text()


def test_notebook_says_the_server_is_starting_and_stop_stops_it(own_store, ip, monkeypatch, capsys):
    """A server of its own (one JVM start, 20-60 s here): the test reads what its start says, then stops it
    while another process still has a session to it. That process then exits quietly: pyspark's exit hook
    sent a clean-up call to the stopped server, retried and printed ``[RETRIES_EXCEEDED]``; sessions we
    open are closed before it."""
    monkeypatch.setenv("AIR_SPARK_DRIVER_MEMORY", "1g")
    assert ip.run_line_magic("air_table", '--sql "SELECT 41 + 1 AS n"').n[0] == 42
    err = capsys.readouterr().err
    assert "Starting the embedded Spark Connect server (a first start takes 15-60 s on a small machine" in err
    rec = srv_mod.read_record(own_store)
    assert f"Started the embedded Spark Connect server at sc://127.0.0.1:{rec['port']} in " in err
    assert "5 min after the last process using it exits" in err and "%air_table --stop" in err
    assert ip.run_line_magic("air_table", '--sql "SELECT 1 AS n"').n[0] == 1
    assert "embedded Spark Connect server" not in capsys.readouterr().err  # a running server is just used
    jvm, sup = psutil.Process(rec["pid"]), psutil.Process(rec["supervisor"])
    client = subprocess.Popen(
        [sys.executable, "-c", _USE_THEN_WAIT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert client.stdout.readline() == b"42\n"  # it uses the running server, with a session of its own
        ip.run_line_magic("air_table", "--stop")
        assert f"Stopped the embedded Spark Connect server of {own_store}" in capsys.readouterr().out
        assert not jvm.is_running() and srv_mod.read_record(own_store) is None
        _, client_err = client.communicate(b"\n", timeout=120)  # now it exits, its server gone
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0 and client_err.decode().strip() == "", client_err.decode()[-2000:]
    deadline = time.monotonic() + 30  # the supervisor notices within a second
    while sup.is_running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _store_processes(own_store) == []


_USE_THEN_WAIT = """
import sys
from air_magics import tables
print(tables.read_sql('SELECT 41 + 1 AS n').n[0], flush=True)
sys.stdin.readline()
"""
