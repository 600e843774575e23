"""Persistent map of volumes registered to external storage (fsspec URLs).

Stored as JSON under ``$AIR_HOME``; written atomically (temp + rename) so a crash never leaves a
half-written registry. An entry is a URL, or (registered with an endpoint, a profile or options)
``{"url", "endpoint", "profile", "options"}``. Never credentials: the backend reads those from its
standard chain (for S3: the environment, a profile, an instance role), and an option that names a
secret is refused (:func:`check_options`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RegistryError
from ..io.atomic import write_json_atomic

__all__ = ["RegistryEntry", "VolumeRegistry", "check_options", "normalise_url"]

_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LOCAL_SCHEMES = ("file", "local")  # fsspec's local filesystem
# option names that hold a secret (any level of a dotted key): never written to the registry
_SECRET = re.compile(
    r"(^|[._])(secret|password|passwd|token|session_token|sas_token|account_key|credential|credentials|key)$", re.I
)
_ENDPOINT_SCHEMES = ("s3", "s3a", "gs", "gcs")  # backends with an ``endpoint_url`` option


@dataclass(frozen=True)
class RegistryEntry:
    """A registered volume's storage: its URL, and what reaches it besides the credentials chain."""

    url: str
    endpoint: str | None = None  # the store's endpoint URL (S3-compatible servers, a GCS emulator)
    profile: str | None = None  # a named profile of the credentials chain (AWS: ~/.aws/config)
    options: dict[str, Any] = field(default_factory=dict, compare=False)  # more backend options, no secrets

    @property
    def scheme(self) -> str:
        return self.url.partition("://")[0].lower()

    def storage_options(self) -> dict[str, Any]:
        """The fsspec backend's keyword arguments for this entry."""
        out = dict(self.options)
        if self.endpoint:
            out["endpoint_url"] = self.endpoint
        if self.profile:
            out["profile"] = self.profile
        return out

    def to_json(self) -> str | dict[str, Any]:
        if self.endpoint is None and self.profile is None and not self.options:
            return self.url  # (the registry's first format, still read)
        data: dict[str, Any] = {"url": self.url}
        for k in ("endpoint", "profile"):
            if getattr(self, k):
                data[k] = getattr(self, k)
        if self.options:
            data["options"] = self.options
        return data

    @classmethod
    def from_json(cls, value: Any) -> RegistryEntry:
        if isinstance(value, str):
            return cls(value)
        if not isinstance(value, dict) or not isinstance(value.get("url"), str):
            raise ValueError(f"an entry is a URL or an object with a 'url', not {value!r}")
        options = value.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError(f"'options' must be an object, not {options!r}")
        return cls(value["url"], value.get("endpoint") or None, value.get("profile") or None, dict(options))


def check_options(url: str, endpoint: str | None, profile: str | None, options: dict[str, Any]) -> None:
    """Refuse what the registry must not hold or the backend cannot take: an option naming a secret
    (it belongs in the environment or a profile), an endpoint or profile for a scheme without one."""
    scheme = url.partition("://")[0].lower()

    def walk(d: dict[str, Any], prefix: str) -> None:
        for k, v in d.items():
            name = f"{prefix}{k}"
            if _SECRET.search(str(k)):
                raise RegistryError(
                    f"option {name!r} holds a secret, and secrets are never stored in the volume registry: "
                    f"put it in the environment (e.g. AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) or a profile "
                    f"(--profile NAME), where the backend's credentials chain finds it"
                )
            if isinstance(v, dict):
                walk(v, name + ".")

    walk(options, "")
    if endpoint is not None:
        if scheme not in _ENDPOINT_SCHEMES:
            raise RegistryError(
                f"--endpoint applies to s3:// and gs:// volumes, not {scheme}://; pass the backend's own "
                f"option with --option key=value"
            )
        if not re.match(r"https?://[^/\s]+", endpoint):
            raise RegistryError(f"endpoint {endpoint!r} is not an http(s) URL: give e.g. http://127.0.0.1:9000")
    if profile is not None and scheme not in ("s3", "s3a"):
        raise RegistryError(f"--profile applies to s3:// volumes (an AWS profile), not {scheme}://")


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
        """``volume id -> URL`` of every registered volume."""
        return {k: e.url for k, e in self.entries().items()}

    def entries(self) -> dict[str, RegistryEntry]:
        """``volume id -> entry`` of every registered volume."""
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
        out = {}
        for k, v in data.items():
            try:
                out[str(k)] = RegistryEntry.from_json(v)
            except ValueError as exc:
                raise RegistryError(
                    f"volume registry {str(self.file)!r}: the entry of {k!r} is unusable ({exc}); register it "
                    f"again (%air_volume register {k} URL) or remove it from the file"
                ) from None
        return out

    def get(self, volume_id: str) -> str | None:
        """The URL *volume_id* is registered to; a stored URL that is not valid (now) is refused."""
        entry = self.entry(volume_id)
        return None if entry is None else entry.url

    def entry(self, volume_id: str) -> RegistryEntry | None:
        """What *volume_id* is registered to (None: not registered); an unusable URL is refused."""
        entry = self.entries().get(volume_id)
        if entry is not None:
            try:
                normalise_url(entry.url)
            except RegistryError as exc:
                raise RegistryError(
                    f"volume {volume_id!r} is registered to an unusable URL: {exc}; register it again "
                    f"(%air_volume register {volume_id} URL) or remove it from {str(self.file)!r}"
                ) from None
        return entry

    def set(self, volume_id: str, url: str | RegistryEntry) -> str:
        """Register *volume_id* to *url* (normalised, see :func:`normalise_url`), or to an entry with
        its endpoint, profile and options (checked: :func:`check_options`); returns the URL stored."""
        entry = url if isinstance(url, RegistryEntry) else RegistryEntry(url)
        check_options(entry.url, entry.endpoint, entry.profile, entry.options)
        entry = RegistryEntry(normalise_url(entry.url), entry.endpoint, entry.profile, dict(entry.options))
        data = self.entries()
        data[volume_id] = entry
        self._write(data)
        return entry.url

    def remove(self, volume_id: str) -> bool:
        data = self.entries()
        found = data.pop(volume_id, None) is not None
        if found:
            self._write(data)
        return found

    def _write(self, data: dict[str, RegistryEntry]) -> None:
        write_json_atomic(self.file, {k: e.to_json() for k, e in data.items()}, indent=2, sort_keys=True)
