"""Shared by the magics: one-line ``UsageError``s instead of tracebacks, and argument parsing."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from IPython.core.error import UsageError

from ..errors import AirError

F = TypeVar("F", bound=Callable[..., Any])


def usage_errors(func: F) -> F:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except AirError as exc:
            raise UsageError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def parse_line(magic_func: Any, line: str) -> Any:
    """Like ``parse_argstring`` but options may sit between positionals (``ls -r PATH``)."""
    from IPython.utils._process_common import arg_split

    return magic_func.parser.parse_intermixed_args(arg_split(line, posix=True, strict=True))


def with_arguments(func: Any, *arguments: Any) -> Any:
    """Apply ``magic_arguments()`` and the given ``argument(...)`` decorators (top to bottom) to *func*."""
    from IPython.core.magic_arguments import magic_arguments

    for deco in reversed((magic_arguments(), *arguments)):
        func = deco(func)
    return func
