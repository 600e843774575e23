"""The tables benchmark's quick mode (``benchmarks/bench_tables.py --quick --no-wait``) on the run's
shared Spark server (conftest ``spark_server``: no JVM start of its own), a 2,000-row table: the
script runs for real, exits 0 and prints its report. Apart from the other scripts
(``test_benchmarks``) so that it runs with the other Spark tests, on one pytest-xdist worker."""

from __future__ import annotations

import pytest
from test_benchmarks import SCENARIOS, check_report, run_script

pytestmark = pytest.mark.spark


@pytest.mark.timeout(600)
def test_quick_tables_benchmark_runs_and_reports(spark_server, tmp_path):
    flags = [*SCENARIOS["tables"][0], "--spark-dir", spark_server["store"]]
    check_report("tables", run_script("tables", flags, tmp_path / "tables"))
