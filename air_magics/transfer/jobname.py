"""The name a copy goes by in the sidebar's Jobs when its caller gave none: its source's.

Why: ``%%air_copy`` always named its copy, but a copy made from Python (``air_magics.copy``,
``copy_files``) wrote no status document and never showed in the sidebar. A name made from the
source's last folder and a short hash of what is copied where (``train-3f2a1c``) reads like the
folder the user named, and stays the same for the same copy, so running it again replaces its
entry instead of adding one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

__all__ = ["source_job_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_GLOB = re.compile(r"[*?\[]")


def source_job_name(sources: Sequence[str], dest: str) -> str:
    """``<last plain part of the first source>-<6 hex digits of sources and dest>``: letters,
    digits, ``_``, ``-`` and ``.`` only, at most 64 characters (a status document's name)."""
    parts = [p for p in (sources[0] if sources else "").split("/") if p and not _GLOB.search(p)]
    if len(parts) == 1:  # catalog.schema.volume: the volume's name
        parts = parts[0].split(".")
    stem = _UNSAFE.sub("_", parts[-1]).strip("._-")[:50] if parts else ""
    digest = hashlib.sha256("\0".join([*sources, dest]).encode()).hexdigest()[:6]
    return f"{stem or 'copy'}-{digest}"
