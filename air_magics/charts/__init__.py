"""The training chart: one model, three drawings.

* :mod:`.history`: a loader's running totals over time, kept (bounded) in its status document;
* :mod:`.spec`: those rows -> the chart as plain data (panels, series, bands, units);
* :mod:`.svg`: the spec as inline SVG (the notebook cell; the sidebar draws the same spec in TypeScript);
* :mod:`.text`: the spec as one line of sparklines (a console, CI logs).

Light to import (stdlib and the verdict's thresholds): the status-document listener that every
process attaches on ``import air_magics`` keeps the history.
"""

from .history import CAPACITY, FIELDS, LoaderHistory, history_rows
from .spec import training_spec, wait_bands
from .svg import chart_html, panel_svg
from .text import sparkline, training_line

__all__ = [
    "CAPACITY",
    "FIELDS",
    "LoaderHistory",
    "history_rows",
    "training_spec",
    "wait_bands",
    "chart_html",
    "panel_svg",
    "sparkline",
    "training_line",
]
