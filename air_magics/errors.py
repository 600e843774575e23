"""The one small error hierarchy of air_magics.

Every error subclasses :class:`AirError` *and* the builtin it resembles, so callers can catch
either. Messages name the offending value and say how to fix it; the magics turn them into
one-line IPython ``UsageError``s.
"""
from __future__ import annotations

__all__ = [
    "AirError",
    "VolumePathError",
    "VolumeNotFoundError",
    "VolumeExistsError",
    "RegistryError",
    "CopyPlanError",
    "DestinationError",
    "CacheLimitError",
    "DatasetError",
    "TableNameError",
    "TablesError",
]


class AirError(Exception):
    """Base class of every error air_magics raises on purpose."""


class VolumePathError(AirError, ValueError):
    """A path is not a valid volume path, or would leave its volume."""


class VolumeNotFoundError(AirError, FileNotFoundError):
    """A volume, or a path inside one, does not exist."""


class VolumeExistsError(AirError, FileExistsError):
    """A volume to be created already exists."""


class RegistryError(AirError, ValueError):
    """A volume registration (fsspec URL) is invalid."""


class CopyPlanError(AirError, ValueError):
    """A copy request cannot be planned (empty selection, clashing targets, ...)."""


class DestinationError(AirError, PermissionError):
    """A copy destination cannot be written (unwritable, inside the source, ...)."""


class CacheLimitError(AirError, ValueError):
    """The cache cannot hold a file (limit smaller than the file, or no room on disk)."""


class DatasetError(AirError, ValueError):
    """A dataset cannot be built or restored (empty selection, foreign or corrupt state, ...)."""


class TableNameError(AirError, ValueError):
    """A table name is not ``[catalog.]schema.]table`` of plain identifiers."""


class TablesError(AirError, RuntimeError):
    """A Spark session cannot be had, a query failed, or an export cannot be written."""
