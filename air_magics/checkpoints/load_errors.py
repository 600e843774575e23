"""What a failed save or load tells the user: one line an ``except Exception`` sees, and for a
corrupt file the step to fall back to.

Why: torch's ``CheckpointException`` is a ``BaseException`` carrying every rank's failure, and a
corrupt file found on load is only useful with the step that can be loaded instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from ..errors import CheckpointCorruptError, StorageAccessError
from .volume_writer import CheckpointError

E = TypeVar("E", bound=BaseException)

__all__ = ["corruption_in", "one_line_error", "earlier_step_on_corruption"]


def _inner(exc: BaseException, cls: type[E]) -> E | None:
    """The *cls* error in *exc*, also when torch wrapped it in a ``CheckpointException``."""
    if isinstance(exc, cls):
        return exc
    for inner in getattr(exc, "failures", {}).values():
        err = inner[0] if isinstance(inner, tuple) else getattr(inner, "exc", inner)
        if isinstance(err, cls):
            return err
    return None


def corruption_in(exc: BaseException) -> CheckpointCorruptError | None:
    """The corrupt-file error in *exc*, also when torch wrapped it in a ``CheckpointException``."""
    return _inner(exc, CheckpointCorruptError)


def one_line_error(exc: BaseException, what: str) -> CheckpointError | StorageAccessError:
    """torch's CheckpointException is a BaseException: turn it into an error ``except Exception`` sees
    (the store's refusal as it is: its one line names the URL and the fix)."""
    refused = _inner(exc, StorageAccessError)
    if refused is not None:
        return refused
    text = str(exc).strip().splitlines()
    tail = next((ln for ln in reversed(text) if ln.strip() and not ln.startswith(" ")), type(exc).__name__)
    return CheckpointError(f"{what}: {tail}")


@contextmanager
def earlier_step_on_corruption(steps: Callable[[], list[int]], step: int) -> Iterator[None]:
    """Turn a corrupt-file error (torch may have wrapped it) met while loading *step* into one that
    names the step to load instead (the newest of ``steps()`` before it)."""
    try:
        yield
    except BaseException as exc:
        bad = corruption_in(exc)
        if bad is None:
            raise
        earlier = [s for s in steps() if s < step]
        remedy = (
            f"load an earlier step, e.g. manager.load(state, step={earlier[-1]}) or "
            f"manager.restore(..., step={earlier[-1]})"
            if earlier
            else "no earlier committed step to fall back to: save a new checkpoint"
        )
        raise CheckpointCorruptError(bad.checkpoint, bad.file, bad.problem, remedy) from None
