"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""
from __future__ import annotations

import importlib.util
import os
import statistics
import time
from pathlib import Path


def load_slowfs(path: Path):
    """The slowfs tool (../shared/tools/slowfs.py), loaded by path."""
    spec = importlib.util.spec_from_file_location("slowfs", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load slowfs from {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def med(xs):
    """Median ignoring NaNs (NaN if nothing is left)."""
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt(x: float, spec: str = ".2f") -> str:
    """A number for a table cell, ``-`` for NaN."""
    return "-" if x != x else format(x, spec)


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
