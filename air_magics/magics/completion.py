"""Tab completion of ``/Volumes/...`` paths after ``%air_volume`` and ``%%air_copy``, and of
``%air_volume``'s command names."""

from __future__ import annotations

import re
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


def complete_command(line: str, symbol: str) -> list[str]:
    """What fits the word being typed on a magic's line: ``%air_volume`` command names
    (``mo<Tab>`` -> ``mount``) as its first argument, and the magic's ``--options`` after ``-``."""
    from . import AirMagics, volume

    words = line.split()
    magic = words[0].lstrip("%") if words else ""
    if magic not in ("air_volume", "air_copy") or (magic == "air_copy" and not line.lstrip().startswith("%%")):
        return []
    if symbol.startswith("-"):
        parser = getattr(AirMagics, magic).parser  # the magic's own options, as declared
        flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
        return [f for f in flags if f.startswith(symbol)]
    second = len(words) == 1 if line[-1:].isspace() else len(words) == 2 and words[1] == symbol
    if magic == "air_volume" and second and not symbol.startswith("/"):
        return [c for c in volume.COMMANDS if c.startswith(symbol)]
    return []


def _completer(_shell: Any, event: Any) -> list[str]:
    symbol = event.symbol or ""
    return complete_command(event.line or "", symbol) or complete_volume_path(symbol)


def _matcher(text: str) -> list[str]:
    """Anywhere in a cell (a %%air_copy body, a string literal), complete what looks like /Volumes/."""
    return complete_volume_path(text) if text.startswith("/Vol") else []


_WORD_START = re.compile(r"""[\s'"(\[,=]""")


def _volume_matcher(context: Any) -> dict[str, Any]:
    """The same, as an IPython matcher (API v2): while the word at the cursor is a ``/Vol...`` path,
    only volume paths are offered; Python names (``dict``, ``dir`` for ``.../d``) are suppressed."""
    from IPython.core.completer import SimpleCompletion

    # Jupyter's token stops at '/' ("d" of ".../d"): take the word before the cursor; the terminal's
    # older API passes the whole path as the token
    token = context.token or ""
    word = token if token.startswith("/Vol") else _WORD_START.split(context.text_until_cursor)[-1]
    if not word.startswith("/Vol"):  # a magic's command name or option: those only, no Python names
        line = context.text_until_cursor.rsplit("\n", 1)[-1]
        symbol = "" if line[-1:].isspace() else line.split()[-1] if line.split() else ""
        names = complete_command(line, symbol)
        if not names:
            return {"completions": []}
        return {
            "completions": [SimpleCompletion(n, type="magic") for n in names],
            "matched_fragment": symbol,
            "suppress": True,
        }
    matches = complete_volume_path(word)
    return {
        "completions": [SimpleCompletion(m, type="path") for m in matches],
        "matched_fragment": word,
        "suppress": True,
    }


def install_completer(ipython: Any) -> None:
    for cmd in ("%air_volume", "%%air_copy", "air_volume"):
        ipython.set_hook("complete_command", _completer, str_key=cmd)
    matchers = ipython.Completer.custom_matchers
    try:  # IPython >= 8.6: a matcher that can suppress the others
        from IPython.core.completer import context_matcher
    except ImportError:  # pragma: no cover - older IPython: volume paths are offered next to Python names
        matcher: Any = _matcher
    else:
        matcher = _V2.setdefault("matcher", context_matcher()(_volume_matcher))
    if matcher not in matchers:
        matchers.append(matcher)


_V2: dict[str, Any] = {}  # one decorated matcher, so loading the extension twice adds it once
