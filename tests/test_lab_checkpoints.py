"""The checkpoint time line in JupyterLab's sidebar, in Chromium (Playwright): real saves of a
``CheckpointManager`` (a background one, then a blocking one) must appear as rows of phase bars whose
drawn values (read from the DOM) are the API's time line, with each save's blocked part its record's
``blocked_s``, and each save's MB/s against the volume's probed rate. Screenshot: ``test-output/lab_ui/checkpoint-timeline.png``."""

from __future__ import annotations

import pytest
from test_lab_ui import (  # noqa: F401  (lab, browser, page, air_home: the browser fixtures)
    OUT,
    air_home,
    browser,
    lab,
    open_lab,
    page,
)

from air_magics.charts.svg import LEFT, RIGHT, W

pytestmark = pytest.mark.browser

SEGS_JS = """root => [...root.querySelectorAll('svg[data-panel="saves"] rect.air-seg')].map(r => [
    Number(r.dataset.step), r.dataset.kind, Number(r.dataset.from), Number(r.dataset.to),
    Number(r.getAttribute('x')), Number(r.getAttribute('width'))])"""


def test_the_sidebar_draws_each_save_as_its_phases(lab, page):  # noqa: F811  (fixtures)
    import torch

    from air_magics.checkpoints import CheckpointManager
    from air_magics.checkpoints.commit import checkpoint_status
    from air_magics.server import queries
    from air_magics.volumes import VolumeStore, probe

    VolumeStore().create("main.ml.tl")
    mgr = CheckpointManager("/Volumes/main/ml/tl/ckpt", show=False)
    mgr.save(1, {"w": torch.randn(1_000_000)}, blocking=False, background_staging=True)
    mgr.wait()
    mgr.save(2, {"w": torch.randn(1_000_000)})
    report = probe("/Volumes/main/ml/tl/ckpt", budget_s=2)  # the volume's measured rate, the saves' MB/s line
    records = {s["step"]: s for s in checkpoint_status("/Volumes/main/ml/tl/ckpt")["saves"]}
    (folder,) = [f for f in queries.checkpoints()["checkpoints"] if f["directory"] == "/Volumes/main/ml/tl/ckpt"]
    spec = folder["timeline"]
    expected = sorted((r["step"], g["kind"], g["from"], g["to"]) for r in spec["saves"] for g in r["segments"])

    open_lab(page, lab)
    ckpt = page.locator('#air-magics-sidebar .air-ckpt[data-directory="/Volumes/main/ml/tl/ckpt"]')
    ckpt.locator('svg[data-panel="saves"] rect.air-seg[data-step="2"]').first.wait_for(timeout=30_000)
    drawn = ckpt.evaluate(SEGS_JS)
    assert sorted((s, k, f, t) for s, k, f, t, _, _ in drawn) == expected  # exactly the API's time line
    span, pw = spec["x"]["to"], W - LEFT - RIGHT
    for step, kind, start, end, x, width in drawn:
        assert x == pytest.approx(LEFT + start / span * pw, abs=0.1)
        assert width == pytest.approx(max((end - start) / span * pw, 0.5), abs=0.2)
        if kind == "blocked":  # the done-when: the blocked part is the record's blocked_s
            assert end - start == pytest.approx(records[step]["blocked_s"], abs=1e-5)
    assert {(s, k) for s, k, *_ in drawn} >= {(1, "blocked"), (1, "upload"), (1, "commit"), (2, "blocked")}
    blocked = ckpt.locator('rect.air-seg[data-step="1"][data-kind="blocked"]')
    assert blocked.locator("title").text_content().startswith("step 1 blocked: ")
    # each save's MB/s as a bar against the probe's rate, as the API gives them
    rates = ckpt.locator('svg[data-panel="save-rates"]')
    bars = rates.locator("rect.air-bar").evaluate_all("rs => rs.map(r => [r.dataset.label, Number(r.dataset.y)])")
    assert bars == [[b["label"], b["value"]] for b in spec["rates"]["bars"]] and len(bars) == 2
    assert bars[0][1] == pytest.approx(records[1]["mb_per_s"], rel=1e-3)
    ref = rates.locator("line.air-ref")
    assert float(ref.get_attribute("data-y")) == pytest.approx(report.parallel_read_mb_s, rel=1e-3)
    ckpt.locator('rect.air-seg[data-step="1"][data-kind="upload"]').hover()
    OUT.mkdir(parents=True, exist_ok=True)
    ckpt.screenshot(path=str(OUT / "checkpoint-timeline.png"))
