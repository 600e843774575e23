"""The sidebar's REST API (``/air/api/*``) against a real Jupyter server in a subprocess.

One server per module (starting one costs seconds); every test points its own AIR_HOME at the
server's, and starts from an empty run directory. The server is started without naming the
extension: the config file installed with the package must enable it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from _lab_server import start_server

import air_magics
from air_magics.cache import FileCache
from air_magics.status import run_dir, write_status
from air_magics.volumes import VolumeStore

ENDPOINTS = ["", "volumes", "cache", "jobs", "checkpoints", "training"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("air-api")
    srv = start_server(base, home=base / "air_home", mount=base / "no-such-mount")
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def air_home(server, monkeypatch):
    """Override conftest's AIR_HOME: this test process and the server share one."""
    monkeypatch.setenv("AIR_HOME", str(server.home))
    monkeypatch.delenv("AIR_VOLUMES_ROOT", raising=False)
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(server.home.parent / "no-such-mount"))
    for sub in ("run", "volumes", "cache"):
        shutil.rmtree(server.home / sub, ignore_errors=True)
    (server.home / "volume_registry.json").unlink(missing_ok=True)
    yield server.home
    assert server.alive(), f"the Jupyter server died:\n{server.log_tail()}"


@pytest.fixture
def images():
    store = VolumeStore()
    store.create("main.demo.images")
    for rel, size in [
        ("train/cat/a.jpg", 1000),
        ("train/cat/b.jpg", 2500),
        ("train/dog/c.jpg", 10),
        ("val/x.jpg", 7),
        ("README.txt", 42),
    ]:
        with store.open(f"/Volumes/main/demo/images/{rel}", "wb") as f:
            f.write(b"x" * size)
    return store


def message(r: requests.Response) -> str:
    body = r.json()
    assert isinstance(body.get("message"), str) and body["message"], body
    return body["message"]


def idle(cache: FileCache) -> None:
    """Make every entry look unused for an hour (no pin left), as after a finished training run."""
    cache.flush_hits()  # this process's rows and pins are in the index first
    db = sqlite3.connect(cache.root / "index.sqlite")
    with db:
        db.execute("UPDATE entries SET last_access = last_access - 3600")
    db.close()


# -- installation and auth ------------------------------------------------------------------------
def test_enabled_by_the_installed_config_file(server):
    cfg = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "air_magics.json"
    assert json.loads(cfg.read_text()) == {"ServerApp": {"jpserver_extensions": {"air_magics.server": True}}}
    r = server.get("")
    assert r.status_code == 200, r.text
    assert set(r.json()["endpoints"]) == {"volumes", "cache", "jobs", "checkpoints", "training"}


def test_labextension_is_installed():
    ext = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "air-magics"
    meta = json.loads((ext / "package.json").read_text())
    assert meta["name"] == "air-magics" and meta["jupyterlab"]["_build"]["load"].startswith("static/")
    assert (ext / meta["jupyterlab"]["_build"]["load"]).is_file()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_no_token_is_403(server, endpoint):
    assert requests.get(server.api(endpoint), timeout=30).status_code == 403
    bad = {"Authorization": "token not-the-token"}
    assert requests.get(server.api(endpoint), headers=bad, timeout=30).status_code == 403
    assert requests.get(server.api(endpoint), params={"token": "nope"}, timeout=30).status_code == 403


def test_clear_without_token_is_403_and_clears_nothing(server, images):
    cache = FileCache()
    cache.get("/Volumes/main/demo/images/README.txt")
    for headers in ({}, {"Authorization": "token wrong"}):
        assert requests.delete(server.api("cache"), headers=headers, timeout=30).status_code == 403
    assert cache.info().entries == 1


