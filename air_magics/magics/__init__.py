"""IPython front end: ``%air_volume``, ``%%air_copy`` and ``%air_table``, thin layers over the core API.

Configure with ``%config AirMagics.<trait>``: the magics class *is* the core's
:class:`~air_magics.settings.AirConfig` (every setting: ``cache_limit``, ``workers``, ``home``...),
passed down with :func:`air_magics.settings.use` when registered, plus the front end's own
``default_volume`` and ``widgets``.

No magic lets IPython expand its line (that evaluates ``{expr}``): a line gets only
``{name}``/``$name`` of plain notebook variables (:func:`._common.expand_names`), and the body of
``%%air_copy`` is taken literally, so a file may be called ``x{7*6}.txt``.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand
from traitlets import Bool, TraitError, Unicode

from .. import settings
from . import air_volume as _volume
from . import copy as _copy
from . import table as _table
from . import torchrun as _torchrun
from ._common import expand_names, strip_comment, usage_errors
from .completion import install_completer

__all__ = ["AirMagics", "register"]


@magics_class
class AirMagics(Magics, settings.AirConfig):
    """The air_magics line and cell magics; their traits are every setting (see :mod:`air_magics.settings`)."""

    default_volume = Unicode("", help="Volume that relative paths refer to (set by %air_volume use).").tag(config=True)
    widgets = Bool(True, help="Show ipywidgets progress in notebooks (text progress when False).").tag(config=True)

    def update_config(self, config: Any) -> None:
        """``%config AirMagics.x = bad`` shows one ``UsageError:`` line, as a magic does.

        Why: IPython's ``%config`` catches what ``update_config`` raises and hands it to
        ``logging.error``, which a kernel prints as ``ERROR:root:...``. The refused value is rolled
        back by traitlets either way; here the message (it names the value and the fix) is shown
        the way IPython shows every other usage error."""
        try:
            super().update_config(config)
        except TraitError as exc:
            if self.shell is None:  # not in a shell: the caller handles it
                raise
            self.shell.show_usage_error(UsageError(str(exc)))

    @line_magic
    @no_var_expand
    @usage_errors
    def air_volume(self, line: str) -> Any:
        return _volume.run(self, expand_names(strip_comment(line), self.shell.user_ns))

    air_volume.__doc__ = _volume.usage()  # the one usage text: the subcommands' table (magics/air_volume/)

    @line_magic
    @no_var_expand
    @_table.arguments
    @usage_errors
    def air_table(self, line: str) -> Any:
        """Tables through Spark Connect: preview, read to pandas/NumPy/Arrow, export to a volume."""
        return _table.run(self, expand_names(strip_comment(line), self.shell.user_ns))

    @line_cell_magic
    @no_var_expand
    @_copy.arguments
    @usage_errors
    def air_copy(self, line: str, cell: str | None = None) -> Any:
        """Copy many files from volumes (or local disk) to local disk (or a volume) in parallel.

        The cell body lists the sources, one path or glob per line (``#`` starts a comment line)::

            %%air_copy --to /local_disk0/data
            /Volumes/main/raw/images/train
            /Volumes/main/raw/images/val/**/*.jpg
            /home/me/extra.csv

        A source held in a notebook variable goes on the magic line with ``--from`` (the line
        expands ``{name}``/``$name``; the body never does), as a cell or a one-line magic::

            %air_copy --from {local_dir}/train --to /Volumes/main/me/scratch/backup

        A line is a /Volumes/... path or glob, a local absolute path, or a path relative to the
        default volume. The body is taken literally. A folder lands under its own name in DEST; a
        glob keeps the layout below its literal prefix. Files already there unchanged are skipped.
        If any file fails, the report is shown and the cell ends with an error (--allow-failures:
        return the report instead).
        """
        return _copy.run(self, expand_names(strip_comment(line), self.shell.user_ns), cell)

    @cell_magic
    @no_var_expand
    @_torchrun.arguments
    @usage_errors
    def air_torchrun(self, line: str, cell: str) -> Any:
        """Run the cell on several ranks with torch's launcher, its output live in the cell.

        torchrun's flags; the cell is the script each rank runs (``RANK``, ``WORLD_SIZE``,
        ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT`` set as torchrun sets them)::

            %%air_torchrun --nproc-per-node 2 --return loss
            import torch.distributed as dist
            dist.init_process_group("gloo")
            loss = float(dist.get_rank())

        Rank 0's output is shown (``--all-ranks``: every rank's, as ``[rank k] ...``). A rank that
        fails ends the cell with its traceback and the other ranks are stopped; so are they on
        ``--timeout S`` and Ctrl-C. Returns a ``RankRun`` (exit code, wall time, ``value``: rank
        0's ``--return NAME``); ``-o VAR`` stores it. Several nodes: ``--nnodes``, ``--node-rank``,
        ``--rdzv-endpoint HOST:PORT`` (``--rdzv-backend``, default c10d), as with torchrun.
        """
        return _torchrun.run(self, expand_names(strip_comment(line), self.shell.user_ns), cell)


def register(ipython: Any) -> None:
    """Register the magics and the ``/Volumes`` path completer on *ipython*."""
    ipython.register_magics(AirMagics)
    settings.use(ipython.magics_manager.registry["AirMagics"])  # the core now reads %config AirMagics.*
    install_completer(ipython)
    _attach_listeners(ipython)
    _add_charts(ipython)


def _add_charts(ipython: Any) -> None:
    """A probe's report and a recursive listing show their charts in a notebook (``charts.storage``);
    registered by type name, so nothing is imported until such a value is shown."""
    formatter = getattr(getattr(ipython, "display_formatter", None), "formatters", {}).get("text/html")
    if formatter is None:
        return
    formatter.for_type_by_name("air_magics.volumes.probe", "ProbeReport", _chart_html("probe_html"))
    formatter.for_type_by_name("air_magics.volumes.summary", "ListingSummary", _chart_html("listing_html"))


def _chart_html(name: str) -> Any:
    def html(value: Any) -> str:
        from ..charts import storage

        return getattr(storage, name)(value)

    return html


def _attach_listeners(ipython: Any) -> None:
    """The notebook's event listeners (a CheckpointManager's live view), following %config AirMagics.widgets."""
    from ..widgets.listeners import attach_notebook_listeners

    attach_notebook_listeners(lambda: bool(getattr(ipython.magics_manager.registry.get("AirMagics"), "widgets", True)))
