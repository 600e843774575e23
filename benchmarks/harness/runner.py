"""How a benchmark repeats and isolates its measurements.

- Repetitions are interleaved: each rep runs every method once, in an order rotated by one per rep,
  so slow drifts of a shared machine spread over all methods; reports use medians.
- A measured child process runs in its own session with its own environment; the harness counts its
  CPU (``wait4``), the volume server's, and what the rest of the machine used meanwhile. A measurement
  that the rest of the machine disturbed is repeated (``--retries``), the last attempt kept.
- Every scenario takes the same waiting flags; ``--quick`` caps the waits, ``--no-wait`` drops them
  (the test suite's smoke runs).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .mounts import REPO
from .report import log
from .sampling import TreeSampler, machine_busy_seconds, proc_cpu, self_cpu

__all__ = [
    "ChildRun",
    "add_common_args",
    "child_env",
    "disturbance",
    "interleaved",
    "measure_with_retries",
    "med",
    "raise_on_sigterm",
    "resolve_waits",
    "rotated",
    "run_child",
]

T = TypeVar("T")
R = TypeVar("R")

#: --quick caps these (seconds, repeats): a smoke run should not take the machine for long; the
#: full-run defaults are each scenario's own
_WAIT_QUICK = {"quiet_wait": 15.0, "bench_wait": 60.0, "retries": 1}


def med(xs: Iterable[float]) -> float:
    """Median ignoring NaNs (NaN if nothing is left)."""
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def rotated(items: Sequence[T], rep: int) -> list[T]:
    """*items* in the order of repetition *rep*: rotated left by one per rep."""
    k = rep % len(items) if items else 0
    return list(items[k:]) + list(items[:k])


def interleaved(reps: int, items: Sequence[T]) -> Iterator[tuple[int, T]]:
    """(rep, item) for every rep and item, the items' order rotated by one each rep."""
    for rep in range(reps):
        for item in rotated(items, rep):
            yield rep, item


def add_common_args(
    p: argparse.ArgumentParser,
    *,
    quiet_wait: float,
    quiet_below: float,
    bench_wait: float | None = None,
    max_foreign: float | None = None,
    retries: int | None = None,
) -> None:
    """The flags every scenario shares; those given as None are not offered by that scenario."""
    p.add_argument("--quick", action="store_true", help="small smoke run (see the scenario's description)")
    p.add_argument(
        "--quiet-wait",
        type=float,
        default=None,
        help=f"before each measurement wait up to this many seconds for the CPUs to be idle; 0 = don't "
        f"(default {quiet_wait:g}; --quick {min(quiet_wait, _WAIT_QUICK['quiet_wait']):g})",
    )
    p.add_argument(
        "--quiet-below",
        type=float,
        default=quiet_below,
        help=f"busy fraction counted as idle (default {quiet_below:g})",
    )
    if bench_wait is not None:
        p.add_argument(
            "--bench-wait",
            type=float,
            default=None,
            help=f"wait up to this many seconds while another benchmark script runs (default {bench_wait:g}; "
            f"--quick {min(bench_wait, _WAIT_QUICK['bench_wait']):g})",
        )
    if max_foreign is not None:
        p.add_argument(
            "--max-foreign",
            type=float,
            default=max_foreign,
            help=f"repeat a measurement during which other processes used more than this many cores on "
            f"average (default {max_foreign:g})",
        )
    if retries is not None:
        p.add_argument(
            "--retries",
            type=int,
            default=None,
            help=f"how often a disturbed measurement is repeated (default {retries}; "
            f"--quick {min(retries, _WAIT_QUICK['retries'])})",
        )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="never wait for a quiet machine or other benchmarks and never repeat (smoke runs in the test suite)",
    )
    p.set_defaults(_full_waits={"quiet_wait": quiet_wait, "bench_wait": bench_wait, "retries": retries})


def resolve_waits(a: argparse.Namespace) -> None:
    """Fill the waiting flags left unset: the full-run defaults, capped under --quick, zero under --no-wait."""
    for name, full in a._full_waits.items():
        if full is None:
            continue
        if a.no_wait:
            setattr(a, name, 0)
        elif getattr(a, name) is None:
            setattr(a, name, min(full, _WAIT_QUICK[name]) if a.quick else full)
    del a._full_waits


