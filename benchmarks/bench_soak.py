"""``python benchmarks/bench_soak.py [--quick] ...``: the soak (benchmarks/scenarios/soak.py; ``--help`` there)."""

import sys
from pathlib import Path

sys.path[0] = str(
    Path(__file__).resolve().parents[1]
)  # the repository root (for the benchmarks package), not benchmarks/
from benchmarks.scenarios.soak import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
