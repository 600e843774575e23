"""Jupyter server extension: the REST API behind the JupyterLab sidebar, under ``<base_url>/air/api/``.

Jupyter imports this module (enabled by ``jupyter-config/server-config/air_magics.json``, installed
into ``etc/jupyter/jupyter_server_config.d``); ``import air_magics`` never does, so the kernel side
stays free of tornado and jupyter_server. The handlers live in :mod:`air_magics.server.handlers`
and read only the core API (``VolumeStore``, the status documents, ``FileCache``).

Settings come from ``jupyter_server_config`` (``c.AirConfig.cache_dir = "/scratch/air-cache"``,
any trait of :class:`air_magics.settings.AirConfig`), else the ``AIR_*`` environment variables:
the extension builds an ``AirConfig`` from the server's config and passes it down to the core.
"""

from __future__ import annotations

from typing import Any

__all__ = ["_jupyter_server_extension_points", "_load_jupyter_server_extension", "load_jupyter_server_extension"]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "air_magics.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Apply the server's ``AirConfig`` settings and register the ``/air/api/*`` handlers."""
    from ..settings import AirConfig, use
    from .handlers import setup_handlers

    air = AirConfig(parent=serverapp)  # reads c.AirConfig.* of jupyter_server_config; bad values raise here
    use(air)
    if air.overrides():
        serverapp.log.info("air_magics: settings from the server config: %s", air.overrides())
    base = setup_handlers(serverapp.web_app)
    serverapp.log.info("air_magics: sidebar REST API at %s", base)


# the name older Jupyter servers (and the notebook server) look for
load_jupyter_server_extension = _load_jupyter_server_extension
