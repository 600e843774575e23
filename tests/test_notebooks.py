"""Every notebook runs clean top to bottom, as Run All does, and prints what it stores.

A magic's error counts (nbval alone misses it: see ``notebook_run``). Each notebook runs in a fresh
kernel with its own ``AIR_HOME``; it must leave the shared sample data as it found it and write
nothing into the user's caches outside ``AIR_HOME``.
"""

from pathlib import Path

import pytest
from notebook_run import run_notebook

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _sample_files(air_home: Path) -> set[str]:
    root = air_home / "volumes" / "main" / "demo" / "images"
    return {str(p.relative_to(root)) for split in ("train", "val") for p in (root / split).rglob("*") if p.is_file()}


def test_every_notebook_is_checked():
    assert [p.name for p in NOTEBOOKS] == [
        "01_volumes_and_copy.ipynb",
        "02_training_data.ipynb",
        "03_checkpoints.ipynb",
        "04_tables.ipynb",
        "05_shards.ipynb",
    ]


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "notebook",
    # 04's kernel uses the run's shared Spark server: with the other tests that do (conftest)
    [
        pytest.param(p, marks=[pytest.mark.spark, pytest.mark.xdist_group("spark")]) if p.stem == "04_tables" else p
        for p in NOTEBOOKS
    ],
    ids=[p.stem for p in NOTEBOOKS],
)
def test_notebook_runs_clean_top_to_bottom(notebook, tmp_path, air_home, monkeypatch, request):
    """A fresh kernel runs the notebook: 10-60 s each (kernel start, torch, DataLoader workers)."""
    if notebook.stem == "04_tables":  # its kernel uses the run's shared server (conftest), not one of its own
        request.getfixturevalue("shared_spark")
    cache_home = tmp_path / "xdg-cache"  # where ~/.cache would be: nothing may land there
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    for var in ("HF_HOME", "HF_DATASETS_CACHE"):
        monkeypatch.delenv(var, raising=False)
    run = run_notebook(notebook, cwd=tmp_path)
    assert not run.errors, "a cell failed (Run All would stop here):\n" + "\n".join(run.errors)
    assert not run.not_raised, f"cells tagged raises-exception ran without an error: {run.not_raised}"
    assert not run.differences, "outputs differ from the stored ones:\n" + "\n".join(run.differences)
    sample = _sample_files(air_home)
    if sample:  # the notebook used the shared sample volume: it is left as seeded
        assert len(sample) == 600 and all(name.endswith(".jpg") for name in sample), sorted(sample)[-5:]
    assert not (cache_home / "huggingface").exists(), "Hugging Face files were written outside AIR_HOME"


def test_a_notebook_opens_unmodified():
    """JupyterLab writes the kernel's spec into a notebook when its kernel starts: a stored
    ``kernelspec`` that differs (``"Python 3"`` where ipykernel says ``"Python 3 (ipykernel)"``)
    shows the notebook as modified right after it is opened (issue 49)."""
    import json

    from ipykernel.kernelspec import get_kernel_dict

    spec = get_kernel_dict()
    for nb in NOTEBOOKS:
        stored = json.loads(nb.read_text())["metadata"]["kernelspec"]
        assert stored == {"display_name": spec["display_name"], "language": spec["language"], "name": "python3"}, nb
