"""``python -m benchmarks [--quick] [--only copy,loader] [--no-wait]``: run the scenarios (see harness/suite.py)."""

import sys

from benchmarks.harness.suite import main

sys.exit(main())
