"""The training chart in JupyterLab, in Chromium (Playwright): a notebook cell runs a real epoch
from a slow FUSE volume; the cell's chart and the sidebar's Training section must draw exactly the
points of the loader's events (count and values, read from the DOM), keep them after a reload of
the saved notebook, and show each point's step and value on hover. Screenshots land in
``test-output/lab_ui/training-*.png``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_lab_ui import (  # noqa: F401  (lab, browser, page, air_home: the browser fixtures)
    OUT,
    SIDEBAR_TAB,
    air_home,
    browser,
    lab,
    open_lab,
    page,
)

from air_magics.charts import history_rows, training_spec

pytestmark = pytest.mark.browser

CELL = """\
%load_ext air_magics
import json, os, time
os.environ["AIR_VOLUMES_MOUNT"] = {mnt!r}
from air_magics.data import DataLoader, UCVolumeDataset
from air_magics.events import LoaderEvent
sent = []
loader = DataLoader(UCVolumeDataset("/Volumes/main/slow/v/d"), batch_size=4, num_workers=0, listeners=[sent.append])
for epoch in range(2):  # the first from the volume, the second from the cache
    for batch in loader:
        time.sleep(0.05)
json.dump([dict(e.to_dict(), time=e.time) for e in sent if isinstance(e, LoaderEvent)], open({events!r}, "w"))
"""

POINTS_JS = """root => [...root.querySelectorAll('svg.air-chart')].map(s => [s.dataset.panel,
    [...s.querySelectorAll('circle.air-point')].map(c => [c.dataset.series, +c.dataset.x, +c.dataset.y])])"""


def _expected(spec: dict) -> list:
    return [[p["id"], [[s["name"], x, y] for s in p["series"] for x, y in s["points"]]] for p in spec["panels"]]


def _notebook(path: Path, source: str) -> None:
    cell = {"cell_type": "code", "execution_count": None, "id": "t0", "metadata": {}, "outputs": [], "source": source}
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    path.write_text(
        json.dumps({"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5})
    )


def test_a_real_epochs_chart_in_the_cell_and_the_sidebar(lab, page, slowfs, tmp_path):  # noqa: F811  (fixtures)
    top = tmp_path / "backing" / "main" / "slow" / "v" / "d"
    top.mkdir(parents=True)
    for i in range(240):
        (top / f"f{i:04d}.bin").write_bytes(i.to_bytes(4, "big") * 1024)
    events_file = tmp_path / "events.json"
    _notebook(lab.root_dir / "training.ipynb", CELL.format(mnt=str(tmp_path / "mnt"), events=str(events_file)))
    with slowfs.mounted(tmp_path / "backing", tmp_path / "mnt", op_latency_ms=8, read_latency_ms=4):
        open_lab(page, lab, "training.ipynb")
        # the kernel first (a cell run before it is there asks which kernel to start)
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.connectionStatus"
            " === 'connected' && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
            timeout=120_000,
        )
        page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
        page.keyboard.press("Shift+Enter")
        cell = page.locator(".jp-Notebook .jp-Cell").first
        cell.locator(".jp-OutputArea svg.air-chart").first.wait_for(timeout=120_000)  # live, while it runs
        page.wait_for_function(
            "() => document.querySelector('.jp-InputPrompt')?.textContent.includes('[1]')", timeout=300_000
        )

    sent = json.loads(events_file.read_text())
    assert sent[-1]["done"] is True and sent[-1]["steps"] == 120
    (doc,) = [json.loads(p.read_text()) for p in (lab.home / "run").glob("loader-*.json")]
    rows = history_rows(doc)
    # every point of the history is one of the events sent, with its totals: nothing made up, none lost at the end
    by_time = {round(e["time"], 3): e for e in sent}
    assert 2 <= len(rows) <= len(sent)
    for r in rows:
        e = by_time[r["t"]]
        assert (r["step"], r["items"], r["bytes"]) == (e["steps"], e["items"], e["read_bytes"])
        assert math.isclose(r["wait"], e["data_wait_s"], abs_tol=1e-4)
    assert rows[-1]["step"] == 120
    expected = _expected(training_spec([doc]))
    assert sum(len(p[1]) for p in expected) >= 5

    output = cell.locator(".jp-OutputArea").first
    page.wait_for_function(
        "([root, n]) => root.querySelectorAll('circle.air-point').length === n",
        arg=[output.element_handle(), sum(len(p[1]) for p in expected)],
        timeout=30_000,
    )
    assert output.evaluate(POINTS_JS) == expected  # the cell draws exactly the run's points
    first = output.locator("svg.air-chart[data-panel='items'] circle.air-point").last
    x, y = first.get_attribute("data-x"), float(first.get_attribute("data-y"))
    assert first.locator("title").text_content() == f"loader, step {int(x):,}: {y:,.4g} items/s"  # the hover text
    first.hover()
    OUT.mkdir(parents=True, exist_ok=True)
    output.screenshot(path=str(OUT / "training-cell.png"))

    section = page.locator("#air-magics-sidebar .air-section-training")
    section.locator("svg.air-chart circle.air-point").first.wait_for(timeout=30_000)
    page.wait_for_function(
        "([root, n]) => root.querySelectorAll('circle.air-point').length === n",
        arg=[section.element_handle(), sum(len(p[1]) for p in expected)],
        timeout=30_000,
    )
    assert section.evaluate(POINTS_JS) == expected  # the sidebar draws the same points from the same spec
    bands = section.locator("svg.air-chart[data-panel='wait'] rect.air-band")
    assert bands.evaluate_all("rs => rs.map(r => r.dataset.band)") == [
        "compute-bound",
        "moderately input-bound",
        "input-bound",
    ]
    assert doc["verdict"] and doc["verdict"] in section.locator(".air-training-verdict").inner_text()
    section.screenshot(path=str(OUT / "training-sidebar.png"))

    # saved and opened again: the cell shows the last chart, not an empty box
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    page.reload()
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=90_000)
    reopened = page.locator(".jp-Notebook .jp-Cell .jp-OutputArea").first
    reopened.locator("svg.air-chart").first.wait_for(timeout=60_000)
    assert reopened.evaluate(POINTS_JS) == expected
