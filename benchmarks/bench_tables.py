"""Benchmark: air_magics table reads and exports against the plain Spark Connect calls.

On the embedded local Spark Connect server (started once; every measurement runs in a fresh client
process so its peak memory is its own), for tables of 1M and 5M rows (an int, a float and a short
string per row), side by side in one run with interleaved repetitions:

  plain-read     spark.table(name).toPandas()
  air-read       air_magics.tables.read_table(name)
  plain-export   spark.table(name).write.parquet(dir) + datasets.load_dataset("parquet", ...)
  air-export     air_magics.tables.export_table(name, dir) (server writes) + ExportResult.load_dataset()
  air-export-client  the same with via="client": Arrow batches streamed to this process and written here

Reports median seconds and median peak RSS of the client process (ru_maxrss), and the overhead of
each air_magics path over its plain counterpart. Targets: <= 10% time overhead; the export keeps
client memory flat (5M rows needs about the same client memory as 1M).

    .venv/bin/python benchmarks/bench_tables.py             # 1M and 5M rows, 3 reps
    .venv/bin/python benchmarks/bench_tables.py --quick     # 200k rows, 1 rep
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, os, resource, sys, time, glob, shutil
method, rows, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
name = f"bench.t.rows_{rows}"
t0 = time.perf_counter()
if method.startswith("plain"):
    from pyspark.sql import SparkSession
    from air_magics.tables.server import _running
    spark = SparkSession.builder.remote(_running().url).create()
    full = f"spark_catalog.bench__t.rows_{rows}"
    if method == "plain-read":
        n = len(spark.table(full).toPandas())
    else:
        shutil.rmtree(out, ignore_errors=True)
        spark.table(full).write.mode("overwrite").parquet(out)
        export_s, export_mb = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        import datasets
        n = datasets.load_dataset("parquet", data_files=sorted(glob.glob(out + "/*.parquet")), split="train").num_rows
else:
    from air_magics import tables
    if method == "air-read":
        n = len(tables.read_table(name))
    else:
        via = "client" if method == "air-export-client" else "auto"
        r = tables.export_table(name, out, mode="overwrite", via=via)
        export_s, export_mb = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        n = r.load_dataset().num_rows
secs = time.perf_counter() - t0
assert n == rows, (n, rows)
res = {"seconds": secs, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
if "export" in method:
    res.update(export_s=export_s, export_mb=export_mb)
print(json.dumps(res))
'''

METHODS = ["plain-read", "air-read", "plain-export", "air-export", "air-export-client"]


def make_tables(sizes: list[int]) -> None:
    from air_magics.tables import get_session

    s = get_session()
    s.spark.sql("CREATE DATABASE IF NOT EXISTS bench__t")
    for n in sizes:
        if s.spark.catalog.tableExists(f"spark_catalog.bench__t.rows_{n}"):
            continue
        df = s.spark.range(n).selectExpr("id", "rand(7) AS x", "concat('s', cast(id % 1000 AS string)) AS s")
        df.write.mode("overwrite").saveAsTable(f"spark_catalog.bench__t.rows_{n}")
        print(f"made table rows_{n}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="1000000,5000000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--home", default=None, help="AIR_HOME to use (default: a temp dir)")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.reps = "200000", 1
    sizes = [int(x) for x in args.rows.split(",")]
    home = args.home or tempfile.mkdtemp(prefix="air-bench-tables-")
    os.environ["AIR_HOME"] = home
    os.environ.pop("SPARK_REMOTE", None)
    os.environ["HF_DATASETS_CACHE"] = os.path.join(home, "hf-cache")
    from air_magics.volumes import VolumeStore

    VolumeStore().create("bench.t.exports", exist_ok=True)
    make_tables(sizes)  # also starts the embedded server, shared by every child via AIR_HOME
    results: dict[tuple[str, int], list[dict]] = {}
    for rep in range(args.reps):
        for n in sizes:
            order = METHODS[rep % len(METHODS):] + METHODS[:rep % len(METHODS)]
            for m in order:
                out = os.path.join(home, "plain-out") if m == "plain-export" else f"/Volumes/bench/t/exports/{m}_{n}"
                shutil_home = os.path.join(home, "hf-cache")
                subprocess.run(["rm", "-rf", shutil_home])
                p = subprocess.run([sys.executable, "-c", CHILD, m, str(n), out], capture_output=True, text=True,
                                   env=dict(os.environ))
                if p.returncode:
                    sys.exit(f"{m} {n} failed:\n{p.stderr[-3000:]}")
                r = json.loads(p.stdout.strip().splitlines()[-1])
                results.setdefault((m, n), []).append(r)
                print(f"rep {rep} {m:18} {n:>9,} rows: {r['seconds']:.2f} s, peak {r['peak_rss_mb']:.0f} MB", file=sys.stderr)
    print(f"## bench_tables: embedded Spark Connect server, {args.reps} interleaved reps, medians, client = a fresh process\n")
    print("| rows | method | median s (total) | overhead vs plain | export step s | peak client RSS after export, MB | peak client RSS total, MB |")
    print("|---|---|---|---|---|---|---|")

    def med(m: str, n: int, key: str) -> float:
        return statistics.median(r[key] for r in results[(m, n)])

    for n in sizes:
        for m in METHODS:
            base = "plain-read" if "read" in m else "plain-export"
            over = "" if m.startswith("plain") else f"{(med(m, n, 'seconds') / med(base, n, 'seconds') - 1) * 100:+.0f}%"
            exp_s = f"{med(m, n, 'export_s'):.2f}" if "export" in m else ""
            exp_mb = f"{med(m, n, 'export_mb'):.0f}" if "export" in m else ""
            print(f"| {n:,} | {m} | {med(m, n, 'seconds'):.2f} | {over} | {exp_s} | {exp_mb} | {med(m, n, 'peak_rss_mb'):.0f} |")
    if len(sizes) > 1:
        a, b = sizes[0], sizes[-1]
        print()
        for m in METHODS:
            key = "export_mb" if "export" in m else "peak_rss_mb"
            ma, mb = med(m, a, key), med(m, b, key)
            what = "export step" if "export" in m else "read"
            print(f"- {m}: peak client memory of the {what}: {ma:.0f} MB at {a:,} rows, {mb:.0f} MB at {b:,} rows ({mb / ma:.2f}x)")
    from air_magics.tables import stop_server

    stop_server()


if __name__ == "__main__":
    main()
