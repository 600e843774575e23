"""The training chart in a notebook: a real kernel (nbclient, as JupyterLab's Run All) runs a
DataLoader loop; the cell's saved output is the live chart, replaced in place, whose drawn points
are those of the loader's status document (what a reopened notebook shows); the text forms."""

from __future__ import annotations

import json
import os
import re
import textwrap
import xml.etree.ElementTree as ET

import nbformat
from nbclient import NotebookClient

from air_magics.charts import training_line, training_spec
from air_magics.events import LoaderEvent, channel
from air_magics.snapshots import LoaderTimes
from air_magics.status import read_status
from air_magics.widgets import cache_text
from air_magics.widgets.training_view import LIVE_VIEW, LoaderCharts, TrainingView

SVG = "{http://www.w3.org/2000/svg}"

SETUP = """\
%load_ext air_magics
import time
from air_magics.volumes import VolumeStore
from air_magics.data import DataLoader, UCVolumeDataset
s = VolumeStore()
s.create("main.tv.data")
for i in range(40):
    with s.open(f"/Volumes/main/tv/data/{i:02d}.bin", "wb") as f:
        f.write(b"t" * (1000 + i))
"""
LOOP = """\
dl = DataLoader(UCVolumeDataset("/Volumes/main/tv/data"), batch_size=1, num_workers=0)
for batch in dl:
    time.sleep(0.05)
"""
REPORT = """\
import json, os
from air_magics.events import channel
from air_magics.status import read_status
view = next(x for x in channel.listeners if type(x).__name__ == "LoaderCharts").view
json.dump(read_status(f"loader-{os.getpid()}"), open("loop.json", "w"))  # the loop's last document
print(view.updates, view.display_id)
"""


def _run(cells: list[str], tmp_path) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells])
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    nbformat.write(nb, tmp_path / "run.ipynb")  # saved as a person's notebook is: what a reopened one shows
    return nbformat.read(tmp_path / "run.ipynb", as_version=4)


def _drawn(html: str) -> dict[str, list[tuple[str, float, float]]]:
    """Points drawn per panel, read back from the cell's SVG."""
    out = {}
    for svg in re.findall(r"<svg .*?</svg>", html, flags=re.S):
        root = ET.fromstring(svg)
        out[root.get("data-panel")] = [
            (c.get("data-series"), float(c.get("data-x")), float(c.get("data-y"))) for c in root.iter(f"{SVG}circle")
        ]
    return out


def test_the_loops_cell_shows_the_live_chart_and_keeps_its_last_state(tmp_path):
    nb = _run([SETUP, LOOP, REPORT, "%config AirMagics.widgets = False\n" + LOOP], tmp_path)
    outputs = nb.cells[1].outputs
    charts = [o for o in outputs if o.output_type == "display_data" and "text/html" in o.data]
    assert len(charts) == 1, outputs  # one chart, redrawn in place (update_display), not one per refresh
    doc = json.loads((tmp_path / "loop.json").read_text())  # the kernel's loader: its last (epoch done) document
    assert doc["done"] is True and doc["steps"] == 40
    spec = training_spec([doc])
    expected = {p["id"]: [(s["name"], x, y) for s in p["series"] for x, y in s["points"]] for p in spec["panels"]}
    assert _drawn(charts[0].data["text/html"]) == expected
    assert sum(len(v) for v in expected.values()) > 0
    assert charts[0].data["text/plain"] == training_line(spec)
    assert charts[0].metadata == LIVE_VIEW  # the notebook checker skips it, as a widget view
    updates, display_id = nb.cells[2].outputs[0].text.split()
    assert int(updates) >= 1 and display_id.startswith("air-training-")
    # widgets off (%config AirMagics.widgets): the loop's cell shows nothing
    assert not [o for o in nb.cells[3].outputs if o.output_type == "display_data"]


def _event(step: int, pid: int) -> LoaderEvent:
    return LoaderEvent(timing=LoaderTimes(step, 0.1 * step, 0.1 * step, items=step), pid=pid, time=100.0 + step)


def test_the_listener_shows_nothing_without_a_front_end_or_for_another_process():
    shown = LoaderCharts(frontend=lambda: False)
    with channel.attach(shown):
        channel.emit(_event(1, os.getpid()))
    assert shown.view is None
    other = LoaderCharts(frontend=lambda: True)
    other(_event(1, os.getpid() + 1))  # a forked child's event (it inherits the listener): not this cell's
    assert other.view is None


def test_text_forms_outside_jupyter():
    assert repr(TrainingView(pid=os.getpid())) == "training: no loader history yet"
    from air_magics.listeners import StatusDocuments

    docs = StatusDocuments(loader_interval=0.0)
    for step in (10, 20, 30):
        docs(_event(step, os.getpid()))
    view = TrainingView(pid=os.getpid())
    line = repr(view)
    assert line.startswith("training: step 30 · items/s") and "50 %" in line
    assert view._repr_mimebundle_()[0]["text/plain"] == line  # noqa: SLF001  (the notebook's text form)
    text = cache_text(cache={}, loader=read_status(f"loader-{os.getpid()}"), ranks=None)
    assert text.splitlines()[-1] == line  # %air_volume cache, as text: the latest loader's line
    assert view.refresh() is False and view.updates == 0  # never shown: nothing to redraw


def test_the_cells_chart_keeps_to_its_loader():
    """A validation loader alternating with the training loader writes the same document: the
    training loader's chart is not redrawn with it."""
    from air_magics.listeners import StatusDocuments

    docs = StatusDocuments(loader_interval=0.0)
    pid = os.getpid()
    view = TrainingView(pid, loader=(800, 0))
    docs(LoaderEvent(timing=LoaderTimes(10, 1.0, 1.0), pid=pid, time=100.0, files=800))
    assert view.docs() and view.docs()[0]["files"] == 800
    docs(LoaderEvent(timing=LoaderTimes(2, 1.0, 1.0), pid=pid, time=101.0, files=40))
    assert view.docs() == [] and view.refresh() is False
    assert TrainingView(pid).docs()[0]["files"] == 40  # a view of whatever this process ran last


def test_outside_a_notebook_the_view_prints_its_line_once(capsys):
    from air_magics.listeners import StatusDocuments
    from air_magics.widgets import training_view

    docs = StatusDocuments(loader_interval=0.0)
    for step in (10, 20):
        docs(_event(step, os.getpid()))
    view = training_view(os.getpid())
    assert capsys.readouterr().out.strip() == repr(view) and not view.polling
