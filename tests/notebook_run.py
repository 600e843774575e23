"""Execute a notebook as JupyterLab's Run All does, and compare its outputs with the stored ones.

Why not nbval alone: a magic's ``UsageError`` reaches the notebook as printed text, not as an error
output, so nbval passes a notebook whose magics fail. The kernel's reply still says "error", and
nbclient (what ``jupyter nbconvert --execute`` uses) stops there, exactly like Run All. A cell
tagged ``raises-exception`` is a demonstration of an error: it must fail, and execution goes on.

Outputs are compared like nbval does: cells tagged ``nbval-ignore-output`` (timings, temp paths)
are only run; other cells must print what the notebook stores (text and ``text/plain``; widget
views and live views, the training chart, are skipped). ``python -m tests.notebook_run notebooks/NB.ipynb --update`` re-executes a
notebook and stores its new outputs.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["NotebookRun", "run_notebook"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass
class NotebookRun:
    """What one execution of a notebook found."""

    path: Path
    executed: Any  # the executed nbformat NotebookNode
    errors: list[str] = field(default_factory=list)  # cells that failed, one line each
    not_raised: list[int] = field(default_factory=list)  # raises-exception cells that ran clean
    differences: list[str] = field(default_factory=list)  # cells whose outputs differ from the stored ones


def _tags(cell: Any) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _live_view(output: Any) -> bool:
    """A live view of timings (the training chart: ``metadata.air_magics.live_view``), like a widget view."""
    meta = output.get("metadata", {}).get("air_magics")
    return isinstance(meta, dict) and bool(meta.get("live_view"))


def _text_outputs(outputs: list[Any]) -> list[tuple[str, str]]:
    """(kind, text) of a cell's outputs in order, streams of one name joined, widget and live views left out."""
    out: list[tuple[str, str]] = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            text = "".join(o.get("text", ""))
            if out and out[-1][0] == f"stream:{o.get('name')}":
                out[-1] = (out[-1][0], out[-1][1] + text)
            else:
                out.append((f"stream:{o.get('name')}", text))
        elif kind in ("execute_result", "display_data"):
            data = o.get("data", {})
            if WIDGET_VIEW in data or "text/plain" not in data or _live_view(o):
                continue
            out.append((kind, "".join(data["text/plain"])))
        elif kind == "error":
            out.append(("error", o.get("ename", "")))
    return [(k, "\n".join(line.rstrip() for line in t.rstrip().splitlines())) for k, t in out]


def run_notebook(path: str | os.PathLike[str], *, cwd: str | os.PathLike[str], timeout: int = 600) -> NotebookRun:
    """Execute *path* top to bottom in a fresh kernel (the current environment's), in *cwd*."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    stored = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(stored)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    run = NotebookRun(path, nb)
    status: dict[int, str] = {}

    def on_cell_executed(cell: Any, cell_index: int, execute_reply: Any, **_: Any) -> None:
        status[cell_index] = execute_reply["content"]["status"]

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
        on_cell_executed=on_cell_executed,
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        index = max(status) if status else -1
        run.errors.append(f"{path.name} cell {index}: {exc.ename}: {exc.evalue}")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or i not in status:
            continue
        tags = _tags(cell)
        if "raises-exception" in tags:
            if status[i] != "error":
                run.not_raised.append(i)
            continue
        if "nbval-ignore-output" in tags or "nbval-skip" in tags:
            continue
        want, got = _text_outputs(stored.cells[i].outputs), _text_outputs(cell.outputs)
        if want != got:
            run.differences.append(f"{path.name} cell {i}:\n  stored:   {want!r}\n  executed: {got!r}")
    return run


def main(argv: list[str] | None = None) -> int:
    import tempfile

    import nbformat

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--update", action="store_true", help="store the executed outputs in the notebook")
    args = parser.parse_args(argv)
    bad = 0
    for nb_path in args.notebooks:
        with tempfile.TemporaryDirectory() as cwd:
            run = run_notebook(nb_path, cwd=cwd)
        for line in run.errors + [f"{nb_path.name} cell {i}: did not raise" for i in run.not_raised]:
            print(line)
            bad += 1
        if args.update and not run.errors and not run.not_raised:
            nbformat.write(run.executed, nb_path)
            print(f"{nb_path}: outputs stored")
        elif run.differences:
            print("\n".join(run.differences))
            bad += not args.update
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
