"""The REST handlers (``/air/api/*``) in-process, through pytest-jupyter's ``jp_fetch``.

Fast: one in-process Jupyter server per test, no subprocess, no browser. Each endpoint's happy
path and its error answers (400 bad input, 404 missing, 403 without a token, 405 wrong method,
500 for the unexpected); the subprocess tests in ``test_server_api.py`` cover installation, the
thread pools under a stuck mount and concurrency. The server runs under a base URL with an
escaped character (pytest-jupyter's ``/a%40b/``), so the routes are checked against it too.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from tornado.httpclient import HTTPClientError

from air_magics.cache import FileCache
from air_magics.server import queries
from air_magics.status import write_status
from air_magics.volumes import VolumeStore

pytest_plugins = ["pytest_jupyter.jupyter_server"]

VOLUME = "/Volumes/main/demo/images"
FILES = {"train/cat/a.jpg": 1000, "train/cat/b.jpg": 2500, "train/dog/c.jpg": 10, "README.txt": 42}


@pytest.fixture
def jp_server_config():
    """Enable the extension explicitly: pytest-jupyter isolates the config paths from the installed file."""
    return {"ServerApp": {"jpserver_extensions": {"air_magics.server": True}}}


@pytest.fixture
def images(air_home):
    store = VolumeStore()
    store.create("main.demo.images")
    for rel, size in FILES.items():
        with store.open(f"{VOLUME}/{rel}", "wb") as f:
            f.write(b"x" * size)
    return store


async def get(jp_fetch, endpoint: str, **params) -> dict:
    r = await jp_fetch("air", "api", endpoint, params=params)
    assert r.code == 200 and r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


async def error(jp_fetch, endpoint: str, method: str = "GET", headers=None, **params) -> tuple[int, str]:
    """The status and JSON message of a call that must fail."""
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(
            "air", "api", endpoint, method=method, params=params, headers=headers, allow_nonstandard_methods=True
        )
    body = info.value.response.body
    try:
        message = json.loads(body).get("message") or ""
    except ValueError:  # tornado's own pages (403, 405) are HTML
        message = body.decode(errors="replace")
    return info.value.code, message


# -- index and auth -------------------------------------------------------------------------------
async def test_index_names_the_endpoints(jp_fetch):
    import air_magics

    doc = await get(jp_fetch, "")
    assert doc["version"] == air_magics.__version__
    assert set(doc["endpoints"]) == {"volumes", "cache", "jobs", "checkpoints", "training"}


@pytest.mark.parametrize("endpoint", ["", "volumes", "cache", "jobs", "checkpoints", "training"])
async def test_without_a_token_is_403(jp_fetch, endpoint):
    code, _ = await error(jp_fetch, endpoint, headers={"Authorization": "token wrong"})
    assert code == 403


async def test_clear_without_a_token_is_403_and_clears_nothing(jp_fetch, images):
    cache = FileCache()
    cache.get(f"{VOLUME}/README.txt")
    code, _ = await error(jp_fetch, "cache", method="DELETE", headers={"Authorization": "token wrong"})
    assert code == 403 and cache.info().entries == 1


async def test_wrong_method_is_405(jp_fetch):
    code, _ = await error(jp_fetch, "volumes", method="POST", body="x")
    assert code == 405


# -- volumes --------------------------------------------------------------------------------------
async def test_volumes_tree(jp_fetch, images):
    VolumeStore().create("dev.scratch.tmp")
    doc = await get(jp_fetch, "volumes")
    assert doc["count"] == 2 and doc["kind"] == "embedded"
    assert [c["name"] for c in doc["catalogs"]] == ["dev", "main"]
    assert doc["catalogs"][1]["schemas"][0]["volumes"] == [{"name": "images", "path": VOLUME, "kind": "embedded"}]


async def test_folder_page_folders_first_with_sizes(jp_fetch, images):
    doc = await get(jp_fetch, "volumes", path=VOLUME)
    assert [(e["name"], e["is_dir"], e["size"]) for e in doc["entries"]] == [
        ("train", True, None),
        ("README.txt", False, 42),
    ]
    assert doc["total"] == 2 and doc["next_offset"] is None


async def test_loops_fifos_and_leftovers_never_break_a_folder_page(jp_fetch, images):
    import os

    folder = images.locate(f"{VOLUME}/train/cat").path
    os.symlink("loop", os.path.join(folder, "loop"))
    os.mkfifo(os.path.join(folder, "pipe"))
    open(os.path.join(folder, ".a.jpg.air-tmp-999999-1"), "wb").close()  # a killed copy's temp file
    doc = await get(jp_fetch, "volumes", path=f"{VOLUME}/train/cat")
    assert [e["name"] for e in doc["entries"]] == ["a.jpg", "b.jpg"]


async def test_folder_paging(jp_fetch, images):
    first = await get(jp_fetch, "volumes", path=f"{VOLUME}/train/cat", limit=1)
    assert [e["name"] for e in first["entries"]] == ["a.jpg"] and first["next_offset"] == 1
    second = await get(jp_fetch, "volumes", path=f"{VOLUME}/train/cat", offset=1, limit=1)
    assert [e["name"] for e in second["entries"]] == ["b.jpg"] and second["next_offset"] is None


@pytest.mark.parametrize(
    "path", [f"{VOLUME}/../other", "/etc/passwd", "/Volumes/main/demo", "main.demo/images", f"{VOLUME}/README.txt"]
)
async def test_bad_path_is_400(jp_fetch, images, path):
    code, message = await error(jp_fetch, "volumes", path=path)
    assert code == 400 and message


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": queries.PAGE_MAX + 1}, {"offset": -1}, {"offset": "x"}])
async def test_bad_paging_is_400(jp_fetch, images, params):
    code, message = await error(jp_fetch, "volumes", path=VOLUME, **params)
    assert code == 400 and "query argument" in message


@pytest.mark.parametrize("path", ["/Volumes/main/demo/nope", f"{VOLUME}/nope"])
async def test_missing_path_is_404_and_names_no_host_path(jp_fetch, images, air_home, path):
    code, message = await error(jp_fetch, "volumes", path=path)
    assert code == 404 and "does not exist" in message
    assert str(air_home) not in message


# -- cache ----------------------------------------------------------------------------------------
async def test_cache_empty_then_statistics(jp_fetch, images):
    assert await get(jp_fetch, "cache") == {"cache": None, "loader": None, "loaders": []}
    cache = FileCache()
    for rel in ("train/cat/a.jpg", "train/cat/a.jpg", "README.txt"):
        cache.get(f"{VOLUME}/{rel}")
    cache.publish_status()
    doc = (await get(jp_fetch, "cache"))["cache"]
    assert (doc["hits"], doc["misses"], doc["entries"], doc["bytes"]) == (1, 2, 2, 1042)


async def test_clear_keeps_what_was_just_handed_out(jp_fetch, images):
    cache = FileCache()
    cache.get(f"{VOLUME}/README.txt")
    r = await jp_fetch("air", "api", "cache", method="DELETE")  # token-authenticated: no XSRF header needed
    doc = json.loads(r.body)
    assert doc["removed"] == 0 and doc["kept"] == 1 and "cache" in doc and "loader" in doc
    assert cache.info().entries == 1


async def test_a_broken_cache_is_500_with_a_message_and_no_host_path(jp_fetch, monkeypatch, air_home):
    def broken():
        raise RuntimeError(f"index damaged at {air_home}/cache/index.sqlite")

    monkeypatch.setattr(queries, "cache_summary", broken)
    code, message = await error(jp_fetch, "cache")
    assert code == 500 and "RuntimeError: index damaged" in message
    assert str(air_home) not in message


# -- jobs -----------------------------------------------------------------------------------------
async def test_jobs_with_progress(jp_fetch):
    now = time.time()
    write_status(
        "job-copy-live",
        {"kind": "copy", "state": "running", "files_total": 10, "files_done": 4, "eta": math.nan, "started": now},
    )
    write_status("job-export-tbl", {"kind": "export", "state": "done", "tasks": 2, "tasks_done": 2, "finished": now})
    jobs = {j["name"]: j for j in (await get(jp_fetch, "jobs"))["jobs"]}
    assert set(jobs) == {"job-copy-live", "job-export-tbl"}
    live = jobs["job-copy-live"]
    assert live["progress"] == pytest.approx(0.4) and live["job"] == "live" and not live["stale"]
    assert live["eta"] is None  # NaN in a status document answers as null, never as invalid JSON
    assert jobs["job-export-tbl"]["progress"] == 1.0


@pytest.mark.parametrize("recent", ["x", "-1", "nan", "inf"])
async def test_bad_recent_is_400(jp_fetch, recent):
    code, message = await error(jp_fetch, "jobs", recent=recent)
    assert code == 400 and "recent" in message


# -- checkpoints ----------------------------------------------------------------------------------
def _committed(store: VolumeStore, directory: str, step: int) -> None:
    """A committed step as the manager leaves it (its two markers) and `latest` pointing at it."""
    for name in (".metadata", "_COMMITTED"):
        with store.open(f"{directory}/step_{step}/{name}", "wb") as f:
            f.write(b"{}")
    with store.open(f"{directory}/latest", "wb") as f:
        f.write(f"step_{step}".encode())


async def test_committed_checkpoint(jp_fetch):
    store = VolumeStore()
    store.create("main.ml.runs")
    directory = "/Volumes/main/ml/runs/ckpt"
    _committed(store, directory, 3)
    write_status("checkpoints-run", {"directory": directory, "keep": 2, "saves": []})
    (ck,) = (await get(jp_fetch, "checkpoints"))["checkpoints"]
    assert (ck["directory"], ck["steps"], ck["latest"], ck["keep"], ck["error"]) == (directory, [3], 3, 2, None)


async def test_a_vanished_checkpoint_folder_is_an_error_in_its_item(jp_fetch, air_home):
    write_status("checkpoints-gone", {"directory": "/Volumes/no/such/vol/ckpt", "saves": []})
    write_status("checkpoints-junk", {"directory": None, "saves": "x"})
    items = {c["name"]: c for c in (await get(jp_fetch, "checkpoints"))["checkpoints"]}
    assert "does not exist" in items["checkpoints-gone"]["error"] and items["checkpoints-junk"]["error"]
    assert str(air_home) not in json.dumps(items)
