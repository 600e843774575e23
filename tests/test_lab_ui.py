"""The JupyterLab sidebar in a real browser: Playwright driving Debian's Chromium against a real
``jupyter lab`` (one per module) that shares this test's AIR_HOME.

Needs ``apt-get install -y chromium`` and pip ``playwright`` (never ``playwright install``); the
running-copy test also needs FUSE (a slowfs mount makes the copy slow enough to watch). Screenshots
land in ``test-output/lab_ui/`` (or ``$AIR_TEST_OUTPUT/lab_ui``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _lab_server import start_server

from air_magics.cache import FileCache
from air_magics.demo import seed_sample_volume
from air_magics.status import write_status
from air_magics.volumes import VolumeStore

CHROMIUM = os.environ.get("AIR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
OUT = Path(os.environ.get("AIR_TEST_OUTPUT") or Path(__file__).resolve().parents[1] / "test-output") / "lab_ui"
SIDEBAR_TAB = '.jp-SideBar.jp-mod-left [data-id="air-magics-sidebar"]'
VOLUME = "/Volumes/main/demo/images"
LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"
SETTINGS_ID = "air-magics:sidebar"

pytestmark = pytest.mark.browser


def _need_browser() -> None:
    """Skip without Playwright or Chromium; fail instead where they are required (CI sets AIR_REQUIRE_BROWSER=1)."""
    missing = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing = "playwright missing: pip install playwright (browser tests)"
    if missing is None and not os.access(CHROMIUM, os.X_OK):
        missing = f"{CHROMIUM} missing: apt-get install -y chromium (browser tests; never `playwright install`)"
    if missing:
        (pytest.fail if os.environ.get("AIR_REQUIRE_BROWSER") == "1" else pytest.skip)(missing)


def this_checkouts_sidebar(data_dir: Path) -> dict[str, str]:
    """The environment that serves the sidebar built beside these tests (``labextension/dist``, from
    ``jlpm build`` or ``make install``) ahead of the installed copy (``JUPYTER_PATH`` comes before a
    virtual environment's own folders), so a checkout's browser tests run its own source."""
    dist = LABEXTENSION / "dist"
    if not (dist / "package.json").is_file():
        return {}
    shutil.copytree(dist, data_dir / "labextensions" / "air-magics")
    return {"JUPYTER_PATH": str(data_dir)}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    _need_browser()
    base = tmp_path_factory.mktemp("lab-ui")
    home = base / "air_home"
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {}, "outputs": [], "source": ""}
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (base / "notebooks").mkdir()
    (base / "notebooks" / "ui.ipynb").write_text(json.dumps(notebook))
    srv = start_server(
        base,
        home=home,
        mount=base / "no-such-mount",
        app="lab",
        args=("--LabApp.expose_app_in_browser=True",),
        env=this_checkouts_sidebar(base / "checkout-data"),
    )
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture(autouse=True)
def air_home(lab, monkeypatch):
    """This test process and the Jupyter server share one AIR_HOME (overrides conftest's)."""
    monkeypatch.setenv("AIR_HOME", str(lab.home))
    monkeypatch.delenv("AIR_VOLUMES_ROOT", raising=False)
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(lab.home.parent / "no-such-mount"))
    seed_sample_volume(files=60)
    yield lab.home
    assert lab.alive(), f"the Jupyter server died:\n{lab.log_tail()}"


@pytest.fixture
def page(lab, browser, request):
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    pg = ctx.new_page()
    # a deadline that bounds a broken run, not what a test measures: on 2 cores shared with the suite's
    # JVMs and servers (load 17 was seen) one JupyterLab action took over 30 s (a cell inserted after 31 s)
    pg.set_default_timeout(120_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    OUT.mkdir(parents=True, exist_ok=True)
    try:  # the last state of every test, for a look when one fails
        pg.screenshot(path=str(OUT / f"last-{request.node.name}.png"))
    except Exception:  # pragma: no cover - a crashed page must not hide the test's own error
        pass
    ctx.close()
    assert not [e for e in errors if "air" in e.lower()], errors


def open_lab(page, lab, path: str = "") -> None:
    """JupyterLab in a fresh workspace (no layout restored from an earlier test), sidebar opened."""
    workspace = f"t{time.monotonic_ns()}"
    page.goto(f"{lab.url}/lab/workspaces/{workspace}{'/tree/' + path if path else ''}?token={lab.token}")
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=90_000)
    page.locator(SIDEBAR_TAB).click()
    page.wait_for_selector("#air-magics-sidebar .air-tree-volume")


def row(page, path: str):
    return page.locator(f'#air-magics-sidebar .air-tree-row[data-path="{path}"]')


def expand(page, path: str) -> None:
    r = row(page, path)
    r.locator(".air-tree-caret").click()
    page.wait_for_selector(
        f'#air-magics-sidebar .air-tree-row[data-path="{path}"][aria-expanded="true"][aria-busy="false"]'
    )


def test_sidebar_lists_and_expands_volumes(lab, page):
    open_lab(page, lab)
    expand(page, VOLUME)
    row(page, f"{VOLUME}/train").wait_for()
    names = page.locator("#air-magics-sidebar .air-tree-row").evaluate_all("rs => rs.map(r => r.dataset.path)")
    assert names[:6] == [
        "/Volumes/main",
        "/Volumes/main/demo",
        VOLUME,
        f"{VOLUME}/train",
        f"{VOLUME}/val",
        f"{VOLUME}/README.txt",
    ]
    assert row(page, f"{VOLUME}/README.txt").locator(".air-tree-size").inner_text() == "82 B"
    expand(page, f"{VOLUME}/train")
    expand(page, f"{VOLUME}/train/cat")
    cat = page.locator(f'#air-magics-sidebar .air-tree-file[data-path^="{VOLUME}/train/cat/"]')
    assert cat.count() == 16
    # click a name: its path is copied, and the panel says so
    row(page, f"{VOLUME}/README.txt").locator(".air-tree-name").click()
    page.wait_for_selector(f'#air-magics-sidebar .air-message:has-text("Copied {VOLUME}/README.txt")')
    # collapse again
    row(page, f"{VOLUME}/train").locator(".air-tree-caret").click()
    assert cat.count() == 0


def test_snippets_go_into_the_active_notebook(lab, page):
    open_lab(page, lab, "ui.ipynb")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    expand(page, VOLUME)
    train = row(page, f"{VOLUME}/train")
    train.hover()
    train.locator('button[data-action="ls"]').click()
    cells = page.locator(".jp-Notebook .jp-Cell .cm-content")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell .cm-content')]"
        ".some(c => c.textContent.includes('%air_volume ls /Volumes/main/demo/images/train'))"
    )
    assert cells.count() == 1  # the empty first cell was filled, not a new one added
    train.hover()
    train.locator('button[data-action="copy"]').click()
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .jp-Cell').length === 2")
    assert "%%air_copy --to /local_disk0/images" in cells.nth(1).inner_text()
    assert f"{VOLUME}/train" in cells.nth(1).inner_text()


