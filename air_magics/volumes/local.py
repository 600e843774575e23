"""Local folders as a data source (tests, laptops): a plain path or ``file://`` URL, read in place.

``UCVolumeDataset("/home/me/data/train")`` lists the folder like a volume folder (same sorted
order, so the same shuffles, splits and resume points) and hands out the files where they lie:
local disk needs no cache copy. A link leading out of the folder is left out, as in a volume.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import VolumeNotFoundError, VolumePathError
from .glob import filter_glob, filter_pattern, split_glob
from .location import Location
from .path import VolumePath, is_volume_text
from .walk import Entry, scan_local

__all__ = ["InPlace", "local_source", "local_files"]


@dataclass(frozen=True)
class InPlace:
    """A local file served where it lies (the interface a packed member offers the dataset)."""

    path: str

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def ready(self) -> str:
        """The path to hand out now: always available, nothing to fetch."""
        return self.path

    def local_path(self, cache: Any = None) -> str:
        return self.path

    def read_bytes(self, cache: Any = None) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()

    def ready_bytes(self) -> bytes:
        return self.read_bytes()

    def ready_slice(self, item: int) -> bytes:
        """A local file's bytes (slices of a cached shard are a packed member's)."""
        return self.read_bytes()

    def read_slice(self, cache: Any, item: int) -> bytes:
        return self.read_bytes()

    def open(self, cache: Any = None) -> Any:
        return open(self.path, "rb")  # noqa: SIM115 - the caller owns the file object


def local_source(path: Any) -> str | None:
    """The absolute local path *path* names, or ``None`` when it is a volume path.

    Local: a ``file://`` URL, an ``os.PathLike``, or a string that is not a volume path
    (``/Volumes/...``, ``catalog.schema.volume/...``) and exists. Any other string is a
    ``VolumePathError`` naming both forms (a relative path has no default volume outside the magics)."""
    if isinstance(path, VolumePath):
        return None
    text = os.fspath(path) if isinstance(path, os.PathLike) else str(path)
    if text.startswith("file:"):
        url = urlsplit(text)
        if url.netloc not in ("", "localhost") or not url.path.startswith("/") or not text.startswith("file://"):
            raise VolumePathError(f"{text!r} is not an absolute file URL; write file:///absolute/path or a plain path")
        return os.path.abspath(unquote(url.path))
    if is_volume_text(text):  # Path("/Volumes/...") too: a volume path, read through the store
        return None
    text = os.path.expanduser(text)
    fixed = split_glob(tuple(text.split(os.sep)))[0]  # a glob's literal prefix must exist
    if isinstance(path, os.PathLike) or os.path.exists(os.sep.join(fixed) or (os.sep if text[:1] == os.sep else ".")):
        return os.path.abspath(text)
    if os.path.isabs(text):
        raise VolumePathError(
            f"{text!r} is outside /Volumes and is not an existing local folder or file: pass "
            f"/Volumes/<catalog>/<schema>/<volume>/... or an existing local path (or a file:// URL)"
        )
    raise VolumePathError(  # 'train' after `%air_volume use`: that default is the magics' only
        f"{text!r} is neither a volume path nor an existing local folder: pass the full "
        f"/Volumes/<catalog>/<schema>/<volume>/{text} (the default volume of `%air_volume use` applies to the magics only)"
    )


def local_files(path: str, *, recursive: bool = True, pattern: str | None = None) -> list[tuple[str, Location, Entry]]:
    """``(key, location, entry)`` for each file *path* (a folder, a file or a glob) names, sorted by
    key; the key is the file's absolute path. ``pattern`` filters by relative path or name."""
    parts = tuple(p for p in path.split(os.sep) if p)
    fixed, pat = split_glob(parts)
    base = os.sep + os.path.join(*fixed) if fixed else os.sep
    if not os.path.exists(base):
        raise VolumeNotFoundError(f"local path {base!r} does not exist; check it (os.listdir) or pass a /Volumes path")
    if os.path.isdir(base):
        root = base
        entries = scan_local(base, recursive=recursive or bool(pat), with_dirs=False, confine=base)
    else:
        root = os.path.dirname(base)
        st = os.stat(base)
        entries = [Entry("", st.st_size, st.st_mtime)]
    out = []
    for e in filter_pattern(filter_glob(entries, pat), pattern):
        where = os.path.join(base, *e.rel.split("/")) if e.rel else base
        out.append((where, Location(where, root=root), e))
    return sorted(out, key=lambda t: t[0])
