"""air_magics: the data layer of an AI runtime for any IPython/Jupyter notebook.

``%load_ext air_magics`` registers ``%air_volume`` and ``%%air_copy``. Everything the magics do is
plain Python API too: :mod:`air_magics.volumes`, :func:`air_magics.copy`,
:mod:`air_magics.transfer`. Importing this package stays light (no torch, pyspark or pandas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import AirError
from .events import channel as _channel
from .hf_datasets import install as _install_datasets_support
from .listeners import status_documents as _status_documents

if TYPE_CHECKING:  # pragma: no cover
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["__version__", "AirError", "load_ipython_extension", "unload_ipython_extension", "copy", "launch"]


# The sidebar and the notebook views read status documents written by every process (scripts and
# DataLoader workers too), so the listener that writes them is attached wherever air_magics is imported.
_channel.attach(_status_documents)
# datasets.load_dataset(..., data_dir="volumes://...") works in any process that imported air_magics:
# datasets reads data_dir as a local path otherwise (air_magics.hf_datasets says why); costs no import.
_install_datasets_support()


def copy(sources: Any, dest: str, **kwargs: Any) -> Any:
    """Plan and run a parallel copy: ``copy(["/Volumes/c/s/v/data"], "/local_disk0/data")``.

    Keyword arguments go to :func:`air_magics.transfer.copy_files` (``workers``, ``overwrite``,
    ``dry_run``, ``listeners``, ``job``...) or :func:`air_magics.transfer.plan_copy` (``store``,
    ``default_volume``). Returns a :class:`~air_magics.transfer.CopyReport`. The copy shows in the
    sidebar's Jobs under ``job``, else named after its first source (``train-3f2a1c``).
    """
    from .transfer import copy_files, plan_copy

    plan_kw = {k: kwargs.pop(k) for k in ("store", "default_volume") if k in kwargs}
    plan = plan_copy(sources, dest, **plan_kw)
    kwargs.setdefault("sources", plan.sources)  # labels the job; names it when job= is not given
    return copy_files(plan.tasks, dest=plan.dest, **kwargs)


def launch(fn: Any, *args: Any, nproc_per_node: int, **kwargs: Any) -> Any:
    """Call ``fn(*args, **kwargs)`` on ``nproc_per_node`` ranks (``torch.distributed.run``) and
    return rank 0's result; a function defined in a notebook works (pickled by value).

    Launcher options (``nnodes``, ``node_rank``, ``rdzv_endpoint``, ``rdzv_backend``,
    ``max_restarts``, ``all_ranks``, ``timeout``) are taken from *kwargs* by name; see
    :func:`air_magics.torch_launcher.launch`."""
    from .torch_launcher import launch as _launch

    return _launch(fn, *args, nproc_per_node=nproc_per_node, **kwargs)


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Called by ``%load_ext air_magics``."""
    from .magics import register

    register(ipython)


def unload_ipython_extension(ipython: InteractiveShell) -> None:  # pragma: no cover - nothing to undo
    pass
