"""Turn the library's errors into one-line ``UsageError``s (no traceback in the notebook)."""
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
