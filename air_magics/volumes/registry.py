"""Persistent map of volumes registered to external storage (fsspec URLs).

Stored as JSON under ``$AIR_HOME``; written atomically (temp + rename) so a crash never leaves a
half-written registry. Only URLs are stored, never credentials: fsspec reads those from the
environment or its own config.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..errors import RegistryError
from ..io.atomic import write_json_atomic

__all__ = ["VolumeRegistry", "normalise_url"]

_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LOCAL_SCHEMES = ("file", "local")  # fsspec's local filesystem


def normalise_url(url: str) -> str:
    """The form of *url* the registry stores: trailing ``/`` dropped, never down to an empty path.

    Refused: no ``scheme://``, control characters, and local URLs that fsspec would resolve against
    the working directory (``file:``, ``file://data``) or that name the whole filesystem
    (``file:///``): a volume is a folder, and its files are created and deleted freely.
    """
    if not isinstance(url, str) or not _SCHEME.match(url):
        raise RegistryError(
            f"{url!r} is not a storage URL: give one with a scheme, e.g. s3://bucket/prefix, "
            f"gs://bucket/prefix, file:///data/vol or memory://vol"
        )
    if _CONTROL.search(url):
        raise RegistryError(f"control character (newline, tab, NUL, ...) in storage URL {url!r}: remove it")
    scheme, _, rest = url.partition("://")
    path = rest.rstrip("/") or ("/" if rest else "")
    if scheme.lower() in _LOCAL_SCHEMES:
        if not path.startswith("/"):
            raise RegistryError(
                f"{url!r} is not an absolute local URL: fsspec would resolve it against the working "
                f"directory; write {scheme}:///absolute/folder (three slashes)"
            )
        if path == "/":
            raise RegistryError(
                f"{url!r} is the whole filesystem, not a folder: register a folder for the volume, "
                f"e.g. {scheme}:///data/vol"
            )
    return f"{scheme}://{path}"


class VolumeRegistry:
    """``catalog.schema.volume`` -> fsspec URL, persisted in one JSON file."""

    def __init__(self, file: str | os.PathLike[str]) -> None:
        self.file = Path(file)

    def load(self) -> dict[str, str]:
        try:
            data = json.loads(self.file.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise RegistryError(
                f"volume registry {str(self.file)!r} is unreadable ({exc}); fix or delete the file"
            ) from None
        if not isinstance(data, dict):
            raise RegistryError(f"volume registry {str(self.file)!r} is not a JSON object; fix or delete it")
        return {str(k): str(v) for k, v in data.items()}

    def get(self, volume_id: str) -> str | None:
        """The URL *volume_id* is registered to; a stored URL that is not valid (now) is refused."""
        url = self.load().get(volume_id)
        if url is not None:
            try:
                normalise_url(url)
            except RegistryError as exc:
                raise RegistryError(
                    f"volume {volume_id!r} is registered to an unusable URL: {exc}; register it again "
                    f"(%air_volume register {volume_id} URL) or remove it from {str(self.file)!r}"
                ) from None
        return url

    def set(self, volume_id: str, url: str) -> str:
        """Register *volume_id* to *url* (normalised, see :func:`normalise_url`); returns what was stored."""
        url = normalise_url(url)
        data = self.load()
        data[volume_id] = url
        self._write(data)
        return url

    def remove(self, volume_id: str) -> bool:
        data = self.load()
        found = data.pop(volume_id, None) is not None
        if found:
            self._write(data)
        return found

    def _write(self, data: dict[str, str]) -> None:
        write_json_atomic(self.file, data, indent=2, sort_keys=True)
