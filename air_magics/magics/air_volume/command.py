"""One ``%air_volume`` subcommand: its usage line, its options, its parser and what it runs.

Why: every subcommand owns its parser, so an option it does not take is refused by that parser (no
cross-command flag checks), and its usage text exists once, here, read by the magic's help
(``%air_volume?``), its errors and completion alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Command", "Option", "Text", "option"]


@dataclass(frozen=True)
class Option:
    """One ``--flag`` of a subcommand: argparse's ``add_argument`` arguments."""

    flags: tuple[str, ...]
    kwargs: dict[str, Any]


def option(*flags: str, **kwargs: Any) -> Option:
    """An :class:`Option`, written as ``parser.add_argument`` would take it."""
    return Option(flags, kwargs)


@dataclass(frozen=True)
class Command:
    """A subcommand of ``%air_volume``.

    ``args``: the positionals' usage (``"SRC DEST"``), ``nargs``: how many it takes (lo, hi),
    ``summary``: one line for the help, ``run(magics, args)``: the work, ``printed``: it prints one line and
    returns its value only with ``-o VAR``, ``paths``: its positionals are volume paths (completion)."""

    name: str
    args: str
    nargs: tuple[int, int]
    summary: str
    run: Callable[[Any, Any], Any]
    options: tuple[Option, ...] = ()
    printed: bool = False
    paths: bool = False
    notes: tuple[str, ...] = field(default=())

    @functools.cached_property
    def parser(self) -> Any:
        """Its own argparse parser (IPython's, so a bad line is a ``UsageError``, never an exit)."""
        from IPython.core.magic_arguments import MagicArgumentParser

        parser = MagicArgumentParser(prog=self.prog, description=self.summary)
        parser.add_argument("args", nargs="*", metavar=self.args or "-", help=argparse_safe(self.args))
        for opt in self.options:
            parser.add_argument(*opt.flags, **opt.kwargs)
        parser.add_argument(
            "-o",
            "--output",
            metavar="VAR",
            help="also store the result in notebook variable VAR (it is still returned)",
        )
        return parser

    @property
    def prog(self) -> str:
        return f"%air_volume {self.name}" if self.name else "%air_volume"

    @property
    def usage(self) -> str:
        """``%air_volume NAME ARGS [--flag X] ...``: the one usage line of the subcommand."""
        flags = " ".join(f"[{_flag_usage(o, min(o.flags, key=len))}]" for o in self.options)
        return " ".join(w for w in (self.prog, self.args, flags) if w)

    def option_help(self) -> list[tuple[str, str]]:
        """``("-r/--recursive", "list every file below PATH")`` for each of its options."""
        return [(_flag_usage(o, "/".join(o.flags)), o.kwargs.get("help", "")) for o in self.options]

    def flag_names(self) -> list[str]:
        """Every option string it takes (``-r``, ``--recursive``, ..., ``-o``, ``--output``)."""
        return [f for o in self.options for f in o.flags] + ["-o", "--output"]

    def check_count(self, args: list[str]) -> None:
        from IPython.core.error import UsageError

        lo, hi = self.nargs
        if not lo <= len(args) <= hi:
            raise UsageError(f"{self.prog} takes {self.args or 'no arguments'}; got {' '.join(args) or 'nothing'}")


def argparse_safe(text: str) -> str:
    return text.replace("%", "%%")


def _flag_usage(opt: Option, flag: str = "") -> str:
    flag = flag or max(opt.flags, key=len)
    if opt.kwargs.get("action") in ("store_true", "store_false"):
        return flag
    return f"{flag} {opt.kwargs.get('metavar') or flag.lstrip('-').upper()}"


class Text(str):
    """Shown as-is (no quotes) at the prompt."""

    def __repr__(self) -> str:
        return str(self)
