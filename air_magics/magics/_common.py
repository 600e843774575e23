"""Shared by the magics: one-line ``UsageError``s, argument parsing, and the safe ``{name}`` expansion.

IPython expands a magic's line with a formatter that *evaluates* every ``{expression}``, so a file
named ``x{7*6}.txt`` became ``x42.txt`` and ``{__import__('os')...}`` ran. Every magic here opts
out (``@no_var_expand``) and uses :func:`expand_names` instead: ``{name}``/``$name`` of a plain
variable of the notebook are substituted, anything else is left exactly as written.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from IPython.core.error import UsageError

from ..errors import AirError, Interrupted

__all__ = [
    "usage_errors",
    "strip_comment",
    "parse_line",
    "with_arguments",
    "expand_names",
    "output_argument",
    "check_output",
    "store_output",
]

F = TypeVar("F", bound=Callable[..., Any])
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\$\$|\{([^\W\d]\w*)\}|\$([^\W\d]\w*)")


def expand_names(line: str, user_ns: Mapping[str, Any]) -> str:
    """*line* with ``{name}`` and ``$name`` replaced by ``str()`` of that notebook variable.

    Only a plain name is looked up (no attribute, index or call: nothing is evaluated); an
    undefined name stays as written. ``{{``, ``}}`` and ``$$`` give a literal ``{``, ``}``, ``$``.
    """

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name is None:
            return m.group(0)[0]
        return str(user_ns[name]) if name in user_ns else m.group(0)

    return _PLACEHOLDER.sub(sub, line)


def strip_comment(line: str) -> str:
    """*line* without its trailing shell comment: a ``#`` that starts a word, outside quotes.

    As in a shell, ``%air_volume create main.demo.images  # a new volume`` is the command without the
    comment, ``'a #b'`` and ``"a #b"`` keep their ``#`` (quoted), ``x#1`` keeps it (not a word's start),
    ``\\#`` is a literal ``#``, and what follows the comment's ``#`` is never read as quotes (``# a
    catalog's schemas``). An unclosed quote is left for the word splitter to report.
    """
    quote = ""
    escaped = False
    prev = " "
    for i, ch in enumerate(line):
        if escaped:
            escaped, prev = False, "x"  # an escaped space does not end a word
            continue
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                escaped = True
        elif ch == "\\":
            escaped = True
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev.isspace():
            return line[:i].rstrip()
        prev = ch
    return line


def usage_errors(func: F) -> F:
    """The magic's errors as one-line ``UsageError``s: an ``AirError``'s message, and Ctrl-C's.

    Ctrl-C that stopped a copy, pack or export (:class:`~air_magics.errors.Interrupted`) shows its
    one line (what landed, how to resume) instead of a traceback through the engine's threads; a
    Ctrl-C anywhere else in a magic says it was interrupted and nothing was done past that point.
    Either way the cell ends in an error, so "Run All" stops there."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except AirError as exc:
            raise UsageError(str(exc)) from None
        except Interrupted as exc:
            raise UsageError(str(exc)) from None
        except KeyboardInterrupt:
            raise UsageError(f"{_magic_name(func)} interrupted (Ctrl-C); re-run the cell to do it again") from None

    return wrapper  # type: ignore[return-value]


def _magic_name(func: Any) -> str:
    name = getattr(func, "__name__", "the magic")
    return f"%{name}" if name.startswith("air_") else name


def split_words(prog: str, line: str) -> list[str]:
    """*line* split into words as a shell does; an unclosed quote is one ``UsageError`` line."""
    from IPython.utils._process_common import arg_split

    try:
        return arg_split(line, posix=True, strict=True)
    except ValueError as exc:
        raise UsageError(
            f"{prog}: cannot split {line!r} into words ({exc}); close the quote, or escape it with a backslash"
        ) from None


def parse_line(magic_func: Any, line: str, *, stray_words: str = "") -> Any:
    """Like ``parse_argstring`` but options may sit between positionals (``ls -r PATH``).

    A line that cannot be split into words (an unclosed quote) and an unknown option are one-line
    ``UsageError``s; an unknown option gets the closest valid ones ("did you mean") and the list of
    valid options. *stray_words*: what to say of words that are no option where the magic takes no
    positionals (``%air_copy --to X SRC``: where a source goes)."""
    parser = magic_func.parser
    args, extra = parser.parse_known_intermixed_args(split_words(parser.prog, line))
    if extra:
        message = unknown_arguments_message(parser, extra)
        if stray_words and any(not w.startswith("-") for w in extra):
            message = f"{message}. {stray_words}"
        raise UsageError(message)
    return args


# options users bring from other tools (cp, rsync, aws s3 cp), mapped to ours: a spelling match
# would offer "--quiet or --to" for "--dest"
_SYNONYMS = {
    "--dest": "--to",
    "--destination": "--to",
    "--dst": "--to",
    "--target": "--to",
    "--out": "--to",
    "--src": "--from",
    "--source": "--from",
}


def unknown_arguments_message(parser: Any, extra: list[str]) -> str:
    """One line: what was not understood, the closest valid options, and every valid option."""
    from ..suggest import closest

    options = [o for a in parser._actions if a.option_strings for o in a.option_strings if o not in ("-h", "--help")]  # noqa: SLF001 - argparse has no public list of a parser's options
    by_lower = {o.lower(): o for o in reversed(options)}  # "-R" finds "-r"; the long form wins a tie
    hints = []
    for word in extra:
        if word.startswith("-") and word not in options:
            flag = word.split("=", 1)[0]
            synonym = _SYNONYMS.get(flag.lower())
            close = [synonym] if synonym in options else [by_lower[m] for m in closest(flag.lower(), by_lower)]
            if close:
                hints.append(f"{flag}: did you mean {' or '.join(close)}?")
    valid = ", ".join(
        "/".join(a.option_strings) + (f" {a.metavar or a.dest.upper()}" if a.nargs != 0 else "")
        for a in parser._actions  # noqa: SLF001 - argparse has no public list of a parser's options
        if a.option_strings and "-h" not in a.option_strings
    )
    hint = f" ({'; '.join(hints)})" if hints else ""
    return f"{parser.prog}: unrecognized arguments: {' '.join(extra)}{hint}. Valid options: {valid}"


def with_arguments(func: Any, *arguments: Any) -> Any:
    """Apply ``magic_arguments()`` and the given ``argument(...)`` decorators (top to bottom) to *func*."""
    from IPython.core.magic_arguments import magic_arguments

    for deco in reversed((magic_arguments(), *arguments)):
        func = deco(func)
    return func


def output_argument() -> Any:
    """``-o VAR``, the same in every magic: the result goes into notebook variable VAR and is returned."""
    from IPython.core.magic_arguments import argument

    return argument(
        "-o", "--output", metavar="VAR", help="also store the result in notebook variable VAR (it is still returned)"
    )


def check_output(var: str | None) -> None:
    """Refuse a bad ``-o`` before any work is done."""
    if var is not None and (not var.isidentifier() or keyword.iskeyword(var)):
        raise UsageError(f"-o takes a variable name, got {var!r}: write e.g. -o result")


def store_output(magics: Any, var: str | None, value: Any, *, show: bool = True) -> Any:
    """*value*, stored first in notebook variable *var* when ``-o VAR`` was given; without ``-o`` (and
    with *show*), displayed now where the magic line is a statement whose value IPython would drop
    (:func:`~.cell_display.show_in_order`: every line of a cell of magics shows its result, in order)."""
    if var is not None:
        check_output(var)
        magics.shell.user_ns[var] = value
    elif show:
        from .cell_display import show_in_order

        show_in_order(magics.shell, value)
    return value
