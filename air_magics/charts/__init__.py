"""The charts: the training chart (one model, three drawings), and bar panels of storage measurements.

* :mod:`.history`: a loader's running totals over time, kept (bounded) in its status document;
* :mod:`.spec`: those rows -> the chart as plain data (panels, series, bands, units);
* :mod:`.svg`: the spec as inline SVG (the notebook cell; the sidebar draws the same spec in TypeScript);
* :mod:`.console`: the spec as one line of sparklines (a console, CI logs);
* :mod:`.storage`: a probe's numbers and a listing's size histogram as bar panels (:func:`.svg.bars_svg`);
* :mod:`.saves`: the checkpoint time line; :mod:`.throughput`: a copy's or a pack's rates over time.

Importing this package is light: names load with their module on first use, so the status-document
listener that every process attaches on ``import air_magics`` loads :mod:`.history` only.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "CAPACITY": ".history",
    "FIELDS": ".history",
    "LoaderHistory": ".history",
    "history_rows": ".history",
    "training_spec": ".spec",
    "wait_bands": ".spec",
    "chart_html": ".svg",
    "panel_svg": ".svg",
    "bars_svg": ".svg",
    "probe_panels": ".storage",
    "size_panel": ".storage",
    "probe_html": ".storage",
    "listing_html": ".storage",
    "sparkline": ".console",
    "training_line": ".console",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
