"""One module per benchmark scenario: copy, loader, checkpoint, tables, confined.

``*_child`` modules hold the code a measured subprocess runs (``python -m benchmarks.scenarios.<x>_child``);
they import only the standard library and what they measure, since the reference's venv runs them too.
"""

__all__ = ["SCENARIOS"]

#: scenario name -> module; the order ``python -m benchmarks`` runs them in (cheapest first)
SCENARIOS = {
    "copy": "benchmarks.scenarios.copy",
    "confined": "benchmarks.scenarios.confined",
    "loader": "benchmarks.scenarios.loader",
    "checkpoint": "benchmarks.scenarios.checkpoint",
    "tables": "benchmarks.scenarios.tables",
}
