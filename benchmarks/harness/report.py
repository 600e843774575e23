"""Markdown output shared by the scenarios: number cells, ratios, tables and target verdicts.

Progress goes to stderr (``log``) and the report to stdout, so ``> report.md`` keeps only the report.
Every target line ends in MET or NOT MET so a reader (or ``grep``) finds the verdicts at once.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["fmt", "git_describe", "log", "ratio", "skipped", "table", "target", "verdict"]


def log(msg: str) -> None:
    """A progress line on stderr, flushed at once (the run may take an hour)."""
    print(msg, file=sys.stderr, flush=True)


def fmt(x: float, spec: str = ".2f") -> str:
    """A number for a table cell, ``-`` for NaN."""
    return "-" if x != x else format(x, spec)


def ratio(x: float, y: float) -> str:
    """``x / y`` as ``1.23x``, ``-`` when either is NaN or *y* is 0."""
    return "-" if x != x or y != y or y == 0 else f"{x / y:.2f}x"


def verdict(ok: bool) -> str:
    """The word every target line ends in."""
    return "MET" if ok else "NOT MET"


def target(what: str, measured: str, goal: str, ok: bool) -> str:
    """One target line: ``what: measured (target goal: MET)``."""
    return f"{what}: {measured} (target {goal}: {verdict(ok)})"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A markdown table; cells are turned into text as they are."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def skipped(scenario: str, reason: str) -> str:
    """The line a scenario (or part of one) prints instead of its table when it cannot run here."""
    return f"**{scenario} skipped**: {reason}"


def git_describe(repo: Path) -> str:
    """The commit measured, noting uncommitted changes in the package."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "air_magics"], capture_output=True, text=True
        ).stdout.strip()
        return (head or "unknown") + (" with uncommitted changes in air_magics/" if dirty else "")
    except OSError:
        return "unknown"
