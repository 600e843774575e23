"""Persistent map of volumes registered to external storage (fsspec URLs).

Stored as JSON under ``$AIR_HOME``; written atomically (temp + rename) so a crash never leaves a
half-written registry. Only URLs are stored, never credentials: fsspec reads those from the
environment or its own config.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from ..errors import RegistryError

__all__ = ["VolumeRegistry"]

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class VolumeRegistry:
    """``catalog.schema.volume`` -> fsspec URL, persisted in one JSON file."""

    def __init__(self, file: "str | os.PathLike[str]") -> None:
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
        return self.load().get(volume_id)

    def set(self, volume_id: str, url: str) -> None:
        if not _SCHEME.match(url):
            raise RegistryError(
                f"{url!r} is not a storage URL: give one with a scheme, e.g. s3://bucket/prefix, "
                f"gs://bucket/prefix, file:///data/vol or memory://vol"
            )
        data = self.load()
        data[volume_id] = url.rstrip("/") if not url.endswith("://") else url
        self._write(data)

    def remove(self, volume_id: str) -> bool:
        data = self.load()
        found = data.pop(volume_id, None) is not None
        if found:
            self._write(data)
        return found

    def _write(self, data: dict[str, str]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".registry-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=2, sort_keys=True)
            os.replace(tmp, self.file)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
