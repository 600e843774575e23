"""``python benchmarks/bench_tables.py [--quick] ...``: the tables scenario (benchmarks/scenarios/tables.py; ``--help`` there)."""

import sys
from pathlib import Path

sys.path[0] = str(
    Path(__file__).resolve().parents[1]
)  # the repository root (for the benchmarks package), not benchmarks/
from benchmarks.scenarios.tables import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
