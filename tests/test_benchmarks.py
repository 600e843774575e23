"""The benchmarks' quick mode runs for real in the suite, so the scripts cannot rot.

Each scenario runs through its command-line entry point (``benchmarks/bench_<name>.py --quick
--no-wait``) in a subprocess, on real FUSE volumes (fusevol) and a real Spark Connect server; the test checks
that it exits 0 and prints its report tables. No figure is asserted: benchmarks never assert speed
in the suite. ``--no-wait`` keeps a busy machine from stretching a run (no quiet-machine waits, no
repeats); the loader runs one configuration per kind over 96 small files, the checkpoint a 4 MB state
and the tables a 2,000-row table on the run's shared Spark server (conftest ``spark_server``: no JVM
start of its own): the sizes are the smallest that still take every path of each script, so the
time is the scripts' child processes (interpreter, torch and pyspark imports, FUSE mounts).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# scenario -> (extra flags on top of --quick --no-wait, texts its report must contain)
SCENARIOS = {
    "stages": ([], ["| stage | seconds (median) |", "stages / loop wall", "overhead", "verdict:"]),
    "hotpath": (
        ["--packed"],
        ["| loop | files/s | x bare loop |", "iter(UCVolumeDataset)", "output='bytes'", "CPU per warm hit"],
    ),
    "copy": (
        [],
        [
            "## bench_copy",
            "| method | median s",
            "air_magics workers=",
            "target >= 2x:",
            "Verification: every destination walked",
        ],
    ),
    "confined": ([], ["### confined open vs plain open", "| read |", "| write |"]),
    "loader": (  # 96 files x 32 KiB: each loader still runs its cold and warm epoch through its own processes
        ["--configs", "ref:default,torch:8,copy,air:default,air:default+half", "--files", "96", "--size-kib", "32"],
        ["## bench_loader", "| loader | setup s", "`torch:8`", "`air:default`", "`copy`", "epoch-2 hits"],
    ),
    "checkpoint": (  # a 4 MB state: still several tensors and files per checkpoint, a child process per method
        ["--sizes-mb", "4"],
        [
            "## bench_checkpoint",
            "| method | save MB/s",
            "air_magics `UCVolumeWriter`/`Reader`",
            "async blocked <= 20% of a synchronous save",
            "measurements ok",
        ],
    ),
    "tables": (  # 2,000 rows: two batches of the dataset part; the time is the children's imports, not the rows
        ["--rows", "2000"],
        ["## bench_tables", "| rows | method |", "air-export-client", "overhead at 2,000 rows"],
    ),
    "shards_mosaic": (  # 64 files x 8 KiB at 1 ms; mosaicml-streaming rows only where its venv is
        [],
        ["## bench_shards_mosaic", "| air_magics `pack` |", "| air_magics, members by offset |", "read ceiling"],
    ),
}
NEEDS_FUSE = {"copy", "loader", "checkpoint", "shards_mosaic", "stages"}


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def _tables_unavailable() -> str | None:
    import importlib.util

    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("datasets") is None:
        return "pyspark or datasets not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java not found"
    return None


@pytest.mark.timeout(420)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=[pytest.mark.fuse] if n in NEEDS_FUSE else [pytest.mark.spark] if n == "tables" else [])
        for n in SCENARIOS
    ],
)
def test_quick_benchmark_runs_and_reports(name, request):
    """One benchmark script end to end on real FUSE volumes or the shared Spark server: 20 s to two
    minutes each on a busy 2-core machine (real child processes, torch imports, a FUSE server)."""
    if name in NEEDS_FUSE:
        fusevol = request.getfixturevalue("slowfs")  # skips where FUSE is missing
        if why := fusevol.unavailable("c"):  # the benchmarks count the server's CPU: only the C engine's is fair
            pytest.skip(why)
    if name == "tables" and (why := _tables_unavailable()):
        pytest.skip(why)
    flags, expected = SCENARIOS[name]
    if name == "tables":  # the run's shared embedded server (conftest): no JVM start of its own
        flags = [*flags, "--spark-dir", request.getfixturevalue("spark_server")["store"]]
    p = _run([sys.executable, f"benchmarks/bench_{name}.py", "--quick", "--no-wait", *flags], timeout=400)
    out = p.stdout
    assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{out[-3000:]}\n--- stderr\n{p.stderr[-3000:]}"
    assert not out.lstrip().startswith(f"**bench_{name} skipped"), out  # it ran (a reference row may still skip)
    assert "|---|" in out, out
    for text in expected:
        assert text in out, f"{text!r} missing from the report:\n{out}"
    if name in ("loader", "checkpoint") and not os.access("/tmp/refvenv/bin/python", os.X_OK):
        assert "reference rows" in out and "skipped" in out, out  # says why the reference is absent


@pytest.mark.timeout(120)
def test_suite_runs_scenarios_and_summarises():
    p = _run([sys.executable, "-m", "benchmarks", "--quick", "--no-wait", "--only", "confined"], timeout=100)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "### confined open vs plain open" in p.stdout
    assert "## Summary" in p.stdout and "| confined | ok |" in p.stdout, p.stdout
