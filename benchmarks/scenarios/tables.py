"""Benchmark: air_magics table reads and exports against the plain Spark Connect calls.

On the embedded local Spark Connect server (started once; every measurement runs in a fresh client
process, ``benchmarks.scenarios.tables_child``, so its peak memory is its own), for tables of 1M and 5M
rows (an int, a float and a short string per row), side by side with interleaved repetitions:

  plain-read     spark.table(name).toPandas()
  air-read       air_magics.tables.read_table(name)
  plain-export   spark.table(name).write.parquet(dir) + datasets.load_dataset("parquet", ...)
  air-export     air_magics.tables.export_table(name, dir) (server writes) + ExportResult.load_dataset()
  air-export-client  the same with via="client": Arrow batches streamed to this process and written here

Reports median seconds and median peak RSS of the client process (ru_maxrss), and the overhead of
each air_magics path over its plain counterpart. Targets: <= 10% time overhead; the export keeps
client memory flat (5M rows needs about the same client memory as 1M). Skipped with a printed reason
where pyspark, datasets or Java is missing.

A second part (``benchmarks/scenarios/tables_dataset.py``) streams the same tables into batches with
the table dataset ``UCDataset``, the Hugging Face route and a plain pyarrow scan.

    .venv/bin/python benchmarks/bench_tables.py                   # both parts, 1M and 5M rows, 3 reps
    .venv/bin/python benchmarks/bench_tables.py --part dataset    # the table dataset part only
    .venv/bin/python benchmarks/bench_tables.py --quick           # 200k rows, 1 rep
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchmarks.harness.mounts import REPO
from benchmarks.harness.report import log, skipped, table, target, verdict
from benchmarks.harness.runner import (
    add_common_args,
    med,
    raise_on_sigterm,
    resolve_waits,
    rotated,
)
from benchmarks.harness.sampling import wait_quiet
from benchmarks.scenarios.tables_dataset import report_dataset, run_dataset

__all__ = ["METHODS", "main", "tables_unavailable"]

METHODS = ["plain-read", "air-read", "plain-export", "air-export", "air-export-client"]


def tables_unavailable() -> str | None:
    """Why the embedded Spark Connect server cannot run here, or None."""
    missing = [m for m in ("pyspark", "datasets", "pandas", "pyarrow") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{', '.join(missing)} not installed (pip install -e '.[test]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java not found (the embedded Spark Connect server needs Java 17)"
    return None


def make_tables(sizes: list[int]) -> None:
    from air_magics.tables import get_session

    s = get_session()
    s.spark.sql("CREATE DATABASE IF NOT EXISTS bench__t")
    for n in sizes:
        if s.spark.catalog.tableExists(f"spark_catalog.bench__t.rows_{n}"):
            continue
        df = s.spark.range(n).selectExpr("id", "rand(7) AS x", "concat('s', cast(id % 1000 AS string)) AS s")
        df.write.mode("overwrite").saveAsTable(f"spark_catalog.bench__t.rows_{n}")
        log(f"made table rows_{n}")


def run(a: argparse.Namespace, sizes: list[int], home: str) -> dict[tuple[str, int], list[dict]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    results: dict[tuple[str, int], list[dict]] = {}
    for rep in range(a.reps):
        for n in sizes:
            for m in rotated(METHODS, rep):
                out = os.path.join(home, "plain-out") if m == "plain-export" else f"/Volumes/bench/t/exports/{m}_{n}"
                shutil.rmtree(os.path.join(home, "hf-cache"), ignore_errors=True)
                if a.quiet_wait > 0:
                    wait_quiet(a.quiet_below, a.quiet_wait)
                p = subprocess.run(
                    [sys.executable, "-m", "benchmarks.scenarios.tables_child", m, str(n), out],
                    capture_output=True,
                    text=True,
                    env=env,
                )
                if p.returncode:
                    raise SystemExit(f"{m} {n} failed:\n{p.stderr[-3000:]}")
                r = json.loads(p.stdout.strip().splitlines()[-1])
                results.setdefault((m, n), []).append(r)
                log(f"rep {rep} {m:18} {n:>9,} rows: {r['seconds']:.2f} s, peak {r['peak_rss_mb']:.0f} MB")
    return results


def report(results: dict[tuple[str, int], list[dict]], sizes: list[int], reps: int) -> str:
    def m_(m: str, n: int, key: str) -> float:
        return med(r[key] for r in results[(m, n)])

    out = [
        f"## bench_tables: embedded Spark Connect server, {reps} interleaved reps, medians, client = a fresh process\n"
    ]
    rows = []
    for n in sizes:
        for m in METHODS:
            base = "plain-read" if "read" in m else "plain-export"
            over = "" if m.startswith("plain") else f"{(m_(m, n, 'seconds') / m_(base, n, 'seconds') - 1) * 100:+.0f}%"
            rows.append(
                [
                    f"{n:,}",
                    m,
                    f"{m_(m, n, 'seconds'):.2f}",
                    over,
                    f"{m_(m, n, 'export_s'):.2f}" if "export" in m else "",
                    f"{m_(m, n, 'export_mb'):.0f}" if "export" in m else "",
                    f"{m_(m, n, 'peak_rss_mb'):.0f}",
                ]
            )
    out.append(
        table(
            [
                "rows",
                "method",
                "median s (total)",
                "overhead vs plain",
                "export step s",
                "peak client RSS after export, MB",
                "peak client RSS total, MB",
            ],
            rows,
        )
    )
    out.append("")
    for n in sizes:
        for m in ("air-read", "air-export"):
            base = "plain-read" if "read" in m else "plain-export"
            x = m_(m, n, "seconds") / m_(base, n, "seconds") - 1
            out.append(f"- {target(f'{m} overhead at {n:,} rows', f'{x * 100:+.0f}%', '<= +10%', x <= 0.10)}")
    if len(sizes) > 1:
        a, b = sizes[0], sizes[-1]
        for m in METHODS:
            key = "export_mb" if "export" in m else "peak_rss_mb"
            ma, mb = m_(m, a, key), m_(m, b, key)
            what = "export step" if "export" in m else "read"
            line = f"{m}: peak client memory of the {what}: {ma:.0f} MB at {a:,} rows, {mb:.0f} MB at {b:,} rows ({mb / ma:.2f}x)"
            if m.startswith("air-export"):
                line += f" (target flat, <= 1.10x: {verdict(mb / ma <= 1.10)})"
            out.append(f"- {line}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="bench_tables.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", help="comma-separated table sizes (default 1000000,5000000; --quick 200000)")
    ap.add_argument("--reps", type=int, help="interleaved repetitions (default 3; --quick 1)")
    ap.add_argument("--home", default=None, help="AIR_HOME to use (default: a temp dir, removed at the end)")
    ap.add_argument(
        "--spark-dir",
        default=None,
        help="the embedded Spark store whose server to use (started if needed) and leave running, as the "
        "test suite's smoke run shares its one server (default: this run's own, stopped at the end)",
    )
    ap.add_argument(
        "--part",
        choices=["all", "io", "dataset"],
        default="all",
        help="io: reads and exports; dataset: UCDataset vs HF vs pyarrow; all: both (default)",
    )
    add_common_args(ap, quiet_wait=0.0, quiet_below=0.15)
    a = ap.parse_args(argv)
    resolve_waits(a)
    sizes = [int(x) for x in (a.rows or ("200000" if a.quick else "1000000,5000000")).split(",")]
    a.reps = a.reps or (1 if a.quick else 3)
    if reason := tables_unavailable():
        print(skipped("bench_tables", reason))
        return 0
    home = a.home or tempfile.mkdtemp(prefix="air-bench-tables-")
    os.environ["AIR_HOME"] = home
    for k in ("SPARK_REMOTE", "AIR_SPARK_DIR", "AIR_VOLUMES_ROOT"):  # this run's own server and volumes only
        os.environ.pop(k, None)
    if a.spark_dir:
        os.environ["AIR_SPARK_DIR"] = a.spark_dir
    os.environ["HF_DATASETS_CACHE"] = os.path.join(home, "hf-cache")
    from air_magics.tables import stop_server
    from air_magics.volumes import VolumeStore

    raise_on_sigterm()  # a stopped run still stops its server
    try:
        VolumeStore.shared().create("bench.t.exports", exist_ok=True)
        make_tables(sizes)  # also starts the embedded server, shared by every child via AIR_HOME
        results = run(a, sizes, home) if a.part in ("all", "io") else None
        ds_results = run_dataset(a, sizes, home) if a.part in ("all", "dataset") else None
    finally:
        if not a.spark_dir:
            stop_server()
        if not a.home:
            shutil.rmtree(home, ignore_errors=True)
    if results is not None:
        print(report(results, sizes, a.reps))
    if ds_results is not None:
        print("\n" + report_dataset(ds_results, sizes, a.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
