"""What an error message may tell a browser: volume paths, never the host's own paths.

Why: the core's messages are written for the notebook user, who owns the machine; they name where
a link points or which host folder was searched. The REST API answers whoever holds a token for
the server, so before a message leaves it, host paths are cut out: the "(through a symlink to X)"
and "(looked in X)" asides go whole, and any other absolute path becomes ``…``. ``/Volumes/...``
paths stay (they are the API's own vocabulary), and so does anything the client itself sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["redact", "HIDDEN"]

HIDDEN = "…"
_ASIDE = re.compile(r"\s*\((?:through a (?:sym)?link to|looked in|resolved to|real path)\b[^)]*\)")
_QUOTED = re.compile(r"""(['"])(/[^'"\n]*)\1""")
_BARE = re.compile(r"""(?<![\w./~:-])/[^\s'"`()<>,;]+""")


def _is_volume_path(text: str) -> bool:
    return text == "/Volumes" or text.startswith("/Volumes/")


def redact(message: str, keep: Iterable[str] = ()) -> str:
    """*message* without host paths; a path that occurs in one of *keep* (the request's own input) stays."""
    kept = [k for k in keep if k]

    def hide(path: str) -> bool:
        return not _is_volume_path(path) and not any(path in k for k in kept)

    out = _ASIDE.sub("", message)
    out = _QUOTED.sub(lambda m: m.group(0) if not hide(m.group(2)) else f"{m.group(1)}{HIDDEN}{m.group(1)}", out)
    return _BARE.sub(lambda m: HIDDEN if hide(m.group(0)) else m.group(0), out)
