"""Benchmark part: the table dataset (``UCDataset``) against the Hugging Face route and a plain pyarrow scan.

Run by ``benchmarks/bench_tables.py`` (``--part dataset`` for this part alone) on the tables it makes
in the embedded store (1M and 5M rows: an int, a float and a short string). Each measurement is a
fresh process (``benchmarks.scenarios.tables_dataset_child``), so peak RSS and bytes written are the
method's own; methods are interleaved per repetition. Targets (issue 11): rows/s >= 0.9x the pyarrow
scan and >= 2x the HF route, first batch < 1 s at 5M rows, peak RSS flat from 1M to 5M (<= 1.10x),
no bytes written beyond the cached Parquet (here: 0, the warehouse files are read in place).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

from benchmarks.harness.mounts import REPO
from benchmarks.harness.report import log, table, target
from benchmarks.harness.runner import med, rotated
from benchmarks.harness.sampling import wait_quiet

__all__ = ["DATASET_METHODS", "run_dataset", "report_dataset"]

DATASET_METHODS = ["ucdataset", "pyarrow", "hf"]


def run_dataset(a: argparse.Namespace, sizes: list[int], home: str) -> dict[tuple[str, int], list[dict]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    results: dict[tuple[str, int], list[dict]] = {}
    for rep in range(a.reps):
        for n in sizes:
            for m in rotated(DATASET_METHODS, rep):
                shutil.rmtree(os.path.join(home, "hf-cache"), ignore_errors=True)
                if a.quiet_wait > 0:
                    wait_quiet(a.quiet_below, a.quiet_wait)
                p = subprocess.run(
                    [sys.executable, "-m", "benchmarks.scenarios.tables_dataset_child", m, f"bench.t.rows_{n}"],
                    capture_output=True,
                    text=True,
                    env=env,
                )
                if p.returncode:
                    raise SystemExit(f"{m} {n} failed:\n{p.stderr[-3000:]}")
                r = json.loads(p.stdout.strip().splitlines()[-1])
                if r["rows"] != n:
                    raise SystemExit(f"{m} {n}: {r['rows']} rows, expected {n}")
                results.setdefault((m, n), []).append(r)
                log(
                    f"rep {rep} {m:10} {n:>9,} rows: first batch {r['first_s']:.2f} s, epoch {r['seconds']:.2f} s, "
                    f"peak {r['peak_rss_mb']:.0f} MB, wrote {r['written_mb']:.0f} MB"
                )
    return results


def report_dataset(results: dict[tuple[str, int], list[dict]], sizes: list[int], reps: int) -> str:
    def m_(m: str, n: int, key: str) -> float:
        return med(r[key] for r in results[(m, n)])

    def rate(m: str, n: int) -> float:
        return n / m_(m, n, "seconds")

    out = [
        f"### table dataset: batches of 1,024 rows, one process, {reps} interleaved reps, medians\n",
    ]
    rows = []
    for n in sizes:
        for m in DATASET_METHODS:
            rows.append(
                [
                    f"{n:,}",
                    m,
                    f"{m_(m, n, 'first_s'):.2f}",
                    f"{m_(m, n, 'seconds'):.2f}",
                    f"{rate(m, n):,.0f}",
                    f"{n / max(1e-9, m_(m, n, 'seconds') - m_(m, n, 'first_s')):,.0f}",
                    f"{m_(m, n, 'peak_rss_mb'):.0f}",
                    f"{m_(m, n, 'written_mb'):.0f}",
                    f"{m_(m, n, 'hf_cache_mb'):.0f}",
                ]
            )
    out.append(
        table(
            [
                "rows",
                "method",
                "first batch s",
                "epoch s",
                "rows/s (epoch)",
                "rows/s (after first batch)",
                "peak RSS MB",
                "bytes written MB",
                "HF cache MB",
            ],
            rows,
        )
    )
    out.append("")
    for n in sizes:
        x = rate("ucdataset", n) / rate("pyarrow", n)
        out.append(f"- {target(f'UCDataset vs pyarrow scan at {n:,} rows', f'{x:.2f}x', '>= 0.9x', x >= 0.9)}")
        y = rate("ucdataset", n) / rate("hf", n)
        out.append(f"- {target(f'UCDataset vs HF route at {n:,} rows', f'{y:.2f}x', '>= 2x', y >= 2)}")
        w = m_("ucdataset", n, "written_mb")
        out.append(f"- {target(f'UCDataset bytes written at {n:,} rows', f'{w:.0f} MB', '0 MB', w < 1)}")
    big = sizes[-1]
    f = m_("ucdataset", big, "first_s")
    out.append(f"- {target(f'UCDataset first batch at {big:,} rows', f'{f:.2f} s', '< 1 s', f < 1)}")
    if len(sizes) > 1:
        a, b = sizes[0], sizes[-1]
        for m in DATASET_METHODS:
            ra, rb = m_(m, a, "peak_rss_mb"), m_(m, b, "peak_rss_mb")
            what = f"{m}: peak RSS {ra:.0f} MB at {a:,} rows, {rb:.0f} MB at {b:,} rows"
            if m == "ucdataset":
                out.append(f"- {target(what, f'{rb / ra:.2f}x', 'flat, <= 1.10x', rb / ra <= 1.10)}")
            else:
                out.append(f"- {what} ({rb / ra:.2f}x)")
    return "\n".join(out)
