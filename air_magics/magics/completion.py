"""Tab completion for the magics and for volume paths anywhere in a cell.

- ``/Volumes/...`` paths: catalogs, schemas, volumes, then entries (after a magic, in a string);
- ``volumes://...`` URLs inside a Python string, the same way;
- ``%air_volume``: command names, ``use`` a volume name (``main.demo.images``), and paths relative
  to the default volume once ``%air_volume use`` set one (``ls sub<Tab>``);
- ``%air_volume``, ``%%air_copy``, ``%air_table``: the magic's own ``--options`` after ``-``;
- ``%air_table NAME``: table names, only from a Spark session this process already has (a ``spark``
  in the notebook or the active Spark Connect session): completion never imports pyspark nor
  starts a server, and a slow server is given up on after :data:`TABLES_TIMEOUT` seconds.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from typing import Any

from ..errors import AirError
from ..volumes import PREFIX, VolumePath
from ._state import store

__all__ = [
    "complete_volume_path",
    "complete_volumes_url",
    "complete_command",
    "complete_line",
    "complete_table",
    "install_completer",
    "TABLES_TIMEOUT",
]

_MAX = 200
URL = "volumes://"
TABLES_TIMEOUT = 2.0  # seconds a Tab waits for a table listing
_TABLES_TTL = 30.0  # a listing is reused this long (a Tab per keystroke must not ask Spark each time)
_MAGICS = ("air_volume", "air_copy", "air_table")


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


def complete_volumes_url(text: str) -> list[str]:
    """Completions for a partial ``volumes://catalog/schema/volume/...`` URL (the fsspec form)."""
    if not text.startswith(URL):
        return [URL] if URL.startswith(text) and text else []
    return [URL + m[len(PREFIX) + 1 :] for m in complete_volume_path(PREFIX + "/" + text[len(URL) :])]


def _relative(text: str, default: VolumePath | None) -> list[str]:
    """Entries of the default volume for a relative path (``sub/fi`` -> ``sub/file.txt``)."""
    if default is None or text.startswith(("/", "~", ".")):
        return []
    head, slash, partial = text.rpartition("/")
    try:
        entries = store().ls(VolumePath.parse(head or ".", default=default))
    except (AirError, OSError):
        return []
    base = head + slash
    out = [f"{base}{e.path.name}{'/' if e.is_dir else ''}" for e in entries if e.path.name.startswith(partial)]
    return out[:_MAX]


def _volume_names(text: str) -> list[str]:
    """Volume names (``catalog.schema.volume``) that start with *text*, for ``%air_volume use``."""
    try:
        return [v.volume_id for v in store().volumes() if v.volume_id.startswith(text)][:_MAX]
    except (AirError, OSError):
        return []


def _flags(magic: str, text: str, line: str = "") -> list[str]:
    if magic == "air_volume":  # the options of the subcommand on the line (none yet: the overview's)
        from IPython.core.error import UsageError

        from .air_volume import OVERVIEW, command_of

        try:
            cmd = command_of(line.split()[1:])[0]
        except UsageError:
            cmd = OVERVIEW
        return [f for f in cmd.flag_names() if f.startswith("--") and f.startswith(text)]
    from IPython import get_ipython

    shell = get_ipython()  # the magic as registered (this package's __init__ imports this module)
    registered = shell.magics_manager.magics["line"].get(magic) if shell is not None else None
    parser = getattr(registered, "parser", None)  # the magic's own options, as declared
    if parser is None:
        return []
    flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]  # noqa: SLF001 - argparse has no public list of a parser's options
    return [f for f in flags if f.startswith(text)]


def _magic_of(line: str) -> str | None:
    words = line.split()
    if not words or not words[0].startswith("%"):
        return None
    magic = words[0].lstrip("%")
    if magic not in _MAGICS or (magic == "air_copy" and not words[0].startswith("%%")):
        return None
    return magic


def complete_command(line: str, symbol: str) -> list[str]:
    """What fits the word being typed on a magic's line: ``%air_volume`` command names
    (``mo<Tab>`` -> ``mount``) as its first argument, and the magic's ``--options`` after ``-``."""
    from .air_volume import COMMANDS

    magic = _magic_of(line)
    if magic is None:
        return []
    if symbol.startswith("-"):
        return _flags(magic, symbol, line)
    words = line.split()
    second = len(words) == 1 if line[-1:].isspace() else len(words) == 2 and words[1] == symbol
    if magic == "air_volume" and second and not symbol.startswith("/"):
        return [c for c in COMMANDS if c.startswith(symbol)]
    return []


