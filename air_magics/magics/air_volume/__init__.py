"""``%air_volume``: where volumes live, what a folder holds, create/register/use volumes, the cache,
checkpoints, packing, probing and mounting.

One module per subcommand (``*_cmd.py``), each a :class:`~.command.Command` with its own parser and
its usage line; :data:`COMMANDS` is the table that the magic's help (:func:`usage`), its errors and
completion read, so the usage text exists once.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .._common import check_output, split_words, store_output, unknown_arguments_message
from .cache_cmd import CACHE
from .checkpoints_cmd import CHECKPOINTS
from .command import Command
from .connect_cmd import CONNECT, DISCONNECT
from .ls_cmd import LS
from .mount_cmd import MOUNT, UNMOUNT
from .names_cmd import CREATE, REGISTER, USE
from .overview_cmd import OVERVIEW
from .pack_cmd import PACK
from .probe_cmd import PROBE

__all__ = ["COMMANDS", "OVERVIEW", "command_of", "run", "usage"]

COMMANDS: dict[str, Command] = {
    c.name: c for c in (LS, CREATE, REGISTER, USE, CACHE, CHECKPOINTS, PACK, PROBE, MOUNT, UNMOUNT, CONNECT, DISCONNECT)
}
_VALUED = frozenset({"-o", "--output"})  # options of the bare magic that take a value


def usage() -> str:
    """The magic's help: every subcommand's usage line and summary, from :data:`COMMANDS`."""
    import textwrap

    def entry(left: str, text: str) -> list[str]:
        body = textwrap.wrap(text, 70) or [""]
        first = f"    {left:<36} {body[0]}" if len(left) < 36 else f"    {left}\n    {'':<36} {body[0]}"
        return [first, *(f"    {'':<36} {rest}" for rest in body[1:])]

    lines = entry(OVERVIEW.prog, OVERVIEW.summary)
    for cmd in COMMANDS.values():
        lines += entry(cmd.usage, cmd.summary)
        for flags, text in cmd.option_help():
            lines += entry(f"    {flags}", text)
    lines += entry("... -o VAR", "also store the result in notebook variable VAR")
    return (
        "Browse, inspect, create and register volumes.\n\nCommands and their arguments::\n\n"
        + "\n".join(lines)
        + "\n\nPATH and DIR are /Volumes/catalog/schema/volume/..., catalog.schema.volume/..., or relative to the "
        "default volume (%air_volume use). create, register, use, pack, mount and unmount print one line and give "
        "their value only with -o VAR."
    )


def command_of(words: list[str]) -> tuple[Command, list[str]]:
    """The subcommand a line's words name and the words left for its parser. The first word that is no
    option (nor ``-o``'s value) is the command; none: the overview."""
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word in _VALUED:
            skip = True
            continue
        if word.startswith("-"):
            continue
        cmd = COMMANDS.get(word)
        if cmd is None:
            raise UsageError(
                f"unknown command {word!r} for %air_volume: use one of {', '.join(COMMANDS)} (see %air_volume?)"
            )
        return cmd, words[:i] + words[i + 1 :]
    return OVERVIEW, words


def parse(cmd: Command, words: list[str]) -> Any:
    """*words* through the subcommand's own parser; an option it does not take is one line that says
    which commands take it, or the closest options it has."""
    args, extra = cmd.parser.parse_known_intermixed_args(words)
    if extra:
        flag = next((w.split("=", 1)[0] for w in extra if w.startswith("-")), None)
        owners = [c.name for c in COMMANDS.values() if flag in c.flag_names()] if flag else []
        if owners:
            where = " and ".join(f"`{o}`" for o in owners)
            raise UsageError(
                f"{flag} only applies to {where}, not to {cmd.name or 'the overview'!r} (see %air_volume?)"
            )
        raise UsageError(unknown_arguments_message(cmd.parser, extra))
    cmd.check_count(args.args)
    return args


def run(magics: Any, line: str) -> Any:
    """Run one ``%air_volume`` line: its value, or None for a command that printed its line (no ``-o``)."""
    cmd, words = command_of(split_words("%air_volume", line))
    args = parse(cmd, words)
    check_output(args.output)
    value = cmd.run(magics, args)
    if args.output is None and cmd.printed:
        return None
    return store_output(magics, args.output, value)
