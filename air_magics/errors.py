"""The one small error hierarchy of air_magics.

Every error subclasses :class:`AirError` *and* the builtin it resembles, so callers can catch
either. Messages name the offending value and say how to fix it; the magics turn them into
one-line IPython ``UsageError``s.

One exception to the rule: :class:`Interrupted` (a Ctrl-C that stopped a copy, a pack or an export)
is a ``KeyboardInterrupt`` only. ``AirError`` is an ``Exception``, and an interrupt caught by a
script's ``except Exception:`` would not stop the script.
"""

from __future__ import annotations

__all__ = [
    "AirError",
    "SettingError",
    "VolumePathError",
    "VolumeNotFoundError",
    "VolumeExistsError",
    "ConfinementError",
    "SpecialFileError",
    "StorageAccessError",
    "StorageCredentialsError",
    "StorageUnreachableError",
    "RegistryError",
    "CopyPlanError",
    "DestinationError",
    "CacheLimitError",
    "CacheDiskFullError",
    "DatasetError",
    "TableNameError",
    "TablesError",
    "TableTooLargeError",
    "ExportTargetError",
    "CheckpointError",
    "CheckpointCorruptError",
    "ShardError",
    "PackError",
    "ProbeError",
    "MavenError",
    "CatalogError",
    "CatalogNotFoundError",
    "CatalogExistsError",
    "CatalogPermissionError",
    "CatalogUnavailableError",
    "CatalogApiError",
    "Interrupted",
]


class AirError(Exception):
    """Base class of every error air_magics raises on purpose."""


class SettingError(AirError, ValueError):
    """A setting (``AIR_*`` variable, ``%config AirMagics.<name>``, ``c.AirConfig.<name>``) has a bad value."""


class VolumePathError(AirError, ValueError):
    """A path is not a valid volume path, or would leave its volume."""


class VolumeNotFoundError(AirError, FileNotFoundError):
    """A volume, or a path inside one, does not exist."""


class VolumeExistsError(AirError, FileExistsError):
    """A volume to be created already exists."""


class ConfinementError(AirError, PermissionError):
    """A read or write would leave its volume (or folder) through a symlink or a swapped folder."""


class SpecialFileError(AirError, OSError):
    """A FIFO, socket or device where a regular file was expected; refused without blocking."""


class StorageAccessError(AirError, PermissionError):
    """Object storage refused a request: wrong or missing credentials, or no permission on the bucket."""


class StorageCredentialsError(AirError, PermissionError):
    """No credentials for object storage were found (environment, profile, instance role)."""


class StorageUnreachableError(AirError, ConnectionError):
    """An object store's endpoint cannot be reached (down, wrong host or port, no network)."""


class RegistryError(AirError, ValueError):
    """A volume registration (fsspec URL) is invalid."""


class CopyPlanError(AirError, ValueError):
    """A copy request cannot be planned (empty selection, clashing targets, ...)."""


class DestinationError(AirError, PermissionError):
    """A copy destination cannot be written (unwritable, inside the source, ...)."""


class CacheLimitError(AirError, ValueError):
    """The cache cannot hold a file (limit smaller than the file, or no room on disk)."""


class CacheDiskFullError(AirError, OSError):
    """The cache's disk filled up (a fetch or its index ran out of space); ``errno`` is ``ENOSPC``.

    The message names the cache root, the free space and the fixes: a larger ``AIR_CACHE_RESERVE``,
    clearing the cache, or ``AIR_CACHE_DIR`` on a larger disk.
    """


class DatasetError(AirError, ValueError):
    """A dataset cannot be built or restored (empty selection, foreign or corrupt state, ...)."""


class TableNameError(AirError, ValueError):
    """A table name is not ``[catalog.]schema.]table`` of plain identifiers."""


class TablesError(AirError, RuntimeError):
    """A Spark session cannot be had, a query failed, or an export cannot be written."""


class TableTooLargeError(TablesError, MemoryError):
    """A table estimated above the in-memory read limit (``--max-bytes``); export it or read less."""


class CheckpointError(AirError, RuntimeError):
    """A checkpoint cannot be written or read (missing, incomplete, upload failed, ...)."""


class CheckpointCorruptError(CheckpointError):
    """A checkpoint file is missing or its bytes differ from the checksum recorded at save time.

    Distinct from a state that does not match the checkpoint (different model or keys): the
    fix is another checkpoint, not other code. ``checkpoint``, ``file`` and ``problem`` say what.
    """

    def __init__(self, checkpoint: str, file: str, problem: str, remedy: str = "") -> None:
        self.checkpoint, self.file, self.problem, self.remedy = checkpoint, file, problem, remedy
        super().__init__(f"corrupt checkpoint {checkpoint}: file {file} {problem}" + (f"; {remedy}" if remedy else ""))

    def __reduce__(self) -> tuple[type, tuple[str, str, str, str]]:  # picklable: DCP gathers errors across ranks
        return type(self), (self.checkpoint, self.file, self.problem, self.remedy)


class ExportTargetError(AirError, NotADirectoryError):
    """An export destination (or a folder on its way) is an existing file, not a folder."""


class ShardError(AirError, ValueError):
    """A packed folder cannot be read: missing or corrupt manifest or index, a shard that does not
    match its index (truncated, changed). The fix is packing the source again."""


class PackError(AirError, ValueError):
    """A folder cannot be packed as asked: destination inside the source, a non-empty destination
    that is not a packed folder, a source file that changed while it was packed."""


class ProbeError(AirError, ValueError):
    """A folder cannot be probed (it holds no files to read)."""


class MavenError(AirError, RuntimeError):
    """Jars cannot be resolved from Maven: ``mvn`` or Java missing, the repository unreachable, an
    artifact it does not serve. The message names the artifact and the fix."""


class CatalogError(AirError, RuntimeError):
    """A Unity Catalog server refused or failed a request, or cannot be started or reached."""


class CatalogNotFoundError(CatalogError, FileNotFoundError):
    """A catalog, schema, volume or table does not exist in the Unity Catalog server (404)."""


class CatalogExistsError(CatalogError, FileExistsError):
    """A catalog, schema, volume or table to be created already exists (409)."""


class CatalogPermissionError(CatalogError, PermissionError):
    """The Unity Catalog server refused the request: no token, a wrong one, or no permission (401/403)."""


class CatalogUnavailableError(CatalogError, ConnectionError):
    """The Unity Catalog server does not answer: nothing listens at its URL, or it timed out."""


class CatalogApiError(CatalogError):
    """The server answers, but not as a Unity Catalog ``/api/2.1/unity-catalog`` server does
    (another API, another version, a bad request)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a long operation cleanly; the message is one line: what stopped, what landed
    and how to resume (``copy interrupted: 412 of 1,200 files landed in /dest; re-run to copy the
    rest (copied files are skipped)``).

    A ``KeyboardInterrupt`` (scripts still stop; ``except Exception`` does not swallow it), raised
    once the operation's threads have stopped and nothing partial is left under a final name. The
    magics show the message as their one-line error instead of a traceback. ``what``: the
    operation (``copy``, ``pack``, ``export``)."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(message)
        self.what = what

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (str(self), self.what)
