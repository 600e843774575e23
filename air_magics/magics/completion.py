"""Tab completion of ``/Volumes/...`` paths after ``%air_volume`` and ``%%air_copy``."""

from __future__ import annotations

from typing import Any

from ..errors import AirError
from ..volumes import PREFIX, VolumePath
from ._state import store

_MAX = 200


def complete_volume_path(text: str) -> list[str]:
    """Completions for a partial ``/Volumes/...`` path (catalogs, schemas, volumes, then entries)."""
    if not (PREFIX + "/").startswith(text[: len(PREFIX) + 1]) or not text.startswith("/"):
        return []
    if len(text) <= len(PREFIX):
        return [PREFIX + "/"]
    head, _, partial = text.rpartition("/")
    segs = [s for s in head[len(PREFIX) :].split("/") if s]
    st = store()
    try:
        if len(segs) < 3:
            names = sorted(
                {v.volume_id.split(".")[len(segs)] for v in st.volumes() if v.volume_id.split(".")[: len(segs)] == segs}
            )
            return [f"{head}/{n}/" for n in names if n.startswith(partial)][:_MAX]
        entries = st.ls(VolumePath.parse(head))
    except (AirError, OSError):
        return []
    out = [f"{head}/{e.path.name}{'/' if e.is_dir else ''}" for e in entries if e.path.name.startswith(partial)]
    return out[:_MAX]


def _completer(_shell: Any, event: Any) -> list[str]:
    return complete_volume_path(event.symbol or "")


def _matcher(text: str) -> list[str]:
    """Anywhere in a cell (a %%air_copy body, a string literal), complete what looks like /Volumes/."""
    return complete_volume_path(text) if text.startswith("/Vol") else []


def install_completer(ipython: Any) -> None:
    for cmd in ("%air_volume", "%%air_copy", "air_volume"):
        ipython.set_hook("complete_command", _completer, str_key=cmd)
    matchers = ipython.Completer.custom_matchers
    if _matcher not in matchers:
        matchers.append(_matcher)
