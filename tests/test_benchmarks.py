"""The benchmarks' quick mode runs for real in the suite, so the scripts cannot rot.

Each scenario runs through its command-line entry point (``benchmarks/bench_<name>.py --quick
--no-wait``) in a subprocess, on real FUSE volumes (fusevol) and a real Spark Connect server; the test checks
that it exits 0 and prints its report tables. No figure is asserted: benchmarks never assert speed
in the suite. ``--no-wait`` keeps a busy machine from stretching a run (no quiet-machine waits, no
repeats); the loader runs one configuration per kind over 96 small files, the checkpoint a 4 MB state
and the tables a 2,000-row table on the run's shared Spark server (``test_benchmarks_tables``, with
the Spark tests): the sizes are the smallest that still take every path of each script, so the
time is the scripts' child processes (interpreter, torch and pyspark imports, FUSE mounts). Two
scripts run at a time (``LANES``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# one worker runs the module under pytest-xdist: its fixture starts every script once (the tables
# script runs in test_benchmarks_tables, with the Spark tests)
pytestmark = pytest.mark.xdist_group("bench")

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
        [
            "--configs",
            "ref:default,torch:8,copy,pool,spdl,air:default,air:default+half",
            "--files",
            "96",
            "--size-kib",
            "32",
        ],
        ["## bench_loader", "| loader | setup s", "`torch:8`", "`air:default`", "`copy`", "`pool`", "epoch-2 hits"],
    ),
    "checkpoint": (  # a 4 MB state: still several tensors and files per checkpoint, a child process per method
        ["--sizes-mb", "4"],
        [
            "## bench_checkpoint",
            "| method | save MB/s",
            "air_magics `UCVolumeWriter`/`Reader`",
            "async blocked <= 20% of a synchronous save",
            "the next background-staged save (the stager's buffers reused)",
            "measurements ok",
        ],
    ),
    "tables": (  # 2,000 rows: two batches of the dataset part; the time is the children's imports, not the rows
        ["--rows", "2000"],
        ["## bench_tables", "| rows | method |", "air-export-client", "overhead at 2,000 rows"],
    ),
    "delta": (  # 20,000 rows in 2 files: every method and the target line, in seconds
        ["--rows", "20000", "--files", "2"],
        ["## bench_delta", "| source | construction ms", "| delta |", "| plain folder |", "UCDataset over Delta vs"],
    ),
    "serialize": (  # 8 MB into /dev/shm, one rep: no volume, no child process
        [],
        [
            "## bench_serialize",
            "| method | s (min-max) |",
            "torch `FileSystemWriter(thread_count=8)`",
            "`DirectVolumeFS`",
            "Where the CPU goes",
            "without zip CRC32",
            "xxh3-128 of every tensor",
        ],
    ),
    "scale": (  # 2,000 files, one rep: every measurement in its own process, the ls in an IPython shell
        [],
        [
            "## bench_scale",
            "### 2,000 files",
            "ceiling: `os.walk` + join + sort",
            "`%air_volume ls -r`",
            "memory B/file",
            "### Epochs, `pack` and eviction",
            "| cold epoch (`for p in UCVolumeDataset(folder)`, listing included) |",
            "| restart epoch: a new process over the warm cache |",
            "| eviction at a limit of half",
        ],
    ),
    "scale_fuse": (  # 1,000 files at 2 ms, one rep: every measurement on a fresh mount
        [],
        [
            "## bench_scale_fuse",
            "| ceiling: `os.walk` + join + sort |",
            "| first item, `shuffle=True` |",
            "| cold epoch (`for p in UCVolumeDataset(folder)`, listing included) |",
            "| restart epoch: a new process over the warm cache |",
        ],
    ),
    "s3_checkpoint": (  # 16 MiB, one rep on a real S3 server (SeaweedFS): each row's save and restore in a process
        [],
        [
            "## bench_s3_checkpoint",
            "| MiB | row | save s | x ceiling | save requests |",
            "`torch.save`+`put_file` / `get_file`+`torch.load`",
            "| 16 | parallel multipart |",
            "ours: `CheckpointManager.save` / `.load`",
            "Requests of our saves, by S3 operation",
        ],
    ),
    "s3": (  # 100 files and 50,000 Parquet rows, one rep, loopback, on a real S3 server (SeaweedFS): each row in its own process
        [],
        [
            "## bench_s3",
            "| s3fs cat 64 (ceiling) |",
            "| DataLoader (default) |",
            "| air_magics.copy |",
            "| UCDataset(batch_size=1000) (ours) |",
        ],
    ),
    "shards_mosaic": (  # 64 files x 8 KiB at 1 ms; mosaicml-streaming rows only where its venv is
        [],
        ["## bench_shards_mosaic", "| air_magics `pack` |", "| air_magics, members by offset |", "read ceiling"],
    ),
    "s3_packed": (  # 96 files x 32 KiB in 1 MiB shards on a SeaweedFS server, one rep; mosaic where its venv is
        [],
        [
            "## bench_s3_packed",
            "| method | first item s | epoch s (min-max) | x ceiling | items/s |",
            "s3fs cat 64 of the shard objects (ceiling)",
            'ours: `output="bytes"`',
            "ours: `DataLoader` (defaults), paths",
        ],
    ),
}
NEEDS_FUSE = {"copy", "loader", "checkpoint", "shards_mosaic", "stages", "scale_fuse"}


# The scripts run two at a time, each lane in this order, started by the module's first test: each
# script is mostly its child processes' start-up (interpreters, imports, mounts) and a 2-core machine
# has room for two. The loader and the checkpoint share a lane because they must not overlap: the
# checkpoint's reference run links /Volumes, which it refuses while a loader benchmark runs. Both
# lanes start at once.
LANES = (
    ("loader", "checkpoint", "shards_mosaic", "hotpath", "scale_fuse", "s3"),
    ("copy", "confined", "stages", "delta", "serialize", "scale", "s3_checkpoint", "s3_packed"),
)
HERE = [n for n in SCENARIOS if n != "tables"]  # (tables: test_benchmarks_tables, on the Spark tests' worker)
assert sorted(n for lane in LANES for n in lane) == sorted(HERE)


def _run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run *argv*; past *timeout*, every process of its session (the script, its DataLoader workers)
    prints its threads' stacks (faulthandler, on SIGABRT) and the test fails with them: a hang that
    shows up once in twenty runs must be readable from the one CI log that has it."""
    env = dict(env if env is not None else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    env["PYTHONFAULTHANDLER"] = "1"
    p = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGABRT)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        raise AssertionError(
            f"{' '.join(argv[1:])} still running after {timeout:.0f} s; its stacks:\n{err[-20000:]}\n"
            f"its output:\n{out[-3000:]}"
        ) from None
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _unavailable(name: str) -> str | None:
    """Why *name* cannot run here (the test skips with it), or None."""
    from benchmarks.harness import fusevol

    if name in NEEDS_FUSE and (why := fusevol.unavailable() or fusevol.unavailable("c")):
        return why  # the benchmarks count the server's CPU: only the C engine's is fair
    return None


