"""The Unity Catalog client and the embedded server, against the run's real server (``uc_server``: one
JVM per run, built from the vendored sources with Maven) and against real servers of other kinds
(nothing listening, a socket that never answers, a plain HTTP file server)."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import uuid

import pytest

from air_magics import catalog
from air_magics.catalog import CatalogClient, maven, ucserver
from air_magics.errors import (
    AirError,
    CatalogApiError,
    CatalogError,
    CatalogExistsError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    MavenError,
    VolumePathError,
)


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def uc(uc_server) -> CatalogClient:
    return uc_server.client()


@pytest.fixture
def fresh_catalog(uc):
    """A catalog of this test's own, deleted (with what it holds) afterwards."""
    name = _name("c")
    uc.create_catalog(name, comment="test")
    yield name
    uc.delete_catalog(name, force=True)


def test_catalog_schema_volume_are_created_listed_and_read_back(uc, fresh_catalog, tmp_path):
    folder = tmp_path / "vol"
    folder.mkdir()
    uc.create_schema(fresh_catalog, "raw", comment="landing")
    made = uc.create_volume(fresh_catalog, "raw", "images", storage_location=folder.as_uri())

    assert fresh_catalog in {c["name"] for c in uc.list_catalogs()}
    assert uc.get_catalog(fresh_catalog)["comment"] == "test"
    assert [s["name"] for s in uc.list_schemas(fresh_catalog)] == ["raw"]
    assert uc.get_schema(fresh_catalog, "raw")["full_name"] == f"{fresh_catalog}.raw"
    got = uc.get_volume(fresh_catalog, "raw", "images")
    assert got["volume_id"] == made["volume_id"]
    assert got["volume_type"] == "EXTERNAL"
    assert got["storage_location"].rstrip("/") == folder.as_uri()
    assert [v["name"] for v in uc.list_volumes(fresh_catalog, "raw")] == ["images"]

    uc.delete_volume(fresh_catalog, "raw", "images")
    assert uc.list_volumes(fresh_catalog, "raw") == []
    uc.delete_schema(fresh_catalog, "raw")
    assert uc.list_schemas(fresh_catalog) == []


def test_a_managed_volume_lands_under_its_catalogs_storage_root(uc, tmp_path):
    name = _name("m")
    uc.create_catalog(name, storage_root=tmp_path.as_uri())
    try:
        uc.create_schema(name, "s")
        made = uc.create_volume(name, "s", "managed")
        assert made["volume_type"] == "MANAGED"
        assert made["storage_location"].startswith(tmp_path.as_uri())
    finally:
        uc.delete_catalog(name, force=True)


def test_listing_pages_through_every_item(uc, fresh_catalog, monkeypatch):
    """A listing follows ``next_page_token`` to the end (pages of 2 here)."""
    from air_magics.catalog import client as client_module

    for i in range(5):
        uc.create_schema(fresh_catalog, f"s{i}")
    monkeypatch.setattr(client_module, "_PAGE", 2)
    assert sorted(s["name"] for s in uc.list_schemas(fresh_catalog)) == [f"s{i}" for i in range(5)]


def test_a_duplicate_is_an_exists_error_naming_it(uc, fresh_catalog):
    with pytest.raises(CatalogExistsError, match=fresh_catalog) as e:
        uc.create_catalog(fresh_catalog)
    assert isinstance(e.value, FileExistsError) and isinstance(e.value, AirError)
    assert "\n" not in str(e.value)
    uc.create_schema(fresh_catalog, "s")
    with pytest.raises(CatalogExistsError):
        uc.create_schema(fresh_catalog, "s")


def test_missing_names_are_not_found_errors(uc, fresh_catalog):
    with pytest.raises(CatalogNotFoundError, match="nope_catalog"):
        uc.get_catalog("nope_catalog")
    with pytest.raises(CatalogNotFoundError):
        uc.get_schema(fresh_catalog, "nope")
    uc.create_schema(fresh_catalog, "s")
    # the server answers this one with a 500: the client tells a missing volume from a failure
    with pytest.raises(CatalogNotFoundError, match=rf"{fresh_catalog}\.s\.nope") as e:
        uc.get_volume(fresh_catalog, "s", "nope")
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(CatalogNotFoundError):
        uc.list_volumes(fresh_catalog, "no_schema")


@pytest.mark.parametrize("bad", ["x/../catalogs", "a?b=1", "a.b", "", "caf\u00e9"])
def test_a_name_that_could_leave_its_path_segment_is_refused_before_any_call(bad):
    client = CatalogClient("http://127.0.0.1:1")  # nothing listens: the refusal comes first
    with pytest.raises(VolumePathError, match="letters, digits"):
        client.get_catalog(bad)
    with pytest.raises(VolumePathError):
        client.create_volume("main", "s", bad, storage_location="file:///tmp")