def test_cookie_authenticated_clear_needs_the_xsrf_header(server, images):
    cache = FileCache()
    cache.get("/Volumes/main/demo/images/README.txt")
    idle(cache)
    s = requests.Session()
    assert s.get(f"{server.url}/lab?token={server.token}", timeout=30).status_code == 200  # login cookie + _xsrf
    assert s.get(server.api("cache"), timeout=30).status_code == 200  # cookie-authenticated read
    r = s.delete(server.api("cache"), timeout=30)
    assert r.status_code == 403 and "xsrf" in r.text.lower()
    assert cache.info().entries == 1
    r = s.delete(server.api("cache"), headers={"X-XSRFToken": s.cookies["_xsrf"]}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["removed"] == 1 and cache.info().entries == 0


# -- volumes --------------------------------------------------------------------------------------
def test_volumes_tree(server, images):
    store = VolumeStore()
    store.create("main.other.raw")
    store.create("dev.scratch.tmp")
    doc = server.get("volumes").json()
    assert doc["count"] == 3 and doc["kind"] == "embedded"
    tree = {c["name"]: {s["name"]: [v["name"] for v in s["volumes"]] for s in c["schemas"]} for c in doc["catalogs"]}
    assert tree == {"dev": {"scratch": ["tmp"]}, "main": {"demo": ["images"], "other": ["raw"]}}
    assert [c["name"] for c in doc["catalogs"]] == ["dev", "main"]
    vol = doc["catalogs"][1]["schemas"][0]["volumes"][0]
    assert vol == {"name": "images", "path": "/Volumes/main/demo/images", "kind": "embedded"}


def test_no_volumes_is_an_empty_tree(server):
    doc = server.get("volumes").json()
    assert doc["count"] == 0 and doc["catalogs"] == [] and doc["notes"] == []


def _tree(doc: dict) -> dict:
    return {c["name"]: {s["name"]: [v["name"] for v in s["volumes"]] for s in c["schemas"]} for c in doc["catalogs"]}


def test_stray_folders_and_bad_registrations_do_not_break_the_tree(server, images):
    root = server.home / "volumes"
    (root / "bad.cat" / "s" / "v").mkdir(parents=True)
    (root / "main" / "demo" / "not a volume").mkdir()
    (server.home / "volume_registry.json").write_text(
        json.dumps({"x.y.z.w": "memory://w", "ok.reg.vol": "memory://ok"})
    )
    r = server.get("volumes")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert _tree(doc) == {"main": {"demo": ["images"]}, "ok": {"reg": ["vol"]}} and doc["count"] == 2
    notes = "\n".join(doc["notes"])
    assert "bad.cat" in notes and "not a volume" in notes and "x.y.z.w" in notes
    assert str(server.home) not in json.dumps(doc["notes"])


def test_a_catalog_that_links_outside_the_root_is_not_listed(server, images, tmp_path):
    outside = tmp_path / "outside-catalog"
    (outside / "sch" / "vol").mkdir(parents=True)
    (outside / "sch" / "vol" / "secret.txt").write_text("secret")
    (server.home / "volumes" / "evil").symlink_to(outside)
    doc = server.get("volumes").json()
    assert _tree(doc) == {"main": {"demo": ["images"]}}
    assert any(n.startswith("evil") for n in doc["notes"]) and str(outside) not in json.dumps(doc)
    for p in ("/Volumes/evil/sch/vol", "/Volumes/evil/sch/vol/secret.txt"):
        r = server.get("volumes", path=p)
        assert r.status_code in (400, 404), (p, r.status_code, r.text)
        assert "secret" not in r.text.replace("secret.txt", "") and str(outside) not in r.text
        assert str(server.home) not in r.text  # no host path in the message either


def test_folder_listing_has_sizes_folders_first(server, images):
    doc = server.get("volumes", path="/Volumes/main/demo/images").json()
    assert [(e["name"], e["is_dir"]) for e in doc["entries"]] == [("train", True), ("val", True), ("README.txt", False)]
    readme = doc["entries"][2]
    assert readme["size"] == 42 and readme["path"] == "/Volumes/main/demo/images/README.txt"
    assert abs(readme["mtime"] - time.time()) < 600
    assert doc["total"] == 3 and doc["next_offset"] is None and doc["offset"] == 0
    sub = server.get("volumes", path="/Volumes/main/demo/images/train/cat/").json()
    assert [(e["name"], e["size"]) for e in sub["entries"]] == [("a.jpg", 1000), ("b.jpg", 2500)]
    assert sub["path"] == "/Volumes/main/demo/images/train/cat"
    dotted = server.get("volumes", path="main.demo.images/train").json()
    assert [e["name"] for e in dotted["entries"]] == ["cat", "dog"]
    empty_dir = VolumeStore().locate("/Volumes/main/demo/images/empty").path
    os.makedirs(empty_dir)
    assert server.get("volumes", path="/Volumes/main/demo/images/empty").json()["entries"] == []


def test_large_folder_is_paginated(server):
    """100,000 files in one folder: each page holds `limit` entries and stats only those."""
    store = VolumeStore()
    store.create("main.big.flat")
    folder = store.locate("/Volumes/main/big/flat/files").path
    os.makedirs(folder)
    n = 100_000
    for i in range(n):
        os.close(os.open(os.path.join(folder, f"f{i:06d}.bin"), os.O_CREAT | os.O_WRONLY, 0o644))
    with open(os.path.join(folder, "f099999.bin"), "wb") as f:
        f.write(b"12345")
    timings = []
    seen = []
    for offset in (0, 1000, 99_000):
        t0 = time.perf_counter()
        r = server.get("volumes", path="/Volumes/main/big/flat/files", offset=offset, limit=1000)
        timings.append(time.perf_counter() - t0)
        doc = r.json()
        assert r.status_code == 200 and doc["total"] == n and len(doc["entries"]) == 1000
        assert doc["entries"][0]["name"] == f"f{offset:06d}.bin"
        assert doc["next_offset"] == (offset + 1000 if offset + 1000 < n else None)
        seen += [e["name"] for e in doc["entries"]]
    assert doc["entries"][-1]["size"] == 5
    assert len(set(seen)) == 3000
    default = server.get("volumes", path="/Volumes/main/big/flat/files").json()
    assert len(default["entries"]) == default["limit"] == 200
    print(f"\n100,000-file folder: pages of 1,000 answered in {', '.join(f'{t:.2f} s' for t in timings)}")


def test_a_page_stats_only_its_own_entries(monkeypatch):
    """The listing itself is names only (one readdir); only the page's entries are stat'ed."""
    from air_magics.server import queries

    store = VolumeStore()
    store.create("main.big.some")
    folder = store.locate("/Volumes/main/big/some").path
    for i in range(3000):
        open(os.path.join(folder, f"{i:05d}"), "wb").close()
    calls = []
    real_stat = VolumeStore.stat
    monkeypatch.setattr(VolumeStore, "stat", lambda self, p: calls.append(str(p)) or real_stat(self, p))
    real_entries = VolumeStore.entries
    seen_kwargs = []
    monkeypatch.setattr(
        VolumeStore, "entries", lambda self, p, **kw: seen_kwargs.append(kw) or real_entries(self, p, **kw)
    )
    doc = queries.list_folder("/Volumes/main/big/some", offset=2950, limit=100)
    assert len(doc["entries"]) == 50 and doc["next_offset"] is None and doc["total"] == 3000
    assert len(calls) == 50 and seen_kwargs == [{"recursive": False, "with_dirs": True, "stat": False}]


BAD_PATHS = [
    "/etc/passwd",
    "/etc",
    "/",
    "",
    "relative/path",
    "~/secrets",
    "/Volumes",
    "/Volumes/main",
    "/Volumes/main/demo",
    "/Volumes/main/demo/images/../../../../etc/passwd",
    "/Volumes/main/demo/images/train/../../other",
    "/Volumes/../etc",
    "/Volumes/main/demo/images/./train",
    "/Volumes/main/demo/images//train",
    "/Volumes/ma in/demo/images",
    "/Volumes/main/demo/images/a\nb",
    "main.demo/images",
    "\\..\\..\\windows",
]


@pytest.mark.parametrize("path", BAD_PATHS)
def test_traversal_and_non_volume_paths_are_400(server, images, path):
    r = server.get("volumes", path=path)
    assert r.status_code == 400, (path, r.status_code, r.text)
    assert "Volumes" in message(r) or repr(path)[1:-1][:10] in message(r)


def test_encoded_traversal_is_400(server, images):
    for raw in (
        "/Volumes/main/demo/images/%2e%2e/%2e%2e/%2e%2e/etc",
        "%2FVolumes%2Fmain%2Fdemo%2Fimages%2F..%2F..",
        "/Volumes/main/demo/images/train/%2E%2E",
    ):
        r = requests.get(server.api("volumes") + "?path=" + raw, headers=server.auth, timeout=30)
        assert r.status_code == 400, (raw, r.text)
        assert "'..' segment" in message(r)


def test_symlink_out_of_the_volume_is_400_and_not_listed(server, images, tmp_path):
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "key.pem").write_text("secret")
    vol = Path(VolumeStore().locate("/Volumes/main/demo/images").path)
    (vol / "escape").symlink_to(secret)
    (vol / "key.pem").symlink_to(secret / "key.pem")
    for p in (
        "/Volumes/main/demo/images/escape",
        "/Volumes/main/demo/images/key.pem",
        "/Volumes/main/demo/images/escape/key.pem",
    ):
        r = server.get("volumes", path=p)
        assert r.status_code == 400 and "outside its volume" in message(r), r.text
        assert p in message(r)  # names the offending path inside the volume ...
        assert str(tmp_path) not in r.text and "/tmp" not in r.text  # ... never where the link points
    names = {e["name"]: e for e in server.get("volumes", path="/Volumes/main/demo/images").json()["entries"]}
    assert "key.pem" not in names  # a file link leaving the volume is not listed
    assert "outside" not in json.dumps(names)  # nothing resolved through the link
    assert names.get("escape", {"size": None})["size"] is None  # a link to a folder is never followed