class _Runs:
    """The selected scripts' runs, two lanes in background threads; :meth:`result` waits for one."""

    def __init__(self, names: set[str], base: Path) -> None:
        self.done: dict[str, threading.Event] = {n: threading.Event() for n in names}
        self.out: dict[str, subprocess.CompletedProcess | BaseException] = {}
        self.base = base
        self.threads = [threading.Thread(target=self._lane, args=(lane,), daemon=True) for lane in LANES]

    def _lane(self, lane: tuple[str, ...]) -> None:
        for name in lane:
            if name in self.done and name not in self.out:
                try:
                    self.out[name] = self._run(name)
                except BaseException as exc:  # reported by the test of that script
                    self.out[name] = exc
                self.done[name].set()

    def _run(self, name: str) -> subprocess.CompletedProcess:
        return run_script(name, SCENARIOS[name][0], self.base / name)

    def result(self, name: str) -> subprocess.CompletedProcess:
        assert self.done[name].wait(timeout=800), f"bench_{name} still running after 800 s"
        out = self.out[name]
        if isinstance(out, BaseException):
            raise out
        return out


def run_script(name: str, flags: list[str], home: Path) -> subprocess.CompletedProcess:
    """``benchmarks/bench_<name>.py --quick --no-wait FLAGS`` with its own AIR_HOME *home* (nothing
    takes /Volumes for a mount), failing with its stacks past 400 s."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AIR_VOLUMES_ROOT")}
    env.update(AIR_HOME=str(home), AIR_VOLUMES_MOUNT=str(home / "no-such-mount"))
    argv = [sys.executable, f"benchmarks/bench_{name}.py", "--quick", "--no-wait", *flags]
    return _run(argv, 400, env)


@pytest.fixture(scope="module")
def smoke_runs(request, tmp_path_factory):
    """Starts every selected script that can run here (two at a time, see LANES); yields the :class:`_Runs`."""
    selected = {
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_quick_benchmark_runs_and_reports"
        and item.module is request.module
    }
    names = {n for n in selected if _unavailable(n) is None}
    runs = _Runs(names, tmp_path_factory.mktemp("bench-smoke"))
    for t in runs.threads:
        t.start()
    yield runs
    for t in runs.threads:
        t.join(timeout=800)


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.fuse] if n in NEEDS_FUSE else []) for n in HERE],
)
def test_quick_benchmark_runs_and_reports(name, smoke_runs):
    """One benchmark script end to end on real FUSE volumes or the shared Spark server: 5 s to a minute
    each on a 2-core machine (real child processes, torch imports, a FUSE server), two at a time
    (:func:`smoke_runs`): the first test of the module waits for most of them, about two minutes."""
    if why := _unavailable(name):
        pytest.skip(why)
    check_report(name, smoke_runs.result(name))


def check_report(name: str, p: subprocess.CompletedProcess) -> None:
    """Script *name* exited 0 and printed its report with every text ``SCENARIOS`` expects."""
    expected = SCENARIOS[name][1]
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