def test_temporary_volume_credentials_are_vended_for_a_registered_bucket(uc, s3_server, fresh_catalog):
    from conftest import UC_BUCKET

    uc.create_schema(fresh_catalog, "s")
    made = uc.create_volume(fresh_catalog, "s", "v", storage_location=f"s3://{UC_BUCKET}/data")
    creds = uc.volume_credentials(made["volume_id"], "READ_VOLUME")
    aws = creds["aws_temp_credentials"]
    assert (aws["access_key_id"], aws["secret_access_key"]) == (s3_server.key, s3_server.secret)
    # static keys (a session token configured) come with no expiry; STS ones with one, in ms
    assert creds.get("expiration_time") is None or creds["expiration_time"] > 0


def test_nothing_listening_is_unavailable_naming_the_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(CatalogUnavailableError, match=url) as e:
        CatalogClient(url).list_catalogs()
    assert isinstance(e.value, ConnectionError)


def test_a_server_that_never_answers_times_out_as_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # accepts connections, never answers
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        with pytest.raises(CatalogUnavailableError, match="did not answer within 0.3 s"):
            CatalogClient(url, timeout=0.3).list_catalogs()


def test_the_default_timeout_is_at_most_five_seconds():
    assert 0 < CatalogClient("http://127.0.0.1:1").timeout <= 5


@pytest.fixture
def other_api(tmp_path):
    """A real HTTP server of another kind: Python's file server over a folder with one JSON file."""
    (tmp_path / "api").mkdir()
    (tmp_path / "index.json").write_text(json.dumps({"hello": "world"}))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(tmp_path), **k)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_url_that_answers_another_api_is_an_api_error(other_api):
    with pytest.raises(CatalogApiError, match="not as a Unity Catalog server") as e:
        CatalogClient(other_api).list_catalogs()
    assert other_api in str(e.value) and "\n" not in str(e.value)


def test_the_s3_server_is_not_a_catalog(s3_server):
    with pytest.raises(CatalogApiError, match=s3_server.endpoint):
        CatalogClient(s3_server.endpoint).list_catalogs()


@pytest.mark.parametrize("url", ["ftp://host/x", "host:8080", ""])
def test_a_url_that_is_not_http_is_refused_at_once(url):
    with pytest.raises(CatalogApiError, match="not a Unity Catalog URL"):
        CatalogClient(url)


def test_the_token_is_never_shown():
    client = CatalogClient("http://127.0.0.1:1", token="s3cr3t-token")
    assert "s3cr3t" not in repr(client) and "s3cr3t" not in str(vars(client).get("url"))


def test_the_running_server_is_found_not_started_again(uc_server):
    again = catalog.ensure_server(uc_server.state)
    assert (again.pid, again.url, again.start_s) == (uc_server.pid, uc_server.url, 0.0)
    found = catalog.running(uc_server.state)
    assert found is not None and found.pid == uc_server.pid


def test_two_processes_starting_at_once_got_one_server(uc_server):
    """The fixture started the server from two processes at once: the lock made it one JVM; the one
    that waited found it running (start_s 0.0)."""
    from conftest import UC_STARTERS

    assert [pid for pid, _ in UC_STARTERS] == [uc_server.pid] * 2
    assert sorted(took == 0.0 for _, took in UC_STARTERS) == [False, True]
    record = json.loads((uc_server.state / "server.json").read_text())
    assert record["pid"] == uc_server.pid and 0.0 <= record["maven_s"] <= record["start_s"]


