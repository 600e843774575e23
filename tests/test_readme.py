"""The README's Python snippets run as written, top to bottom, in one kernel on a fresh AIR_HOME.

What a newcomer does first is paste the tour; this keeps the README from drifting (issue 37). The
blocks run as notebook cells in one fresh kernel, as Run All would (a magic's error fails it too: see
``notebook_run``). The tables blocks use the run's shared Spark server. A block that needs an optional
package says so in the README (``<!-- readme-test: needs PKG -->`` right above it): without PKG it
must fail with the one-line error that names ``pip install PKG``.

The mount block links ``/Volumes`` on this machine, as the README says it does; the link is removed
afterwards, and a ``/Volumes`` that was there before (a Mac's disks, a real mount) is left alone and
fails the test with the reason.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import pytest
from notebook_run import run_notebook

README = Path(__file__).resolve().parents[1] / "README.md"
_FENCE = re.compile(r"(?:<!-- readme-test: needs (?P<needs>[\w-]+) -->\n)?```python\n(?P<code>.*?)```", re.S)
TOUR_LOCAL = Path("/tmp/air-tour")  # the README's local destination


def readme_blocks() -> list[tuple[str, str | None]]:
    """(code, optional package it needs) of every ```python block, in order."""
    return [(m["code"], m["needs"]) for m in _FENCE.finditer(README.read_text())]


def test_blocks_are_found():
    blocks = readme_blocks()
    assert len(blocks) >= 10 and "%load_ext air_magics" in blocks[0][0]
    assert any(needs == "mlflow" for _, needs in blocks)


@pytest.mark.spark
@pytest.mark.xdist_group("spark")  # its tables blocks use the run's shared server (conftest)
@pytest.mark.timeout(900)
def test_readme_runs_top_to_bottom(tmp_path, air_home, monkeypatch, request):
    import nbformat

    request.getfixturevalue("shared_spark")  # the tables blocks: the run's embedded server
    volumes_link = Path("/Volumes")
    if os.path.lexists(volumes_link):
        pytest.fail(f"{volumes_link} exists on this machine: the README's mount block would not make it; remove it")
    monkeypatch.delenv("AIR_VOLUMES_MOUNT")  # the README's /Volumes, as a user's kernel sees it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    shutil.rmtree(TOUR_LOCAL, ignore_errors=True)
    nb = nbformat.v4.new_notebook()
    expect_error: list[int] = []
    for i, (code, needs) in enumerate(readme_blocks()):
        cell = nbformat.v4.new_code_cell(code.rstrip("\n"))
        cell.metadata["tags"] = ["nbval-ignore-output"]
        if needs and importlib.util.find_spec(needs) is None:
            cell.metadata["tags"].append("raises-exception")
            expect_error.append(i)
        nb.cells.append(cell)
    path = tmp_path / "readme.ipynb"
    nbformat.write(nb, path)
    try:
        run = run_notebook(path, cwd=tmp_path)
    finally:
        if volumes_link.is_symlink():
            volumes_link.unlink()
        shutil.rmtree(TOUR_LOCAL, ignore_errors=True)
    assert not run.errors, "a README block failed as pasted:\n" + "\n".join(run.errors)
    assert not run.not_raised, f"blocks that need a missing package ran without its error: {run.not_raised}"
    for i in expect_error:
        text = "".join(o.get("evalue", "") for o in run.executed.cells[i].outputs if o.get("output_type") == "error")
        needs = readme_blocks()[i][1]
        assert f"pip install {needs}" in text, f"block {i} needs {needs}: its error should say how to install it"