def test_server_errors_are_shown_in_the_panel(lab, page):
    store = VolumeStore()
    store.create("main.scratch.doomed")
    open_lab(page, lab)
    doomed = "/Volumes/main/scratch/doomed"
    row(page, doomed).wait_for()
    shutil.rmtree(store.locate(doomed).path)
    row(page, doomed).locator(".air-tree-caret").click()
    err = page.locator("#air-magics-sidebar .air-tree .air-error")
    err.wait_for()
    assert "404" in err.inner_text() and "does not exist" in err.inner_text()
    # once the volume is back, collapsing and expanding again retries
    store.create("main.scratch.doomed")
    row(page, doomed).locator(".air-tree-caret").click()
    expand(page, doomed)
    page.wait_for_selector('#air-magics-sidebar .air-tree-note:has-text("(empty)")')
    assert err.count() == 0


def _slow_copy(src: Path, dest: Path, job: str) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import air_magics
        air_magics.copy([{str(src)!r}], {str(dest)!r}, job={job!r}, workers=2)
    """)
    return subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ), stderr=subprocess.PIPE)


def test_running_copy_cache_and_checkpoint_appear(lab, page, slowfs, tmp_path):
    """A copy from a slow FUSE mount shows live progress; a committed checkpoint and the cache
    statistics appear; the screenshot is the README's."""
    torch = pytest.importorskip("torch")
    from air_magics.data import CheckpointManager

    backing = tmp_path / "backing" / "shards"
    backing.mkdir(parents=True)
    for i in range(600):
        (backing / f"shard_{i:04d}.bin").write_bytes(os.urandom(2048))
    cache = FileCache(limit="64MiB")
    files = sorted(VolumeStore().ls(f"{VOLUME}/val", recursive=True), key=lambda f: str(f.path))
    for f in files + files[:6]:
        cache.get(f.path)
    cache.publish_status()

    open_lab(page, lab, "ui.ipynb")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    expand(page, VOLUME)
    train = row(page, f"{VOLUME}/train")
    train.hover()
    train.locator('button[data-action="copy"]').click()
    hit_rate = page.locator("#air-magics-sidebar .air-cache-hitrate")
    hit_rate.wait_for()
    assert hit_rate.inner_text() == f"{cache.info().hit_rate:.1%}"

    with slowfs.mounted(tmp_path / "backing", tmp_path / "mnt", op_latency_ms=25, read_latency_ms=10):
        proc = _slow_copy(tmp_path / "mnt" / "shards", tmp_path / "local" / "shards", "ui-demo")
        try:
            job = page.locator('#air-magics-sidebar .air-job[data-job="job-copy-ui-demo"]')
            job.locator('.air-badge:has-text("running")').wait_for(timeout=60_000)
            page.wait_for_function(
                """() => { const b = document.querySelector('.air-job[data-job="job-copy-ui-demo"] .air-bar');
                           const v = b && Number(b.getAttribute('aria-valuenow'));
                           return v > 0 && v < 100; }""",
                timeout=60_000,
            )
            assert "/ 600 files" in job.locator(".air-job-detail").inner_text()

            VolumeStore().create("main.ml.runs")
            CheckpointManager("/Volumes/main/ml/runs/ckpt", show=False).save(1, {"w": torch.ones(3)})
            ckpt = page.locator('#air-magics-sidebar .air-ckpt[data-directory="/Volumes/main/ml/runs/ckpt"]')
            ckpt.locator('.air-save[data-step="1"][data-state="committed"]').wait_for(timeout=30_000)
            assert "latest 1" in ckpt.locator(".air-ckpt-summary").inner_text()

            OUT.mkdir(parents=True, exist_ok=True)
            page.mouse.move(900, 600)  # no hover highlight in the picture
            still_running = proc.poll() is None
            page.screenshot(path=str(OUT / "sidebar.png"))
            page.locator("#air-magics-sidebar").screenshot(path=str(OUT / "sidebar-panel.png"))
            assert still_running, "the copy finished before the screenshot: make it slower"
        finally:
            interrupted = proc.poll() is None
            if interrupted:
                proc.send_signal(signal.SIGINT)  # the copy stops handing out files and reports "interrupted"
            _, err = proc.communicate(timeout=120)
        # on a busy machine the copy may end on its own between the screenshot and the signal
        final = job.locator('.air-badge:has-text("interrupted"), .air-badge:has-text("done")')
        final.wait_for(timeout=30_000)
        if final.inner_text().strip() == "interrupted":
            last = err.strip().splitlines()[-1]  # a KeyboardInterrupt subclass saying what landed, how to resume
            assert last.startswith(b"air_magics.errors.Interrupted: ") and b"re-run" in last, err[-2000:]
        else:  # it finished: every file copied, and the view says so
            assert "600 / 600 files" in job.locator(".air-job-detail").inner_text()