def test_another_process_finds_the_same_server(uc_server):
    code = (
        "import sys; from pathlib import Path; from air_magics.catalog import ensure_server; "
        "s = ensure_server(Path(sys.argv[1])); print(s.pid, s.start_s)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(uc_server.state)], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == [str(uc_server.pid), "0.0"]


def test_the_server_listens_on_loopback_only(uc_server):
    import psutil

    ports = {uc_server.port, uc_server.port + 1}
    listening = [c for c in psutil.Process(uc_server.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
    mine = [c for c in listening if c.laddr.port in ports]
    assert {c.laddr.port for c in mine} == ports
    assert all(c.laddr.ip in ("127.0.0.1", "::1", "::ffff:127.0.0.1") for c in mine), mine


def test_stop_leaves_a_process_that_only_reused_the_pid(tmp_path):
    """A record whose pid is now another program's: ``stop`` ends nothing and forgets the record."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "server.json").write_text(json.dumps({"pid": sleeper.pid, "port": 1, "url": "http://127.0.0.1:1"}))
        assert ucserver.stop(tmp_path) is False
        assert sleeper.poll() is None
        assert not (tmp_path / "server.json").exists()
        assert catalog.running(tmp_path) is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_stop_without_a_server_is_false(tmp_path):
    assert ucserver.stop(tmp_path / "none") is False
    assert ucserver.stop(tmp_path) is False


def test_without_mvn_the_build_is_a_maven_error_naming_the_artifact_and_the_fix(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(MavenError, match=r"io\.unitycatalog:unitycatalog-server.*install Maven") as e:
        maven.server_classpath(tmp_path / "state", repo=tmp_path / "repo")
    assert isinstance(e.value, RuntimeError) and "\n" not in str(e.value)


def test_a_failed_build_is_a_maven_error_with_mavens_reason(tmp_path):
    """A repository Maven cannot write (a file where its folder should be): the error says so, names the log."""
    repo = tmp_path / "repo"
    repo.write_text("not a folder")
    with pytest.raises(MavenError, match=r"cannot build io\.unitycatalog:unitycatalog-server.*maven\.log") as e:
        maven.server_classpath(tmp_path / "state", repo=repo)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "state" / "classpath.json").exists()


def test_the_cached_classpath_is_used_while_whole_and_resolved_again_when_not(uc_server, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    cached = json.loads((uc_server.state / "classpath.json").read_text())
    (state / "classpath.json").write_text(json.dumps(cached))
    kept = maven.server_classpath(state, repo=cached["repo"])
    assert kept.resolved_s == 0.0 and list(kept.jars) == cached["classpath"]
    # a jar that is gone (a cleaned repository) makes the cache stale: Maven runs again
    broken = {**cached, "classpath": [*cached["classpath"], str(tmp_path / "gone.jar")]}
    (state / "classpath.json").write_text(json.dumps(broken))
    again = maven.server_classpath(state, repo=cached["repo"])
    assert again.resolved_s > 0 and list(again.jars) == cached["classpath"]
    assert all(os.path.exists(j) for j in again.jars)


def test_the_source_digest_follows_the_sources(tmp_path):
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(maven.SOURCE_DIR / "etc", copy / "etc")
    first = maven.source_digest(copy)
    (copy / "etc" / "conf" / "hibernate.properties").write_text("changed")
    assert maven.source_digest(copy) != first


def _cached_state(uc_server, tmp_path, keep=lambda jar: True):
    """A state folder whose cached classpath (valid digest and repository) is the run's, jars filtered by *keep*."""
    cached = json.loads((uc_server.state / "classpath.json").read_text())
    state = tmp_path / "state"
    state.mkdir()
    (state / "classpath.json").write_text(
        json.dumps({**cached, "classpath": [j for j in cached["classpath"] if keep(j)]})
    )
    return state


def test_a_jvm_that_exits_while_starting_is_one_line_with_its_reason(uc_server, tmp_path):
    """A real JVM on a classpath without the server (one dependency jar): it exits at once."""
    state = _cached_state(uc_server, tmp_path, keep=lambda jar: "/h2-" in jar)
    with pytest.raises(CatalogError, match=r"exited \(1\) while starting: .*UnityCatalogServer.*server\.out") as e:
        ucserver.ensure_server(state, timeout=120)
    assert "\n" not in str(e.value)
    assert catalog.running(state) is None and not (state / "server.json").exists()


def test_without_java_the_start_is_one_line_naming_the_fix(uc_server, tmp_path, monkeypatch):
    state = _cached_state(uc_server, tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(CatalogError, match="no `java` on PATH; install Java 17"):
        ucserver.ensure_server(state)


def test_tables_are_created_listed_read_back_and_vended_keys(uc, s3_server, fresh_catalog, tmp_path):
    from conftest import UC_BUCKET

    uc.create_schema(fresh_catalog, "t")
    columns = [
        {
            "name": "id",
            "type_name": "LONG",
            "type_text": "bigint",
            "position": 0,
            "nullable": False,
            "type_json": json.dumps({"name": "id", "type": "long", "nullable": False, "metadata": {}}),
        },
    ]
    local = uc.create_table(fresh_catalog, "t", "events", storage_location=tmp_path.as_uri(), columns=columns)
    assert local["data_source_format"] == "DELTA" and local["table_type"] == "EXTERNAL"
    on_s3 = uc.create_table(
        fresh_catalog,
        "t",
        "clicks",
        storage_location=f"s3://{UC_BUCKET}/tables/clicks",
        columns=columns,
        data_source_format="PARQUET",
    )
    assert sorted(t["name"] for t in uc.list_tables(fresh_catalog, "t")) == ["clicks", "events"]
    got = uc.get_table(fresh_catalog, "t", "clicks")
    assert got["table_id"] == on_s3["table_id"] and got["storage_location"].startswith(f"s3://{UC_BUCKET}/")
    assert [c["name"] for c in got["columns"]] == ["id"]
    aws = uc.table_credentials(on_s3["table_id"], "READ")["aws_temp_credentials"]
    assert aws["access_key_id"] == s3_server.key
    uc.delete_table(fresh_catalog, "t", "events")
    with pytest.raises(CatalogNotFoundError):
        uc.get_table(fresh_catalog, "t", "events")
    with pytest.raises(CatalogExistsError):
        uc.create_table(fresh_catalog, "t", "clicks", storage_location=f"s3://{UC_BUCKET}/x", columns=columns)