def complete_line(line: str, word: str, shell: Any = None) -> tuple[str, list[str], bool] | None:
    """``(kind, completions, exclusive)`` for *word*, the word before the cursor on *line* (the
    current line of a cell), or ``None`` when it is none of ours. ``exclusive``: offer only these
    (no Python names, no files). *shell*: the IPython shell (the default volume, a ``spark``)."""
    if word.startswith("/Vol"):
        return "path", complete_volume_path(word), True
    quoted = line[: len(line) - len(word)][-1:] in ("'", '"')
    if quoted and word and URL.startswith(word[: len(URL)]):
        if word.startswith("volumes:/"):
            return "path", complete_volumes_url(word), True
        if len(word) >= 3:  # 'vol' in a string: offer the scheme beside the files IPython finds
            return "path", complete_volumes_url(word), False
    magic = _magic_of(line)
    if magic is None:
        return None
    if word.startswith("-"):
        return "option", _flags(magic, word, line), True
    names = complete_command(line, word)
    if names:
        return "command", names, True
    args = line.split()[1:]
    if word and args and args[-1] == word:
        args = args[:-1]
    positional = [a for a in args if not a.startswith("-")]
    if magic == "air_volume" and positional:
        from .air_volume import COMMANDS

        if positional[0] == "use" and len(positional) == 1:
            return "volume", _volume_names(word), True
        if positional[0] in COMMANDS and COMMANDS[positional[0]].paths:
            return "path", _relative(word, _default_volume(shell)), True
    if magic == "air_table" and not args and not word.startswith(("{", "$")):
        return "table", complete_table(word, _user_ns(shell)), True
    return None


def _default_volume(shell: Any) -> VolumePath | None:
    magics = getattr(shell, "magics_manager", None)
    magics = magics.registry.get("AirMagics") if magics is not None else None
    text = getattr(magics, "default_volume", "") or ""
    try:
        return VolumePath.parse(text) if text else None
    except AirError:
        return None


def _user_ns(shell: Any) -> dict[str, Any]:
    return getattr(shell, "user_ns", None) or {}


_TABLES: dict[int, tuple[float, list[str]]] = {}  # id(session) -> (when listed, names)


def _existing_session(user_ns: dict[str, Any]) -> Any:
    """A Spark session this process already has, or None: never imports pyspark, never starts one."""
    spark = user_ns.get("spark")
    if spark is not None and hasattr(spark, "catalog") and hasattr(spark, "sql"):
        return spark
    connect = sys.modules.get("pyspark.sql.connect.session")
    if connect is None:
        return None
    try:
        return connect.SparkSession.active()
    except Exception:  # noqa: BLE001 - none active: pyspark says so with an error
        return None


def complete_table(text: str, user_ns: dict[str, Any] | None = None) -> list[str]:
    """Table names (``catalog.schema.table``) starting with *text*, from a session that already exists
    (:func:`_existing_session`) through :func:`air_magics.tables.list_tables`; none otherwise. The
    listing is reused for a while and abandoned after :data:`TABLES_TIMEOUT` seconds."""
    spark = _existing_session(user_ns or {})
    if spark is None:
        return []
    now = time.monotonic()
    hit = _TABLES.get(id(spark))
    if hit is None or now - hit[0] > _TABLES_TTL:
        names = _list_tables(spark)
        if names is None:
            return []
        hit = _TABLES[id(spark)] = (now, names)
    return [n for n in hit[1] if n.startswith(text)][:_MAX]


def _list_tables(spark: Any) -> list[str] | None:
    from ..tables import list_tables

    out: list[list[str]] = []

    def run() -> None:
        try:
            out.append(list_tables(user_ns={"spark": spark}))  # this session: nothing is started
        except Exception:  # noqa: BLE001 - a Tab never raises; no names is the answer
            pass

    worker = threading.Thread(target=run, name="air-complete-tables", daemon=True)
    worker.start()
    worker.join(TABLES_TIMEOUT)
    return out[0] if out else None


def _completer(shell: Any, event: Any) -> list[str]:
    """The older hook API (``complete_command``): the terminal passes the whole token."""
    symbol = event.symbol or ""
    found = complete_line(event.line or "", symbol, shell)
    return found[1] if found else []


_WORD_START = re.compile(r"""[\s'"(\[,=]""")


def _matcher(text: str) -> list[str]:
    """Anywhere in a cell (a %%air_copy body, a string literal), complete what looks like /Volumes/."""
    return complete_volume_path(text) if text.startswith("/Vol") else []


def _volume_matcher(context: Any) -> dict[str, Any]:
    """:func:`complete_line` as an IPython matcher (API v2): where the word at the cursor is ours,
    only our completions are offered (no ``dict``/``dir`` for ``.../d``, no builtins after ``--``)."""
    from IPython import get_ipython
    from IPython.core.completer import SimpleCompletion

    # Jupyter's token stops at '/' ("d" of ".../d"): take the word before the cursor; the terminal's
    # older API passes the whole path as the token
    token = context.token or ""
    text = context.text_until_cursor
    word = token if token.startswith("/Vol") else _WORD_START.split(text)[-1]
    line = text.rsplit("\n", 1)[-1]
    found = complete_line(line, word, get_ipython())
    if found is None:
        return {"completions": []}
    kind, names, exclusive = found
    return {
        "completions": [SimpleCompletion(n, type=kind) for n in names],
        "matched_fragment": word,
        "suppress": exclusive,
    }


def install_completer(ipython: Any) -> None:
    for cmd in ("%air_volume", "%%air_copy", "air_volume", "%air_table", "air_table"):
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
