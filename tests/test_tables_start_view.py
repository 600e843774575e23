"""What a caller sees of the embedded Spark server without starting one: the start's events and their
views, ``%air_table --stop`` with nothing running, and where ``--as datasets`` keeps its cache.

The real starts (a script's events, the notebook's text line, the stop when the last client exits)
are in tests/test_tables_server.py."""

import io
import json
import logging
import os
import subprocess
import sys
import time

import pytest
from IPython.core.error import UsageError

from air_magics.events import ServerEvent, channel
from air_magics.listeners import LoggingListener, TqdmListener
from air_magics.tables.starting import FIRST_START, StartProgress, last_start_seconds
from air_magics.widgets.server_start import ServerStartViews, server_start_view


def _record(store, **kw):
    events: list[ServerEvent] = []
    with channel.attach(lambda e: events.append(e) if isinstance(e, ServerEvent) else None):
        p = StartProgress(store, **kw)
        time.sleep(1.05)
        p.tick()
        p.done("sc://127.0.0.1:4242", 1800.0, 300.0)
    return events


def test_a_start_says_what_it_does_how_long_it_takes_and_when_it_stops(tmp_path):
    store = tmp_path / "spark"
    store.mkdir()
    first = _record(store)
    assert [e.state for e in first] == ["running", "running", "done"]
    assert f"Starting the embedded Spark Connect server (a first start takes {FIRST_START};" in first[0].message
    assert first[1].elapsed >= 1.0 and first[0].job == str(store) and first[0].log == str(store / "server.log")
    done = first[-1]
    assert done.url == "sc://127.0.0.1:4242" and "at sc://127.0.0.1:4242 in 1 s" in done.message
    assert "5 min after the last process using it exits" in done.message and "30 min unused" in done.message
    assert "%air_table --stop" in done.message and "air_magics.tables.stop_server()" in done.message
    assert done.to_dict()["kind"] == "server" and done.to_dict()["url"] == done.url
    assert last_start_seconds(store) is not None and last_start_seconds(store) >= 1.0
    # the next start quotes this one; a wait for another process's start does not count as one
    (store / "last-start.json").write_text(json.dumps({"seconds": 23.4}))
    second = _record(store, other=True)
    assert second[0].message.startswith("Waiting for another process that is starting the embedded")
    assert "the last start here took 23 s; later calls reuse it" in second[0].message
    assert last_start_seconds(store) == 23.4


def test_the_seconds_count_from_when_the_caller_began_waiting(tmp_path):
    """``since``: the wait began before the start did (pyspark's import, the lock): every event, the
    done message and the remembered duration count from there."""
    store = tmp_path / "spark"
    store.mkdir()
    events: list[ServerEvent] = []
    with channel.attach(lambda e: events.append(e) if isinstance(e, ServerEvent) else None):
        p = StartProgress(store, since=time.monotonic() - 30.0)
        p.done("sc://127.0.0.1:4242", 1800.0, 300.0)
    assert events[0].elapsed >= 30.0 and time.time() - events[0].started >= 30.0
    assert " in 30 s;" in events[-1].message and last_start_seconds(store) >= 30.0


def _events(store: str) -> list[ServerEvent]:
    msg = "Starting the embedded Spark Connect server (a first start takes 15-60 s on a small machine)..."
    return [
        ServerEvent(job=store, message=msg, elapsed=0.0),
        ServerEvent(job=store, message=msg, elapsed=1.2),
        ServerEvent(job=store, message=msg, elapsed=2.4),
        ServerEvent(job=store, state="done", message="Started the embedded Spark Connect server at sc://x in 2 s"),
    ]


def test_text_view_counts_seconds_on_one_line_then_gives_the_outcome(capsys):
    views = ServerStartViews(enabled=lambda: False)
    for e in _events("/s"):
        views(e)
    err = capsys.readouterr().err
    assert err.count("Starting the embedded Spark Connect server") == 3 and err.endswith("in 2 s\n")
    lines = err.split("\n")
    assert lines[0].startswith("\r") and lines[0].endswith("on a small machine)... 2 s")
    assert lines[1] == "Started the embedded Spark Connect server at sc://x in 2 s"
    views(_events("/s")[0])  # a later start gets a view of its own
    assert capsys.readouterr().err.endswith(" 0 s")


