"""Glob matching for volume paths in time linear in the path, whatever the pattern.

A glob translated to a backtracking regex is exponential in the number of stars: ``*a*a*a*a*b``
against a 200-character name, or ``**/`` twelve times over a deep tree, never finishes. Here a
pattern is compiled into a small NFA over its tokens and run as a lazily built DFA: each character
of a path is one cached transition (computing a new one costs O(pattern)), so a match costs
O(len(path) x len(pattern)) at worst and usually O(len(path)), with no backtracking at all.

Syntax (unchanged from the regex version it replaces): ``*`` any run of characters within one
segment, ``?`` one character within a segment, ``[..]``/``[!..]`` one character of a class (as in
:mod:`fnmatch`; a class never matches ``/``), ``**`` any run of characters across segments, and
``**/`` zero or more whole folders. A whole path must match. :func:`filter_glob` keeps a path when
it or one of its folders matches, so a matched folder brings every file below it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from operator import attrgetter
from typing import Protocol, TypeVar

__all__ = ["GlobMatcher", "compile_glob", "glob_regex", "has_magic", "split_glob", "filter_glob", "filter_pattern"]

_MAGIC = re.compile(r"[*?\[]")
# DFA transitions kept per pattern; past this the matcher computes new ones without storing them
# (still linear), so a hostile stream of paths cannot grow memory without bound.
_MAX_TRANSITIONS = 1 << 14

# token kinds
_CHAR, _ONE, _CLASS, _STAR, _DSTAR, _DIRS = range(6)


class _HasRel(Protocol):
    rel: str


E = TypeVar("E", bound=_HasRel)
_State = frozenset  # a DFA state: the set of NFA states the text read so far can be in
_NO_ROW: dict[str, _State] = {}  # stands for a state without cached transitions (never written)


def has_magic(segment: str) -> bool:
    """True if *segment* holds a glob character (``*``, ``?`` or ``[``)."""
    return bool(_MAGIC.search(segment))


def split_glob(parts: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split path segments into the literal prefix and the pattern that follows it."""
    for i, seg in enumerate(parts):
        if has_magic(seg):
            return parts[:i], parts[i:]
    return parts, ()


def _class_end(pattern: str, i: int) -> int:
    """Index of the ``]`` closing the class opened at *i*, or -1 (then ``[`` is literal), as fnmatch."""
    j, n = i + 1, len(pattern)
    if j < n and pattern[j] == "!":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    return pattern.find("]", j)


def _class_predicate(text: str) -> Callable[[str], bool]:
    """One-character test for the class *text* (``[...]``): fnmatch's own translation, never ``/``."""
    rx = re.compile(fnmatch.translate(text))
    return lambda ch: ch != "/" and rx.match(ch) is not None


def _tokenize(pattern: str) -> list[tuple[int, object]]:
    tokens: list[tuple[int, object]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            tokens.append((_DIRS, None))
            i += 3
        elif pattern.startswith("**", i):
            tokens.append((_DSTAR, None))
            i += 2
        elif c == "*":
            tokens.append((_STAR, None))
            i += 1
        elif c == "?":
            tokens.append((_ONE, None))
            i += 1
        elif c == "[" and (j := _class_end(pattern, i)) >= 0:
            tokens.append((_CLASS, _class_predicate(pattern[i : j + 1])))
            i = j + 1
        else:
            tokens.append((_CHAR, c))
            i += 1
    return tokens


class GlobMatcher:
    """A compiled glob. ``match(path)`` is true when the whole ``/``-separated *path* matches.

    Thread-safe: the transition cache only ever gains entries equal to what any thread would
    compute, so concurrent callers need no lock.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._accept = len(self._tokens)
        self._trans: dict[_State, dict[str, _State]] = {}
        self._size = 0
        self._start = self._closure((0,))

    def __repr__(self) -> str:
        return f"GlobMatcher({self.pattern!r})"

    # NFA: state i (0 <= i <= accept) waits for token i; state accept+1+i is inside the ``.*/`` of a
    # ``**/`` token i (any character stays, ``/`` may also leave it for i+1).
    def _closure(self, states: Iterable[int]) -> _State:
        out: set[int] = set()
        todo = list(states)
        while todo:
            s = todo.pop()
            if s in out:
                continue
            out.add(s)
            if s < self._accept:
                kind = self._tokens[s][0]
                if kind in (_STAR, _DSTAR, _DIRS):
                    todo.append(s + 1)  # the star (or the optional ``.*/``) matches nothing
                if kind == _DIRS:
                    todo.append(self._accept + 1 + s)
        return frozenset(out)

    def _step(self, state: _State, ch: str) -> _State:
        nxt: list[int] = []
        accept = self._accept
        for s in state:
            if s > accept:  # inside ``**/``
                nxt.append(s)
                if ch == "/":
                    nxt.append(s - accept)  # i.e. token index + 1
                continue
            if s == accept:
                continue
            kind, arg = self._tokens[s]
            if kind == _CHAR:
                if ch == arg:
                    nxt.append(s + 1)
            elif kind == _ONE:
                if ch != "/":
                    nxt.append(s + 1)
            elif kind == _CLASS:
                if arg(ch):  # type: ignore[operator]
                    nxt.append(s + 1)
            elif kind == _STAR:
                if ch != "/":
                    nxt.append(s)
            elif kind == _DSTAR:
                nxt.append(s)
        result = self._closure(nxt)
        if self._size < _MAX_TRANSITIONS:
            self._size += 1
            row = self._trans.setdefault(state, {})
            result = row.setdefault(ch, result)
        return result

    def _run(self, state: _State, text: str) -> _State:
        trans = self._trans
        row = trans.get(state, _NO_ROW)
        for ch in text:
            nxt = row.get(ch)
            if nxt is None:
                if not state:
                    return state  # dead: nothing can match any more
                nxt = self._step(state, ch)
            state = nxt
            row = trans.get(state, _NO_ROW)
        return state

    def match(self, path: str) -> bool:
        """True when all of *path* matches the pattern."""
        return self._accept in self._run(self._start, path)

    def selects(self, rel: str, memo: dict[str, _State | None] | None = None) -> bool:
        """True when *rel* or one of its folders matches (a matched folder brings its files).

        *memo* (folder -> state after ``folder/``, ``None`` once the folder matched) is shared
        across calls by :func:`filter_glob`, so each folder of a listing is read once.
        """
        memo = {} if memo is None else memo
        parent, _, name = rel.rpartition("/")
        state = self._folder_state(parent, memo) if parent else self._start
        if state is None:
            return True
        return self._accept in self._run(state, name)

    def _folder_state(self, folder: str, memo: dict[str, _State | None]) -> _State | None:
        chain: list[str] = []
        cur = folder
        while cur and cur not in memo:
            chain.append(cur)
            cur = cur.rpartition("/")[0]
        state = memo[cur] if cur else self._start
        for d in reversed(chain):
            if state is not None:
                state = self._run(state, d.rpartition("/")[2])
                state = None if self._accept in state else self._run(state, "/")
            memo[d] = state
        return state


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> GlobMatcher:
    """The matcher of a ``/``-separated glob (cached: a matcher's DFA grows with use)."""
    return GlobMatcher(pattern)


glob_regex = compile_glob  # the name callers used when this was a regex; same ``.match(path)`` use


def filter_glob(entries: Iterable[E], pattern: tuple[str, ...]) -> list[E]:
    """Entries whose ``rel``, or one of whose folders, matches the glob segments *pattern*."""
    if not pattern:
        return list(entries)
    matcher = compile_glob("/".join(pattern))
    memo: dict[str, _State | None] = {}
    return [e for e in entries if matcher.selects(e.rel, memo)]


def filter_pattern(entries: Iterable[E], pattern: str | None, rel: Callable[[E], str] = attrgetter("rel")) -> list[E]:
    """Entries a ``pattern`` option selects: the glob matches the path below the listing's root or
    the file's name (``*.jpg``, ``train/**/*.png``); no pattern selects every entry. ``rel``: an
    entry's relative path (``str`` for a listing of names alone)."""
    if not pattern:
        return list(entries)
    matcher = compile_glob(pattern)
    return [e for e in entries if matcher.match(r := rel(e)) or matcher.match(r.rpartition("/")[2])]
