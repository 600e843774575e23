"""``python -m benchmarks``: every scenario one after the other, each in its own process.

A process per scenario keeps what one scenario sets (``AIR_HOME``, signal handlers, a Spark server)
away from the next, and lets a crash end only its own scenario. Each scenario's report streams through
to stdout as it comes; a summary table (exit status, seconds, skip reasons) closes the run. The exit
status is 1 when any scenario failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time

from benchmarks.scenarios import SCENARIOS

from .mounts import REPO
from .report import table

__all__ = ["main"]


def _run_one(name: str, flags: list[str], timeout: float | None) -> tuple[int, float, list[str]]:
    """Run scenario *name*; its exit status, seconds and the skip lines it printed."""
    print(f"\n<!-- scenario {name}: python -m {SCENARIOS[name]} {' '.join(flags)} -->", flush=True)
    t0 = time.monotonic()
    skips: list[str] = []
    proc = subprocess.Popen(
        [sys.executable, "-m", SCENARIOS[name], *flags], cwd=str(REPO), stdout=subprocess.PIPE, text=True, bufsize=1
    )
    # past the limit: SIGTERM, which every scenario turns into KeyboardInterrupt (it unmounts and cleans up)
    watchdog = threading.Timer(timeout, proc.terminate) if timeout else None
    if watchdog:
        watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            if "skipped**:" in line:
                skips.append(line.strip().replace("**", ""))
        rc = proc.wait()
    finally:
        if watchdog:
            watchdog.cancel()
    if timeout and time.monotonic() - t0 >= timeout:
        skips.append(f"stopped after {timeout:.0f} s")
    return rc, time.monotonic() - t0, skips


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="each scenario's smoke run (tiny data, 1 rep, 2 ms)")
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="never wait for a quiet machine or for other benchmarks, never repeat a measurement",
    )
    p.add_argument("--only", help=f"comma-separated subset of {','.join(SCENARIOS)} (default all, in that order)")
    p.add_argument("--timeout", type=float, default=None, help="seconds allowed per scenario (default: no limit)")
    a = p.parse_args(argv)
    names = [n.strip() for n in (a.only or ",".join(SCENARIOS)).split(",") if n.strip()]
    if unknown := [n for n in names if n not in SCENARIOS]:
        p.error(f"unknown scenario(s) {unknown}; choose from {','.join(SCENARIOS)}")
    flags = (["--quick"] if a.quick else []) + (["--no-wait"] if a.no_wait else [])
    print(f"# air_magics benchmarks ({'quick' if a.quick else 'full'}): {', '.join(names)}", flush=True)
    rows, failed = [], 0
    for name in names:
        rc, secs, skips = _run_one(name, flags, a.timeout)
        failed += rc != 0
        rows.append([name, "ok" if rc == 0 else f"FAILED (exit {rc})", f"{secs:.0f}", "; ".join(skips) or "-"])
    print("\n## Summary\n")
    print(table(["scenario", "result", "seconds", "skipped or stopped"], rows))
    return 1 if failed else 0