def test_missing_volume_or_path_is_404(server, images):
    for p in ("/Volumes/main/demo/nope", "/Volumes/main/demo/images/nope", "/Volumes/x/y/z/deep/er"):
        r = server.get("volumes", path=p)
        assert r.status_code == 404, r.text
        assert "does not exist" in message(r)
        assert str(server.home) not in message(r)  # where the server looked is its own business


def test_redact_keeps_volume_paths_and_what_the_client_sent():
    from air_magics.server.redact import HIDDEN, redact

    msg = (
        "'/Volumes/a/b/c/x' resolves outside its volume (through a symlink to /srv/secret dir/key); refusing; "
        "volume 'a.b.c' is a link leading outside the volumes root '/home/me/.air/volumes'; "
        "[Errno 13] Permission denied: '/var/lib/x y' and /etc/shadow, see file:///PATH or s3://bucket/k"
    )
    out = redact(msg)
    assert "/srv" not in out and "secret" not in out and "/home/me" not in out and "/var/lib" not in out
    assert "/etc/shadow" not in out and out.count(HIDDEN) == 3
    assert "'/Volumes/a/b/c/x' resolves outside its volume; refusing" in out
    assert "file:///PATH" in out and "s3://bucket/k" in out
    assert "/etc/shadow" in redact(msg, keep=["/etc/shadow"])  # the client's own input is no secret


