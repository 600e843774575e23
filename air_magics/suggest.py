"""The closest spellings of a word among valid ones, for "did you mean ...?" hints.

Why one rule: a misspelled flag and a misspelled table name get the same kind of hint, and a
second guess is shown only when it is about as close as the first (``--patern``: ``--pattern``, not
``--pattern or --repair``), so what is offered does not depend on what else happens to exist.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest"]

_ABOUT_AS_CLOSE = 0.1


def closest(word: str, candidates: Iterable[str], n: int = 2, cutoff: float = 0.6) -> list[str]:
    """Up to *n* of *candidates* close to *word* (``difflib`` ratio >= *cutoff*), best first; the
    ones after the first only when their ratio is within 0.1 of the best."""
    matches = difflib.get_close_matches(word, list(candidates), n=n, cutoff=cutoff)
    if not matches:
        return []
    ratios = [difflib.SequenceMatcher(None, word, m).ratio() for m in matches]
    return [m for m, r in zip(matches, ratios, strict=True) if r >= ratios[0] - _ABOUT_AS_CLOSE]
