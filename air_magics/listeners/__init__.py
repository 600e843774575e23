"""Listeners for :mod:`air_magics.events` (core side: none imports IPython or ipywidgets).

* :class:`StatusDocuments` writes the ``$AIR_HOME/run/*.json`` documents the sidebar and the
  notebook views read. One instance, :data:`status_documents`, is attached to
  ``air_magics.events.channel`` when ``air_magics`` is imported, in every process (scripts and
  DataLoader workers included), because the sidebar must see them all. To stop it::

      air_magics.events.channel.detach(air_magics.listeners.status_documents)

* :class:`LoggingListener` logs on the modules' loggers (``air_magics.transfer``, ...).
* :class:`TqdmListener` draws text progress bars (copies, exports, loader steps).
* :class:`MlflowListener` logs a DataLoader's timing into the active mlflow run; only when you
  attach it: ``air_magics.events.channel.attach(MlflowListener())``.

Notebook widgets are listeners too; they live in :mod:`air_magics.widgets` (the front end) and the
``%load_ext air_magics`` extension attaches them.
"""

from __future__ import annotations

from .logs import LoggingListener
from .mlflow_metrics import MlflowListener
from .status_docs import StatusDocuments
from .text import TqdmListener

__all__ = ["StatusDocuments", "LoggingListener", "TqdmListener", "MlflowListener", "status_documents"]

status_documents = StatusDocuments()
"""The instance attached to the default channel on import."""
