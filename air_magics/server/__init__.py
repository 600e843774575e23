"""Jupyter server extension: the REST API behind the JupyterLab sidebar, under ``<base_url>/air/api/``.

Jupyter imports this module (enabled by ``jupyter-config/server-config/air_magics.json``, installed
into ``etc/jupyter/jupyter_server_config.d``); ``import air_magics`` never does, so the kernel side
stays free of tornado and jupyter_server. The handlers live in :mod:`air_magics.server.handlers`
and read only the core API (``VolumeStore``, the status documents, ``FileCache``).
"""
from __future__ import annotations

from typing import Any

__all__ = ["_jupyter_server_extension_points", "_load_jupyter_server_extension", "load_jupyter_server_extension"]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "air_magics.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the ``/air/api/*`` handlers on the running server."""
    from .handlers import setup_handlers

    base = setup_handlers(serverapp.web_app)
    serverapp.log.info("air_magics: sidebar REST API at %s", base)


# the name older Jupyter servers (and the notebook server) look for
load_jupyter_server_extension = _load_jupyter_server_extension
