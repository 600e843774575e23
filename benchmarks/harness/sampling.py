"""Facts about processes and the machine that make a measurement on a shared 2-core box trustworthy.

How busy the machine is (``/proc/stat``), the CPU seconds and PSS of a process tree (psutil), waits
until the machine is quiet or another benchmark script has finished, and a low-priority sampler
thread that watches a measured process tree while it runs.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import threading
import time

__all__ = [
    "BENCH_PATTERNS",
    "TreeSampler",
    "cpu_busy",
    "machine_busy_seconds",
    "other_bench_pids",
    "proc_cpu",
    "self_cpu",
    "tree_pss",
    "wait_for_benches",
    "wait_quiet",
]

#: scenario -> ``pgrep -f`` pattern matching a running benchmark of that scenario (old script name or module)
BENCH_PATTERNS = {
    "copy": r"bench_copy\.py|benchmarks\.scenarios\.copy( |$)",
    "loader": r"bench_loader\.py|benchmarks\.scenarios\.loader( |$)",
    "checkpoint": r"bench_checkpoint\.py|benchmarks\.scenarios\.checkpoint( |$)",
    "tables": r"bench_tables\.py|benchmarks\.scenarios\.tables( |$)",
}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cpu_ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # total, idle + iowait


def cpu_busy(interval: float = 0.5) -> float:
    """Fraction of all CPUs busy over *interval* seconds (from /proc/stat); 0.0 where unavailable."""
    try:
        t0, i0 = _cpu_ticks()
        time.sleep(interval)
        t1, i1 = _cpu_ticks()
    except OSError:
        return 0.0
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all CPUs; idle and iowait excluded)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """User + system seconds of *pid* and its reaped children; NaN when it cannot be read."""
    import psutil

    try:
        ct = psutil.Process(pid).cpu_times()
        return ct.user + ct.system + ct.children_user + ct.children_system
    except psutil.Error:
        return float("nan")


def self_cpu() -> float:
    """User + system seconds of this process (the harness itself, to subtract from the machine's)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def tree_pss(root_pid: int) -> tuple[int, int]:
    """Sum of PSS over *root_pid* and all its descendants, and how many processes were read."""
    import psutil

    try:
        root = psutil.Process(root_pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0, 0
    total = n = 0
    for p in procs:
        try:
            total += p.memory_full_info().pss
            n += 1
        except psutil.Error:
            pass
    return total, n


def _own_lineage() -> set[int]:
    import psutil

    return {os.getpid(), *(p.pid for p in psutil.Process().parents())}


def other_bench_pids(scenarios: tuple[str, ...] | list[str]) -> list[int]:
    """PIDs of running benchmarks of *scenarios* (``pgrep -f``), minus this process and its ancestors."""
    if not scenarios:
        return []
    pattern = "|".join(f"({BENCH_PATTERNS[s]})" for s in scenarios)
    try:
        out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return []
    mine = _own_lineage()
    return [int(x) for x in out.split() if x.strip().isdigit() and int(x) not in mine]


def wait_for_benches(scenarios: tuple[str, ...] | list[str], max_wait: float, poll: float = 5.0) -> list[int]:
    """Wait (up to *max_wait* s) while another benchmark of *scenarios* runs; the PIDs still running."""
    deadline, said = time.monotonic() + max_wait, False
    while (pids := other_bench_pids(scenarios)) and time.monotonic() < deadline:
        if not said:
            _log(f"  (another benchmark is running: pids {pids}; waiting for it to finish)")
            said = True
        time.sleep(poll)
    if pids and max_wait > 0:
        _log(f"  (benchmark pids {pids} still running after {max_wait:.0f} s; measuring anyway)")
    return pids


def wait_quiet(below: float, max_wait: float, interval: float = 0.5) -> float:
    """Wait (up to *max_wait* s) until the CPUs are less than *below* busy; the last busy fraction.

    With ``max_wait <= 0`` it only measures, so a smoke run still reports how busy the machine was.
    """
    busy = cpu_busy(interval)
    deadline, said = time.monotonic() + max_wait, False
    while max_wait > 0 and busy > below and time.monotonic() < deadline:
        if not said:
            _log(f"  (machine {busy:.0%} busy; waiting up to {max_wait:.0f} s for it to calm down)")
            said = True
        time.sleep(2)
        busy = cpu_busy(interval)
    return busy


class TreeSampler(threading.Thread):
    """Watches a measured process tree from a thread at nice 19, so the measured processes keep the CPUs.

    Every *pss_interval* s (None: never) it sums the tree's PSS; every 2 s it notes other benchmarks of
    *watch* that run meanwhile. Reading one process's PSS costs the kernel a page-table walk (about
    2.4 ms for a process that imported torch), so a sweep over 49 processes takes about 0.1 s; the
    sampler then simply runs less often.
    """

    def __init__(self, pid: int, pss_interval: float | None, watch: tuple[str, ...] = ()) -> None:
        super().__init__(name="tree-sampler", daemon=True)
        self.pid, self.pss_interval, self.watch = pid, pss_interval, watch
        self.samples: list[tuple[float, int, int]] = []  # (monotonic time, PSS bytes, processes)
        self.others_seen: set[int] = set()
        self._halt = threading.Event()

    def run(self) -> None:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # this thread only (Linux)
        next_check = 0.0
        period = self.pss_interval if self.pss_interval else 0.5
        while not self._halt.is_set():
            t = time.monotonic()
            if self.watch and t >= next_check:
                self.others_seen.update(other_bench_pids(self.watch))
                next_check = t + 2.0
            if self.pss_interval:
                pss, n = tree_pss(self.pid)
                if n:
                    self.samples.append((t, pss, n))
            self._halt.wait(max(0.0, period - (time.monotonic() - t)))

    def finish(self) -> list[tuple[float, int, int]]:
        """Stop sampling; the samples taken."""
        self._halt.set()
        self.join()
        return self.samples