def test_a_file_is_not_a_folder(server, images):
    r = server.get("volumes", path="/Volumes/main/demo/images/README.txt")
    assert r.status_code == 400 and "is a file" in message(r)
    assert "x" * 42 not in r.text  # never the file's contents


@pytest.mark.parametrize(
    "params",
    [
        {"offset": "-1"},
        {"offset": "a"},
        {"limit": "0"},
        {"limit": "1001"},
        {"limit": "1e3"},
        {"offset": "99999999999999999999999"},
    ],
)
def test_bad_paging_is_400(server, images, params):
    r = server.get("volumes", path="/Volumes/main/demo/images", **params)
    assert r.status_code == 400 and ("offset" in message(r) or "limit" in message(r))


def test_odd_input_never_breaks_the_server(server, images):
    raws = [
        "%00",
        "%FF%FE",
        "/Volumes/main/demo/images/%00",
        "/Volumes/" + "a" * 5000,
        "/Volumes/main/demo/images/" + "ü" * 300,
        "/Volumes/main/demo/images/%F0%9F%98%80",
        "%2F" * 2000,
        "/Volumes/main/demo/images/train&offset=5&offset=x",
    ]
    for raw in raws:
        r = requests.get(server.api("volumes") + "?path=" + raw, headers=server.auth, timeout=30)
        assert r.status_code in (200, 400, 404), (raw, r.status_code, r.text[:300])
        assert r.headers["Content-Type"].startswith("application/json")
    r = requests.post(server.api("volumes"), headers=server.auth, data="x", timeout=30)
    assert r.status_code == 405
    assert server.alive()


