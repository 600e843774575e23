"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""
from __future__ import annotations

import importlib.util
import statistics
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
