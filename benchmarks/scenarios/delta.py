"""Benchmark: ``UCDataset`` over a Delta table vs over the same Parquet files as a plain folder.

A table of ``--rows`` rows (an int, a float and a short string) is written with deltalake in
``--files`` appends (one file each, row groups of ``--row-group`` rows); its live files are then
hard-linked into a plain folder, so both methods read the very same bytes from the page cache. What a
Delta table adds is the snapshot (deltalake's log replay, the live-file list) at construction, and
nothing per row when its files need no conforming (no partition columns, deletion vectors or column
mapping). A third row reads a partitioned copy (4 partitions, so 4x the files of a quarter the size;
partition values added to each batch: the conforming path) for information. Snappy compression. Target (issue 38): Delta >= 0.9x the plain folder, end to end
(construction + one epoch).

    .venv/bin/python benchmarks/bench_delta.py [--rows 2000000] [--files 8] [--reps 5]
    .venv/bin/python benchmarks/bench_delta.py --quick     # 200,000 rows, 3 reps (seconds)

Interleaved repetitions (order rotated per rep), medians, one process, one table on stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from benchmarks.harness.report import fmt, skipped, table, target
from benchmarks.harness.runner import add_common_args, interleaved, med, raise_on_sigterm, resolve_waits
from benchmarks.harness.sampling import wait_quiet

__all__ = ["main"]

METHODS = ("plain folder", "delta", "delta, partitioned")


def make_tables(a: argparse.Namespace, td: str) -> dict[str, str]:
    """The Delta table, the plain folder of its files and a partitioned Delta copy, under *td*."""
    import numpy as np
    import pyarrow as pa
    from deltalake import DeltaTable, WriterProperties, write_deltalake

    delta, plain, part = (os.path.join(td, n) for n in ("delta", "plain", "partitioned"))
    props = WriterProperties(max_row_group_size=a.row_group, compression="SNAPPY")  # as Spark writes
    per = a.rows // a.files
    for i in range(a.files):
        ids = np.arange(i * per, (i + 1) * per if i < a.files - 1 else a.rows)
        t = pa.table({"id": ids, "x": ids * 0.5, "s": pa.array([f"s{j % 97}" for j in ids])})
        write_deltalake(delta, t, mode="append", writer_properties=props)
        pt = t.append_column("p", pa.array(ids % 4))
        write_deltalake(part, pt, mode="append", partition_by=["p"], writer_properties=props)
    os.makedirs(plain)
    for uri in DeltaTable(delta).file_uris():
        os.link(uri, os.path.join(plain, os.path.basename(uri)))
    return {"plain folder": plain, "delta": delta, "delta, partitioned": part}


def epoch(source: str, batch: int) -> tuple[float, float, int]:
    """(construction s, epoch s, rows) of one UCDataset pass over *source*."""
    from air_magics.data import UCDataset

    t0 = time.perf_counter()
    ds = UCDataset(source, batch_size=batch)
    t1 = time.perf_counter()
    rows = sum(len(b["id"]) for b in ds)
    return t1 - t0, time.perf_counter() - t1, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="bench_delta.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rows", type=int, help="rows in the table (default 2,000,000; --quick 200,000)")
    ap.add_argument("--files", type=int, default=8, help="data files (appends) (default 8)")
    ap.add_argument("--row-group", type=int, default=131072, help="rows per row group (default 131,072)")
    ap.add_argument("--batch", type=int, default=1024, help="rows per batch (default 1,024)")
    ap.add_argument("--reps", type=int, help="interleaved repetitions (default 5; --quick 3)")
    add_common_args(ap, quiet_wait=0.0, quiet_below=0.15)
    a = ap.parse_args(argv)
    resolve_waits(a)
    a.rows = a.rows or (200_000 if a.quick else 2_000_000)
    a.reps = a.reps or (3 if a.quick else 5)
    try:
        import deltalake  # noqa: F401
        import torch  # noqa: F401  (imported before the clock starts)
    except ImportError as exc:
        print(skipped("bench_delta", f"{exc.name} is not installed (pip install 'air_magics[delta,data]')"))
        return 0
    raise_on_sigterm()  # a stopped run still removes its files
    with tempfile.TemporaryDirectory() as td:
        os.environ.setdefault("AIR_HOME", os.path.join(td, "air"))
        sources = make_tables(a, td)
        for m in METHODS:  # warm the page cache and the imports
            epoch(sources[m], a.batch)
        res: dict[str, list[tuple[float, float, int]]] = {m: [] for m in METHODS}
        for _, m in interleaved(a.reps, METHODS):
            if a.quiet_wait > 0:
                wait_quiet(a.quiet_below, a.quiet_wait)
            r = epoch(sources[m], a.batch)
            if r[2] != a.rows:
                raise SystemExit(f"{m}: {r[2]} rows, expected {a.rows}")
            res[m].append(r)
    print(
        f"## bench_delta\n\n### UCDataset over a Delta table vs the same Parquet files as a folder "
        f"({a.rows:,} rows in {a.files} files, row groups of {a.row_group:,}, batches of {a.batch:,}, "
        f"{a.reps} interleaved reps, medians, one process, page cache)\n"
    )
    total = {m: med(c + e for c, e, _ in res[m]) for m in METHODS}
    rows = []
    for m in METHODS:
        c, e = med(r[0] for r in res[m]), med(r[1] for r in res[m])
        rows.append(
            [
                m,
                fmt(c * 1000, ".1f"),
                fmt(e, ".3f"),
                fmt(a.rows / total[m], ",.0f"),
                f"{fmt(total['plain folder'] / total[m], '.2f')}x",
            ]
        )
    print(table(["source", "construction ms", "epoch s", "rows/s (construction + epoch)", "x plain folder"], rows))
    x = total["plain folder"] / total["delta"]
    print(f"\n- {target('UCDataset over Delta vs the same files as a plain folder', f'{x:.2f}x', '>= 0.9x', x >= 0.9)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