def test_widget_view_shows_the_seconds_waited():
    view = server_start_view(widget=True)
    events = _events("/s")
    view(events[2])
    assert "Starting the embedded Spark Connect server" in view.label.value and "<b>2 s</b>" in view.label.value
    view(events[3])
    assert view.label.value == "Started the embedded Spark Connect server at sc://x in 2 s"


def test_text_and_log_listeners_show_a_start(caplog):
    out = io.StringIO()
    bar = TqdmListener(file=out)
    with caplog.at_level(logging.INFO, logger="air_magics.tables.server"):
        for e in _events("/s"):
            bar(e)
            LoggingListener()(e)
    assert "Spark server" in out.getvalue() and "Started the embedded Spark Connect server" in out.getvalue()
    assert any(r.name == "air_magics.tables.server" and "sc://x" in r.getMessage() for r in caplog.records)


def test_load_ext_attaches_one_start_view(ip):
    import air_magics

    air_magics.load_ipython_extension(ip)  # again, as %reload_ext does
    assert sum(isinstance(x, ServerStartViews) for x in channel.listeners) == 1


def test_stop_with_nothing_running_says_so_and_starts_nothing(ip, tmp_path, monkeypatch, capsys):
    store = tmp_path / "spark"
    monkeypatch.setenv("AIR_SPARK_DIR", str(store))
    assert ip.run_line_magic("air_table", "--stop") is None
    assert f"No embedded Spark Connect server is running for {store}" in capsys.readouterr().out
    for line, needle in [("--stop main.t.x", "drop NAME"), ("--stop --sql 'SELECT 1' -o r", "drop --sql -o")]:
        with pytest.raises(UsageError, match=needle):
            ip.run_line_magic("air_table", line)
    assert not (store / "server.log").exists() and not (store / "server.json").exists()


_LOAD = """
import json, sys, pyarrow as pa, pyarrow.parquet as pq
from air_magics.tables import ExportResult
pq.write_table(pa.table({"a": [1, 2, 3]}), sys.argv[1])
ds = ExportResult(dest="/Volumes/c/s/v/x", local_files=[sys.argv[1]]).load_dataset()
print(json.dumps([f["filename"] for f in ds.cache_files]))
"""


def _load_in_fresh_process(tmp_path, **env_extra) -> list[str]:
    """``datasets`` reads its cache settings when imported: each case runs in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "XDG_CACHE"))}
    env.update(HOME=str(tmp_path / "home"), **env_extra)
    (tmp_path / "home").mkdir(exist_ok=True)
    run = subprocess.run(
        [sys.executable, "-c", _LOAD, str(tmp_path / "x.parquet")], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_datasets_cache_stays_under_air_home_unless_the_user_chose_one(tmp_path, air_home):
    files = _load_in_fresh_process(tmp_path)
    assert files and all(f.startswith(str(air_home / "hf-cache") + os.sep) for f in files)
    assert not (tmp_path / "home" / ".cache" / "huggingface").exists()
    mine = tmp_path / "my-hf-cache"
    files = _load_in_fresh_process(tmp_path, HF_DATASETS_CACHE=str(mine))
    assert files and all(f.startswith(str(mine) + os.sep) for f in files)
    files = _load_in_fresh_process(tmp_path, HF_HOME=str(tmp_path / "hf-home"))
    assert files and all(f.startswith(str(tmp_path / "hf-home") + os.sep) for f in files)


def test_loading_an_export_prints_no_datasets_progress_and_leaves_the_users_setting(tmp_path, capfd):
    """datasets' "Generating train split: 0 examples" read as if the export were empty (notebook 04)."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    from air_magics.tables import ExportResult

    pq.write_table(pa.table({"a": list(range(100))}), tmp_path / "x.parquet")
    assert datasets.is_progress_bar_enabled()
    ds = ExportResult(dest="/Volumes/c/s/v/x", local_files=[str(tmp_path / "x.parquet")]).load_dataset()
    out = capfd.readouterr()
    assert ds.num_rows == 100 and "Generating" not in out.err + out.out
    assert datasets.is_progress_bar_enabled()  # the user's own loads still show datasets' bars
    assert "1.2 KiB" in repr(ExportResult(dest="/Volumes/c/s/v/x", bytes=1234))  # sizes in one set of units