# -- cache ----------------------------------------------------------------------------------------
def test_cache_statistics_and_clear(server, images):
    assert server.get("cache").json() == {"cache": None, "loader": None, "loaders": []}
    cache = FileCache(limit="1MiB")
    for rel in ("train/cat/a.jpg", "train/cat/b.jpg", "train/cat/a.jpg", "README.txt"):
        cache.get(f"/Volumes/main/demo/images/{rel}")
    cache.publish_status()
    doc = server.get("cache").json()["cache"]
    info = cache.info()
    assert (doc["hits"], doc["misses"], doc["entries"], doc["bytes"], doc["limit"]) == (1, 3, 3, 3542, 1 << 20)
    assert doc["hit_rate"] == pytest.approx(info.hit_rate) and doc["evictions"] == 0
    local = cache.local_path("/Volumes/main/demo/images/README.txt")
    assert local.exists()
    idle(cache)
    r = requests.delete(server.api("cache"), headers=server.auth, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["removed"] == 3 and body["cache"]["entries"] == 0 and body["cache"]["hits"] == 1
    assert body["kept"] == 0 and body["bytes_removed"] == 3542 and body["root"] == str(cache.root)
    assert not local.exists() and cache.info().entries == 0
    assert VolumeStore().exists("/Volumes/main/demo/images/README.txt")  # sources untouched


def test_clear_keeps_files_a_training_loop_was_just_handed(server, images):
    cache = FileCache()
    old = cache.get("/Volumes/main/demo/images/train/cat/a.jpg")
    idle(cache)
    handed = cache.get("/Volumes/main/demo/images/README.txt")  # a DataLoader got this path just now
    cache.flush_hits()  # its row is written behind the fetch (within ~20 ms): in the index before the clear
    r = requests.delete(server.api("cache"), headers=server.auth, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["removed"], body["kept"]) == (1, 1) and "kept 1 in use" in body["summary"]
    assert not os.path.exists(old) and open(handed, "rb").read() == b"x" * 42
    assert body["cache"]["entries"] == 1


def test_a_crafted_status_document_cannot_choose_what_is_deleted(server, images, tmp_path):
    """The cache document is written by any process: its `root` (and a crafted index there naming
    an arbitrary file) must not steer DELETE, and a wrongly typed one is no 500."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    evil = tmp_path / "evil-cache"
    evil.mkdir()
    db = sqlite3.connect(evil / "index.sqlite")
    with db:
        db.execute(
            "CREATE TABLE entries(key TEXT PRIMARY KEY, local TEXT NOT NULL, size INTEGER NOT NULL, "
            "mtime REAL NOT NULL, last_access REAL NOT NULL)"
        )
        db.execute("CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        db.execute("INSERT INTO entries VALUES ('/Volumes/main/demo/images/README.txt', ?, 8, 0, 0)", (str(victim),))
    db.close()
    own = FileCache()
    own.get("/Volumes/main/demo/images/train/cat/a.jpg")
    idle(own)
    db = sqlite3.connect(own.root / "index.sqlite")  # the server's own index, tampered with too
    with db:
        db.execute(
            "INSERT INTO entries(key, local, size, mtime, last_access) VALUES ('/Volumes/main/demo/images/val/x.jpg', ?, 8, 0, 0)",
            (str(victim),),
        )
    db.close()
    _raw_status("cache", {"root": str(evil), "entries": 1, "updated": time.time()})
    r = requests.delete(server.api("cache"), headers=server.auth, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["root"] == str(own.root) and r.json()["removed"] == 1  # a.jpg; the forged row only dropped
    assert victim.read_text() == "precious"  # named by both indexes, deleted by neither
    assert own.info().entries == 0
    for bad_root in (["/tmp"], 42, {"x": 1}, None):
        _raw_status("cache", {"root": bad_root, "hits": "many", "entries": [], "updated": time.time()})
        r = requests.delete(server.api("cache"), headers=server.auth, timeout=30)
        assert r.status_code == 200, (bad_root, r.status_code, r.text)
        doc = server.get("cache").json()["cache"]
        assert doc["root"] == str(own.root)  # the clear republished the server's own statistics
        _raw_status("cache", {"root": bad_root, "hits": "many", "entries": [], "updated": time.time()})
        doc = server.get("cache").json()["cache"]
        assert doc["root"] is None and doc["hits"] is None and doc["entries"] is None
    assert victim.read_text() == "precious"


def test_loader_timing_comes_along(server):
    write_status(f"loader-{os.getpid()}", {"steps": 10, "wait_share": 0.25, "epoch": 1, "num_workers": 2})
    assert server.get("cache").json()["loader"]["wait_share"] == 0.25


def test_training_chart_of_the_latest_run_one_series_per_rank(server):
    from air_magics.charts import training_line, training_spec
    from air_magics.events import LoaderEvent
    from air_magics.listeners import StatusDocuments
    from air_magics.snapshots import LoaderTimes

    assert server.get("training").json() == {"spec": None, "text": "training: no loader history yet"}
    docs = StatusDocuments(loader_interval=0.0)
    now = time.time()
    for rank, pid in enumerate((os.getpid() + 100_000, os.getpid() + 100_001)):  # two ranks of one launch
        for i, step in enumerate((10, 20, 30)):
            timing = LoaderTimes(step, 0.01 * step * (rank + 1), 0.03 * step, items=4 * step * (rank + 1))
            docs(LoaderEvent(timing=timing, pid=pid, rank=rank, world=2, launch="L1", time=now - 3 + i))
    answer = server.get("training").json()
    ranks = [json.loads((run_dir() / f"loader-{os.getpid() + 100_000 + r}.json").read_text()) for r in (0, 1)]
    assert answer["spec"] == training_spec(ranks) and answer["text"] == training_line(answer["spec"])
    items = next(p for p in answer["spec"]["panels"] if p["id"] == "items")
    assert [s["name"] for s in items["series"]] == ["rank 0", "rank 1"]
    assert [s["points"] for s in items["series"]] == [[[20, 40.0], [30, 40.0]], [[20, 80.0], [30, 80.0]]]
    # a document written by anything else: a history that is not one, a rank that is not a number
    _raw_status(f"loader-{os.getpid() + 100_000}", {**ranks[0], "rank": "x", "history": {"fields": 1}})
    _raw_status(f"loader-{os.getpid() + 100_001}", {**ranks[1], "rank": None, "updated": time.time() + 1})
    r = server.get("training")
    assert r.status_code == 200 and r.json()["spec"]["ranks"] == 1


# -- jobs -----------------------------------------------------------------------------------------
def _raw_status(name: str, doc: dict) -> None:
    d = run_dir()
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps(doc))


def test_jobs_running_recent_and_stale(server):
    now = time.time()
    write_status(
        "job-copy-live",
        {
            "kind": "copy",
            "dest": "/tmp/x",
            "state": "running",
            "files_total": 10,
            "files_done": 3,
            "bytes_done": 300,
            "eta": 2.0,
            "started": now - 5,
        },
    )
    write_status(
        "job-export-tbl",
        {
            "kind": "export",
            "dest": "/Volumes/a/b/c/t",
            "state": "done",
            "tasks": 4,
            "tasks_done": 4,
            "rows": 100,
            "started": now - 20,
            "finished": now - 10,
        },
    )
    _raw_status(
        "job-copy-old",
        {
            "kind": "copy",
            "state": "done",
            "files_total": 1,
            "files_done": 1,
            "finished": now - 7200,
            "updated": now - 7200,
        },
    )
    _raw_status(
        "job-copy-dead", {"kind": "copy", "state": "running", "files_total": 8, "files_done": 2, "updated": now - 600}
    )
    jobs = {j["name"]: j for j in server.get("jobs").json()["jobs"]}
    assert set(jobs) == {"job-copy-live", "job-export-tbl", "job-copy-dead"}
    assert jobs["job-copy-live"]["progress"] == pytest.approx(0.3) and not jobs["job-copy-live"]["stale"]
    assert jobs["job-copy-live"]["job"] == "live" and jobs["job-copy-live"]["kind"] == "copy"
    assert jobs["job-export-tbl"]["progress"] == 1.0 and jobs["job-export-tbl"]["kind"] == "export"
    assert jobs["job-copy-dead"]["stale"] and jobs["job-copy-dead"]["progress"] == 0.25
    assert list(jobs) == ["job-export-tbl", "job-copy-live", "job-copy-dead"]  # newest first
    assert {j["name"] for j in server.get("jobs", recent=10**5).json()["jobs"]} == set(jobs) | {"job-copy-old"}
    for bad in ("x", "-1", "nan", "inf"):
        r = server.get("jobs", recent=bad)
        assert r.status_code == 400 and "recent" in message(r)


def _wait_for(condition, what: str, deadline_s: float = 120.0) -> None:
    """Poll *condition*; the deadline only bounds a broken run, it is not what the test measures."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def _inflight(stats: Path) -> int:
    try:
        return int(json.loads(stats.read_text()).get("inflight", 0))
    except (OSError, ValueError):
        return 0


@pytest.mark.fuse
def test_status_answers_while_listings_are_stuck_on_the_mount(server, slowfs, tmp_path):
    """Six folder listings stuck on a mount fill the listing pool; the status endpoints answer anyway.

    Each listing asks the mount for another catalog (distinct lookups run in parallel). Once the
    mount's own counters show four of them in flight, its server is stopped (SIGSTOP), so nothing
    can finish until it is killed: /jobs and /cache must answer in that state. The mount's 5 s per
    request only has to outlast the wait for four in flight (about 0.3 s); mounting pays it once."""
    backing = tmp_path / "backing"
    backing.mkdir()
    mnt = server.home.parent / "no-such-mount"  # where the server (and this test) look for /Volumes
    stats = tmp_path / "slowfs.json"
    if why := slowfs.unavailable("c"):  # the python engine's lookups in one folder queue (libfuse < 3.17)
        pytest.skip(f"needs fusevol's C engine, whose lookups in one folder overlap: {why}")
    write_status("job-copy-busy", {"kind": "copy", "state": "running", "files_total": 4, "files_done": 1})
    try:
        with slowfs.mounted(backing, mnt, op_latency_ms=5_000, stats=stats, engine="c") as pid:
            pool = ThreadPoolExecutor(6)
            listings = [
                pool.submit(
                    requests.get,
                    server.api("volumes"),
                    headers=server.auth,
                    timeout=600,
                    params={"path": f"/Volumes/c{i}/s/v"},
                )
                for i in range(6)
            ]
            try:
                _wait_for(lambda: _inflight(stats) >= 4, "four listings in flight on the mount")
                os.kill(pid, signal.SIGSTOP)  # from here on no request to the mount completes
                jobs = server.get("jobs")
                assert jobs.status_code == 200 and [j["job"] for j in jobs.json()["jobs"]] == ["busy"]
                assert server.get("cache").status_code == 200
                assert not any(f.done() for f in listings)  # answered while all listings were stuck
            finally:
                os.kill(pid, signal.SIGKILL)  # the mount's server dies: the stuck calls fail at once
                answers = [f.result() for f in listings]
                pool.shutdown()
        assert all(a.status_code != 200 for a in answers) and server.alive()
    finally:
        if mnt.is_dir() and not os.path.ismount(mnt):
            mnt.rmdir()  # an empty folder there would look like a /Volumes mount to later tests
        # the server looks at its mount point again NO_MOUNT_TTL seconds after its last look: later
        # tests (same server) expect its answer to be the embedded store again
        from air_magics.volumes import detect

        time.sleep(detect.NO_MOUNT_TTL + 0.5)


def test_a_real_copy_is_reported(server, images, tmp_path):
    report = air_magics.copy(["/Volumes/main/demo/images/train"], str(tmp_path / "out"), job="t1", workers=2)
    assert report.ok
    job = {j["name"]: j for j in server.get("jobs").json()["jobs"]}["job-copy-t1"]
    assert job["state"] == "done" and job["files_done"] == job["files_total"] == 3 and job["progress"] == 1.0
    assert job["bytes_done"] == 3510 and job["dest"] == str(tmp_path / "out")


def test_a_real_pack_reaches_the_status_document_the_jobs_and_the_log(server, images, caplog):
    """A pack run's PackEvents: the status document is the last event's document, the jobs endpoint
    lists it with exactly the event's keys plus the REST extras, and LoggingListener logs it."""
    from air_magics.events import PackEvent, channel
    from air_magics.listeners import LoggingListener
    from air_magics.listeners.status_docs import pack_status_name
    from air_magics.server.queries import JOB_EXTRA
    from air_magics.shards import pack
    from air_magics.status import read_status

    src, dest = "/Volumes/main/demo/images/train", "/Volumes/main/demo/images/packed"
    seen: list[PackEvent] = []
    with caplog.at_level(logging.DEBUG, logger="air_magics.shards"), channel.attach(LoggingListener()):
        report = pack(src, dest, shard_size="64KiB", listeners=[seen.append])
    assert seen and all(isinstance(e, PackEvent) for e in seen) and seen[-1].state == "done"
    doc = read_status(pack_status_name(dest))
    assert doc == dict(json.loads(json.dumps(seen[-1].to_dict())), updated=doc["updated"])
    job = {j["name"]: j for j in server.get("jobs").json()["jobs"]}[pack_status_name(dest)]
    assert set(job) == {*PackEvent.keys(), *JOB_EXTRA}
    assert job["kind"] == "pack" and job["job"] == dest and job["src"] == src and job["state"] == "done"
    assert job["progress"] == 1.0 and not job["stale"] and job["report"]["files"] == report.files == 3
    logged = [r for r in caplog.records if r.name == "air_magics.shards.writer"]
    assert [r.levelno for r in logged][-1] == logging.INFO and f"pack {dest} done" in logged[-1].getMessage()
    assert any(f"pack {dest} running" in r.getMessage() for r in logged[:-1])


def test_malformed_status_documents_do_not_break_answers(server):
    _raw_status(
        "job-copy-junk",
        {"kind": "copy", "state": "running", "files_total": "ten", "files_done": None, "updated": time.time()},
    )
    _raw_status("job-export-junk", {"state": "done", "finished": "yesterday", "updated": time.time()})
    (run_dir() / "job-copy-trunc.json").write_text('{"kind": "co')
    _raw_status("checkpoints-junk", {"directory": None, "saves": "x", "updated": time.time()})
    _raw_status("checkpoints-gone", {"directory": "/Volumes/no/such/vol/ckpt", "saves": [], "updated": time.time()})
    _raw_status("cache", {"hits": "many"})
    jobs = {j["name"]: j for j in server.get("jobs").json()["jobs"]}
    assert jobs["job-copy-junk"]["progress"] is None and "job-copy-trunc" not in jobs
    ck = {c["name"]: c for c in server.get("checkpoints").json()["checkpoints"]}
    assert ck["checkpoints-junk"]["error"] and ck["checkpoints-gone"]["error"]
    assert "does not exist" in ck["checkpoints-gone"]["error"]
    assert str(server.home) not in json.dumps(ck)  # where the server looked for the volume stays private
    assert server.get("cache").status_code == 200


# -- checkpoints ----------------------------------------------------------------------------------
def test_committed_checkpoint_appears(server):
    torch = pytest.importorskip("torch")
    from air_magics.data import CheckpointManager

    VolumeStore().create("main.ml.runs")
    mgr = CheckpointManager("/Volumes/main/ml/runs/ckpt", show=False, keep=2)
    mgr.save(1, {"w": torch.ones(3)})
    mgr.save(2, {"w": torch.zeros(3)})
    doc = server.get("checkpoints").json()["checkpoints"]
    assert len(doc) == 1
    ck = doc[0]
    assert ck["directory"] == "/Volumes/main/ml/runs/ckpt" and ck["error"] is None
    assert ck["steps"] == [1, 2] and ck["latest"] == 2 and ck["keep"] == 2
    assert [(s["step"], s["state"]) for s in ck["saves"]] == [(1, "committed"), (2, "committed")]
    # the time line the sidebar draws: one row per save, its blocked phase the record's blocked_s
    rows = ck["timeline"]["saves"]
    assert [r["step"] for r in rows] == [1, 2] and not any(r["overlaps"] for r in rows)
    blocked = next(g for g in rows[1]["segments"] if g["kind"] == "blocked")
    assert blocked["to"] - blocked["from"] == pytest.approx(ck["saves"][1]["blocked_s"], abs=1e-5)


def test_sidebar_and_notebook_widgets_read_the_same_documents(server, images):
    """What the widgets render (cache view, checkpoint view) is exactly what the API answers."""
    torch = pytest.importorskip("torch")
    from air_magics.checkpoints.commit import checkpoint_status
    from air_magics.data import CheckpointManager
    from air_magics.status import read_status
    from air_magics.widgets import cache_text, checkpoints_text
    from air_magics.widgets.cache_view import latest_loader

    cache = FileCache()
    cache.get("/Volumes/main/demo/images/README.txt")
    cache.get("/Volumes/main/demo/images/README.txt")
    cache.publish_status()
    write_status(f"loader-{os.getpid()}", {"steps": 3, "wait_share": 0.5, "epoch": 0, "num_workers": 1})
    api = server.get("cache").json()
    assert api["cache"] == read_status("cache") and api["loader"] == latest_loader()
    assert cache_text(api["cache"], api["loader"]) == cache_text()

    VolumeStore().create("main.ml.agree")
    CheckpointManager("/Volumes/main/ml/agree/ck", show=False).save(5, {"w": torch.ones(2)})
    widget_doc = checkpoint_status("/Volumes/main/ml/agree/ck")
    (item,) = server.get("checkpoints").json()["checkpoints"]
    assert {k: item[k] for k in ("directory", "steps", "pending", "latest", "saves")} == {
        k: widget_doc[k] for k in ("directory", "steps", "pending", "latest", "saves")
    }
    assert checkpoints_text(dict(item)) == checkpoints_text(widget_doc)


def test_import_air_magics_does_not_load_the_server():
    code = (
        "import sys, air_magics, air_magics.magics; "
        "bad = [m for m in sys.modules if m.startswith(('tornado', 'jupyter_server', 'air_magics.server'))]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_job_of_a_dead_process_is_stale(air_home):
    from air_magics.server.queries import jobs
    from air_magics.status import write_status

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_status("job-copy-dead", {"kind": "copy", "state": "running", "pid": dead.pid, "files_total": 5})
    write_status("job-copy-alive", {"kind": "copy", "state": "running", "pid": os.getpid(), "files_total": 5})
    by_job = {j["job"]: j for j in jobs()["jobs"]}
    assert by_job["dead"]["stale"] and not by_job["alive"]["stale"]