def measure_with_retries(once: Callable[[int], R], retries: int) -> R:
    """``once(attempt)`` until it is not disturbed, at most 1 + *retries* times; the last result.

    A result needs ``ok`` and ``disturbed`` attributes; a failed measurement is not repeated (a failure
    is a finding, not noise).
    """
    res = once(1)
    for attempt in range(2, retries + 2):
        if not (res.ok and res.disturbed):
            break
        log(f"    disturbed ({res.disturbed}); measuring again")
        res = once(attempt)
    return res


@dataclass
class ChildRun:
    """What the harness saw of one measured child process."""

    returncode: int
    wall_s: float
    child_cpu_s: float = float("nan")  # the child's whole tree, whole life (wait4 rusage)
    peak_rss_mib: float = float("nan")  # ru_maxrss of the largest process in the tree
    server_cpu_s: float = float("nan")  # the FUSE volume's server meanwhile
    foreign_cores: float = float("nan")  # CPU used meanwhile by anything else, in cores
    samples: list = field(default_factory=list)  # TreeSampler's (time, PSS, processes)
    others_seen: list = field(default_factory=list)  # other benchmark scripts alive meanwhile
    error: str = ""


def child_env(run_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment minus air_magics/reference settings, with a fresh TMPDIR and AIR_HOME.

    ``PYTHONPATH`` is the working tree: the child module lives there, and air_magics is imported from it
    even if the venv holds another install.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIR_", "MLFLOW_", "SGC_")) and k != "PYTHONPATH"}
    env.update(
        TMPDIR=str(run_dir / "tmp"),
        AIR_HOME=str(run_dir / "air_home"),
        PYTHONPATH=str(REPO),
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
        **extra,
    )
    return env


def run_child(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log_path: Path,
    timeout: float,
    server_pid: int | None = None,
    pss_interval: float | None = None,
    watch: tuple[str, ...] = (),
) -> ChildRun:
    """Run *argv* to its end (killed after *timeout* s) in its own session; what it cost and what else ran.

    Foreign cores = (machine busy seconds - the child tree - the volume server - this harness) / wall.
    """
    with open(log_path, "wb") as logf:
        t0, busy0 = time.monotonic(), machine_busy_seconds()
        srv0 = proc_cpu(server_pid) if server_pid else 0.0
        self0 = self_cpu()
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=str(cwd),
            stdin=subprocess.DEVNULL,
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        sampler = TreeSampler(proc.pid, pss_interval, watch)
        sampler.start()
        status = rusage = None
        error = ""
        deadline = time.monotonic() + timeout
        try:
            while True:
                pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    status, rusage = st, ru
                    break
                if time.monotonic() > deadline:
                    os.killpg(proc.pid, signal.SIGKILL)
                    _, status, rusage = os.wait4(proc.pid, 0)
                    error = f"timed out after {timeout:.0f} s"
                    break
                time.sleep(0.05)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(proc.pid, 0)
            raise
        finally:
            wall, busy1 = time.monotonic() - t0, machine_busy_seconds()
            srv1 = proc_cpu(server_pid) if server_pid else 0.0
            self1 = self_cpu()
            samples = sampler.finish()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the child's session (a crash may leave workers)
    run = ChildRun(
        os.waitstatus_to_exitcode(status) if status is not None else -9,
        wall,
        samples=samples,
        others_seen=sorted(sampler.others_seen),
        error=error,
    )
    run.server_cpu_s = srv1 - srv0
    if rusage is not None:
        run.child_cpu_s = rusage.ru_utime + rusage.ru_stime
        run.peak_rss_mib = rusage.ru_maxrss / 1024
        ours = run.child_cpu_s + run.server_cpu_s + (self1 - self0)
        run.foreign_cores = max(0.0, (busy1 - busy0) - ours) / max(wall, 1e-3)
    return run


def disturbance(run: ChildRun, max_foreign: float, count_others: bool = True) -> str:
    """Why a measurement is not trusted ('' when it is): other processes' CPU, other benchmarks alive."""
    why = []
    if run.foreign_cores == run.foreign_cores and run.foreign_cores > max_foreign:
        why.append(f"{run.foreign_cores:.2f} cores used by other processes")
    if count_others and run.others_seen:
        why.append(f"another benchmark ran meanwhile (pids {run.others_seen})")
    return "; ".join(why)


def raise_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so finally blocks unmount and remove links."""

    def on_term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
