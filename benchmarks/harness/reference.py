"""The reference library (``databricks.air.data``), measured side by side from its own venv.

It never enters this project's venv: the loader and checkpoint benchmarks run its rows with
``--ref-python`` (default ``/tmp/refvenv/bin/python``). Where that interpreter is missing or cannot
import the library, those rows are skipped with a printed reason instead of failing the run.
"""

from __future__ import annotations

import os
import subprocess

__all__ = ["DEFAULT_REF_PYTHON", "INSTALL_HINT", "reference_unavailable"]

DEFAULT_REF_PYTHON = "/tmp/refvenv/bin/python"
INSTALL_HINT = "python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install torch==2.13.0 'databricks-sdk-air[data]' psutil pillow numpy"


def reference_unavailable(python: str) -> str | None:
    """Why the reference cannot run from *python*, or None when ``import databricks.air.data`` works."""
    if not os.access(python, os.X_OK):
        return f"{python} not found (create it with: {INSTALL_HINT}; or pass --ref-python)"
    try:
        p = subprocess.run([python, "-c", "import databricks.air.data"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python} cannot run: {exc}"
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return f"{python} cannot import databricks.air.data ({last}); install it with: {INSTALL_HINT}"
    return None