def test_clear_cache_button_asks_then_clears(lab, page):
    """The one state-changing call, from the browser: cookie auth plus the XSRF header."""
    cache = FileCache()
    cache.clear(force=True)  # only this test's files: earlier tests' entries may be unpinned by now
    files = VolumeStore().ls(f"{VOLUME}/val/cat")
    for f in files:
        cache.get(f.path)
    cache.publish_status()
    n = cache.info().entries
    assert n > 1
    open_lab(page, lab)
    page.locator("#air-magics-sidebar .air-cache-clear").click()
    page.locator(".jp-Dialog button.jp-mod-reject").click()  # cancel: nothing happens
    assert cache.info().entries == n
    for f in files:  # handed out again just now: pinned however long Lab took to load on a busy machine
        cache.get(f.path)
    page.locator("#air-magics-sidebar .air-cache-clear").click()
    page.locator(".jp-Dialog button.jp-mod-warn").click()  # every file was just handed out: all kept
    page.wait_for_selector(f'#air-magics-sidebar .air-message:has-text("Cleared 0 cached files; kept {n} in use")')
    assert cache.info().entries == n
    cache.flush_hits()  # this process's rows and pins are in the index first
    db = sqlite3.connect(cache.root / "index.sqlite")  # as after a finished run: nothing pinned
    with db:
        db.execute("UPDATE entries SET last_access = last_access - 3600")
    db.close()
    page.locator("#air-magics-sidebar .air-cache-clear").click()
    page.locator(".jp-Dialog button.jp-mod-warn").click()
    page.wait_for_selector(f'#air-magics-sidebar .air-message:has-text("Cleared {n} cached files.")')
    assert cache.info().entries == 0
    assert page.locator("#air-magics-sidebar .air-section-cache .air-stat-value").nth(1).inner_text() == "0"


