"""One tables measurement in a fresh client process: ``python -m benchmarks.scenarios.tables_child METHOD ROWS OUT``.

A fresh process per measurement so its peak RSS (``ru_maxrss``) is that method's own, imports
included. Prints one JSON line: total seconds and peak RSS, and for exports the export step's seconds
and peak RSS before ``datasets`` loads the result.
"""

from __future__ import annotations

import glob
import json
import resource
import shutil
import sys
import time

__all__ = ["measure"]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _plain(method: str, rows: int, out: str, t0: float, res: dict) -> int:
    from pyspark.sql import SparkSession

    from air_magics.tables.server import running_server

    spark = SparkSession.builder.remote(running_server().url).create()
    full = f"spark_catalog.bench__t.rows_{rows}"
    if method == "plain-read":
        return len(spark.table(full).toPandas())
    shutil.rmtree(out, ignore_errors=True)
    spark.table(full).write.mode("overwrite").parquet(out)
    res.update(export_s=time.perf_counter() - t0, export_mb=_peak_mb())
    import datasets

    return datasets.load_dataset("parquet", data_files=sorted(glob.glob(out + "/*.parquet")), split="train").num_rows


def _air(method: str, rows: int, out: str, t0: float, res: dict) -> int:
    from air_magics import tables

    name = f"bench.t.rows_{rows}"
    if method == "air-read":
        return len(tables.read_table(name))
    via = "client" if method == "air-export-client" else "auto"
    r = tables.export_table(name, out, mode="overwrite", via=via)
    res.update(export_s=time.perf_counter() - t0, export_mb=_peak_mb())
    return r.load_dataset().num_rows


def measure(method: str, rows: int, out: str) -> dict:
    """Run *method* on the ``rows``-row table; its seconds and peak client RSS."""
    res: dict = {}
    t0 = time.perf_counter()
    n = (_plain if method.startswith("plain") else _air)(method, rows, out, t0, res)
    secs = time.perf_counter() - t0
    if n != rows:
        raise SystemExit(f"{method}: {n} rows, expected {rows}")
    return {"seconds": secs, "peak_rss_mb": _peak_mb(), **res}


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], int(sys.argv[2]), sys.argv[3])))