def test_dark_theme_uses_the_theme_colours(lab, page):
    open_lab(page, lab)
    light = page.locator("#air-magics-sidebar").evaluate("e => getComputedStyle(e).backgroundColor")
    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached")
    page.wait_for_function(
        """() => getComputedStyle(document.querySelector('#air-magics-sidebar'))
                              .backgroundColor !== """
        + json.dumps(light)
    )
    dark = page.locator("#air-magics-sidebar").evaluate(
        "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]"
    )

    def luminance(css: str) -> float:
        r, g, b = (int(x) for x in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
        return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255

    assert luminance(light) > 0.8 and luminance(dark[0]) < 0.3 and luminance(dark[1]) > 0.6, (light, dark)
    OUT.mkdir(parents=True, exist_ok=True)
    page.locator("#air-magics-sidebar").screenshot(path=str(OUT / "sidebar-dark.png"))
    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_selector('body[data-jp-theme-light="true"]', state="attached")


def test_refresh_command_picks_up_new_volumes(lab, page):
    open_lab(page, lab)
    VolumeStore().create("main.demo.fresh")
    VolumeStore().create("other.new.vol")
    page.evaluate("window.jupyterapp.commands.execute('air-magics:refresh')")
    row(page, "/Volumes/main/demo/fresh").wait_for()
    row(page, "/Volumes/other").click()  # a new catalog arrives collapsed; a click opens it
    row(page, "/Volumes/other/new").click()
    row(page, "/Volumes/other/new/vol").wait_for()


# -- an idiomatic sidebar: updates touch only what changed, settings apply live ---------------------
WATCH_DOM = """() => {
    const root = document.querySelector('#air-magics-sidebar');
    window.airTagged = [...root.querySelectorAll('.air-tree-row, .air-section-body > *')];
    window.airMutations = [];
    const observer = new MutationObserver(records => window.airMutations.push(
        ...records.map(r => `${r.type} in ${r.target.closest('.air-section').className}`)));
    for (const node of root.querySelectorAll('.air-section')) {
        observer.observe(node, {subtree: true, childList: true, attributes: true, characterData: true});
    }
}"""


def refresh_all(page) -> None:
    """The refresh command: resolves once the volumes, open folders and status sections reloaded."""
    page.evaluate("window.jupyterapp.commands.execute('air-magics:refresh')")


def test_an_unchanged_refresh_touches_no_dom_node(lab, page):
    """Refreshing with the same answers changes nothing in the DOM: the tree keeps its open folders
    (the very same row nodes) and every section's content stays. A new job adds its own node only."""
    now = time.time()
    write_status(
        "job-copy-dom-a",
        {"kind": "copy", "state": "done", "files_total": 2, "files_done": 2, "started": now - 5, "finished": now},
    )
    open_lab(page, lab)
    expand(page, VOLUME)
    expand(page, f"{VOLUME}/train")
    page.locator('#air-magics-sidebar .air-job[data-job="job-copy-dom-a"]').wait_for()
    for name in ("cache", "checkpoints"):
        page.locator(f"#air-magics-sidebar .air-section-{name} .air-section-body > *").first.wait_for()
    page.evaluate(WATCH_DOM)

    refresh_all(page)
    assert page.evaluate("window.airMutations") == []
    assert page.evaluate("window.airTagged.every(node => node.isConnected)")
    assert row(page, f"{VOLUME}/train").get_attribute("aria-expanded") == "true"

    write_status(
        "job-copy-dom-b",
        {"kind": "copy", "state": "done", "files_total": 3, "files_done": 3, "started": now, "finished": time.time()},
    )
    refresh_all(page)
    page.locator('#air-magics-sidebar .air-job[data-job="job-copy-dom-b"]').wait_for()
    changed = set(page.evaluate("window.airMutations"))
    assert changed == {"childList in air-section air-section-jobs"}, changed
    assert page.evaluate("window.airTagged.every(node => node.isConnected)")  # the other job's node too


def test_schema_defaults_match_the_fallback():
    """Without a settings registry the extension uses DEFAULT_SETTINGS: the schema's defaults."""
    import re

    schema = json.loads((LABEXTENSION / "schema" / "sidebar.json").read_text())
    defaults = {k: v["default"] for k, v in schema["properties"].items()}
    source = (LABEXTENSION / "src" / "settings.ts").read_text()
    block = re.search(r"DEFAULT_SETTINGS: IAirSettings = \{(.*?)\};", source, re.S).group(1)
    fallback = json.loads("{" + re.sub(r"(\w+):", r'"\1":', block.replace("'", '"')) + "}")
    assert fallback == defaults
    package = json.loads((LABEXTENSION / "package.json").read_text())
    assert package["jupyterlab"]["schemaDir"] == "schema"


def test_settings_apply_live(lab, page):
    """Changed in the settings editor, the page size and the sections shown apply at once; a section
    left out is no longer polled."""
    overrides = lab.home.parent / "lab-settings" / "air-magics" / "sidebar.jupyterlab-settings"
    requests_seen: list[str] = []
    page.on("request", lambda r: requests_seen.append(r.url))
    try:
        open_lab(page, lab)
        page.evaluate("window.jupyterapp.commands.execute('settingeditor:open', {query: 'Air sidebar'})")
        field = page.locator(f'[id="jp-SettingsEditor-{SETTINGS_ID}_pageSize"]')
        with page.expect_response(lambda r: SETTINGS_ID in r.url and r.request.method == "PUT"):
            field.fill("5")
        with page.expect_response(lambda r: SETTINGS_ID in r.url and r.request.method == "PUT"):
            page.locator(f'[id="jp-SettingsEditor-{SETTINGS_ID}_sections"]').select_option(["volumes", "cache"])
        page.locator("#air-magics-sidebar .air-section-jobs").wait_for(state="detached")
        sections = page.locator("#air-magics-sidebar .air-section").evaluate_all(
            "ss => ss.map(s => s.className.replace('air-section air-section-', ''))"
        )
        assert sections == ["volumes", "cache"]
        saved = json.loads(overrides.read_text())
        assert (saved["pageSize"], saved["sections"]) == (5, ["volumes", "cache"])

        expand(page, VOLUME)
        expand(page, f"{VOLUME}/train")
        expand(page, f"{VOLUME}/train/cat")
        files = page.locator(f'#air-magics-sidebar .air-tree-file[data-path^="{VOLUME}/train/cat/"]')
        assert files.count() == 5
        more = page.locator("#air-magics-sidebar .air-tree-more")
        assert more.inner_text() == "Load more (5 of 16 shown)"
        more.click()
        page.wait_for_function(f"""() => document.querySelectorAll(
            '#air-magics-sidebar .air-tree-file[data-path^="{VOLUME}/train/cat/"]').length === 10""")

        requests_seen.clear()
        refresh_all(page)
        polled = {u.split("/air/api/")[1].split("?")[0] for u in requests_seen if "/air/api/" in u}
        assert "cache" in polled and not polled & {"jobs", "checkpoints"}, polled
    finally:
        overrides.unlink(missing_ok=True)


def test_a_hidden_sidebar_does_not_poll(lab, page):
    """Hidden, the sidebar fetches no status (not even on the refresh command); shown, it polls at once."""
    open_lab(page, lab)
    page.locator("#air-magics-sidebar .air-section-jobs .air-section-body > *").first.wait_for()
    page.locator(SIDEBAR_TAB).click()
    page.locator("#air-magics-sidebar").wait_for(state="hidden")
    refresh_all(page)  # settles a poll that was under way when the panel closed
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    refresh_all(page)
    assert not [u for u in seen if any(f"/air/api/{e}" in u for e in ("training", "cache", "jobs", "checkpoints"))], (
        seen
    )
    with page.expect_request(lambda r: "/air/api/jobs" in r.url):
        page.locator(SIDEBAR_TAB).click()


def test_a_pack_run_is_a_job_in_the_sidebar(lab, page):
    """A real pack's events reach the sidebar's jobs as a copy's do: its kind, state, shards and files."""
    from air_magics.listeners.status_docs import pack_status_name
    from air_magics.shards import pack

    dest = f"{VOLUME}/val_packed"
    try:
        report = pack(f"{VOLUME}/val", dest, shard_size="64KiB")
        open_lab(page, lab)
        job = page.locator(f'#air-magics-sidebar .air-job[data-job="{pack_status_name(dest)}"]')
        job.locator('.air-badge:has-text("done")').wait_for()
        assert job.locator(".air-job-kind").text_content() == "pack"
        detail = job.locator(".air-job-detail").inner_text()
        assert f"{report.shards} / {report.shards} shards" in detail, detail
        assert f"{report.files} / {report.files} files" in detail, detail
    finally:
        shutil.rmtree(VolumeStore().locate(dest).path, ignore_errors=True)


def test_a_running_loader_shows_its_verdict_in_the_sidebar(lab, page):
    """The loader's verdict (from the 10th step on) reaches the sidebar's cache section."""
    from air_magics.data import DataLoader, UCVolumeDataset

    loader = DataLoader(UCVolumeDataset(VOLUME), batch_size=2, num_workers=0)
    steps = sum(1 for _ in loader)
    assert steps >= 10
    open_lab(page, lab)
    verdict = page.locator("#air-magics-sidebar .air-loader-verdict")
    verdict.wait_for(timeout=30_000)
    assert str(loader.timing.verdict()).split(":")[0] in verdict.inner_text()
