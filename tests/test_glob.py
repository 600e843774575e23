"""Glob matching: the semantics of the regex it replaced, fnmatch within a segment, and no blow-up."""

import fnmatch
import re
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air_magics.volumes import glob as glob_mod
from air_magics.volumes.glob import GlobMatcher, compile_glob, filter_glob, glob_regex, has_magic, split_glob


@dataclass(frozen=True)
class E:
    rel: str


def _reference(pattern: str) -> "re.Pattern[str]":
    """The backtracking regex translation the matcher replaced (exponential, fine for tiny inputs).

    One deliberate change: a class never matches ``/`` (the old ``[!a]`` did).
    """
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and pattern.find("]", i + 1) >= 0:
            j = pattern.find("]", i + 1)
            cls = fnmatch.translate(pattern[i : j + 1])
            out.append("(?!/)" + cls[cls.index("[") : cls.rindex("]") + 1])
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z", re.S)


FILES = [
    "README.txt",
    "train/0/f00.jpg",
    "train/0/f13.jpg",
    "train/1/f10.jpg",
    "train/1/f11.png",
    "train/2/f12.jpg",
    "train/2/deep/x/f14.jpg",
    "val/c.jpg",
    "val/d.txt",
]


@pytest.mark.parametrize(
    "pattern,expected",
    [
        ("*.jpg", []),  # a whole path must match: no file at the top is a jpg
        ("*.txt", ["README.txt"]),
        (
            "**/*.jpg",
            [
                "train/0/f00.jpg",
                "train/0/f13.jpg",
                "train/1/f10.jpg",
                "train/2/deep/x/f14.jpg",
                "train/2/f12.jpg",
                "val/c.jpg",
            ],
        ),
        ("train/*/f1?.jpg", ["train/0/f13.jpg", "train/1/f10.jpg", "train/2/f12.jpg"]),
        ("train/[01]/*", ["train/0/f00.jpg", "train/0/f13.jpg", "train/1/f10.jpg", "train/1/f11.png"]),
        ("train/[!01]/*.jpg", ["train/2/f12.jpg"]),
        ("train/**", [f for f in FILES if f.startswith("train/")]),
        ("**/x/*", ["train/2/deep/x/f14.jpg"]),
        ("*/c.*", ["val/c.jpg"]),
        ("t*n/**/f1[0-2].*", ["train/1/f10.jpg", "train/1/f11.png", "train/2/f12.jpg"]),
    ],
)
def test_whole_path_matches(pattern, expected):
    m = compile_glob(pattern)
    assert sorted(f for f in FILES if m.match(f)) == sorted(expected)


@pytest.mark.parametrize(
    "pattern,text,hit",
    [
        ("**/*.jpg", "a.jpg", True),  # ``**/`` is zero or more folders
        ("**/", "a/", True),
        ("a**/b", "ab", True),  # ``**`` inside a segment still spans segments, as before
        ("a**/b", "axx/y/b", True),
        ("a**b", "a/x/b", True),
        ("***/x", "x", False),  # ``**`` then ``*/``: at least one folder
        ("***/x", "q/x", True),
        ("?", "/", False),
        ("*", "a/b", False),
        ("[!a]", "/", False),  # a class never matches the separator
        ("[!/]x", "ax", True),
        ("[]a]", "]", True),  # fnmatch's class rules (these crashed the regex version)
        ("[]a]", "a", True),
        ("[]", "[]", True),
        ("[!]", "[!]", True),
        ("[z-a]", "z", False),
        ("[a-]", "-", True),
        ("a[", "a[", True),
        ("[^a]", "^", True),
        ("x{7*6}.txt", "x{7*6}.txt", True),
        ("x{7*6}.txt", "x42.txt", False),
        ("", "", True),
        ("", "a", False),
    ],
)
def test_edge_cases(pattern, text, hit):
    assert compile_glob(pattern).match(text) is hit


def test_split_glob_and_has_magic():
    assert split_glob(("a", "b", "*.jpg", "c")) == (("a", "b"), ("*.jpg", "c"))
    assert split_glob(("a", "b")) == (("a", "b"), ())
    assert split_glob(("[x]",)) == ((), ("[x]",))
    assert [has_magic(s) for s in ("a", "a*", "a?", "a[", "a]", "{a}")] == [False, True, True, True, False, False]


def test_matched_folder_brings_its_files():
    entries = [E(f) for f in FILES]
    assert [e.rel for e in filter_glob(entries, ("train", "[01]"))] == [
        "train/0/f00.jpg",
        "train/0/f13.jpg",
        "train/1/f10.jpg",
        "train/1/f11.png",
    ]
    assert [e.rel for e in filter_glob(entries, ("*",))] == FILES  # every top-level name matches
    assert [e.rel for e in filter_glob(entries, ("train", "2", "d*"))] == ["train/2/deep/x/f14.jpg"]
    assert filter_glob(entries, ()) == entries
    assert [e.rel for e in filter_glob([E("")], ("*",))] == [""]  # a single-file listing


def test_glob_regex_is_the_same_matcher():
    assert glob_regex("a/*") is compile_glob("a/*") and isinstance(compile_glob("a"), GlobMatcher)


def test_works_without_the_transition_cache(monkeypatch):
    monkeypatch.setattr(glob_mod, "_MAX_TRANSITIONS", 0)
    m = GlobMatcher("**/f1?.jpg")
    assert m.match("train/2/f12.jpg") and not m.match("train/2/f12.png") and m._trans == {}


def test_concurrent_matching_agrees():
    m = GlobMatcher("**/[a-c]*/**/?x*y")
    texts = [f"{a}/{b}x{c}y" for a in ("a", "b/c", "d") for b in ("q", "bb", "") for c in ("", "/", "z")]
    want = [bool(_reference(m.pattern).match(t)) for t in texts]
    results: list[list[bool]] = []

    def work():
        results.append([m.match(t) for t in texts for _ in range(20)][::20])

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 8


SEG_PAT = st.lists(
    st.sampled_from(["a", "b", "-", "!", "]", "[", "*", "?", "[ab]", "[!a]", "[]a]", "[a-b]", "**"]), max_size=7
).map("".join)
SEG_TEXT = st.text(alphabet="ab-!][", max_size=10)


@settings(max_examples=400, deadline=None)
@given(SEG_PAT, SEG_TEXT)
def test_single_segment_matches_like_fnmatch(pattern, text):
    assert compile_glob(pattern).match(text) == fnmatch.fnmatchcase(text, pattern)


PATH_PAT = st.lists(st.sampled_from(["a", "b", "/", "*", "**", "**/", "?", "[ab]", "[!a]"]), max_size=7).map("".join)
PATH_TEXT = st.text(alphabet="ab/", max_size=10)


@settings(max_examples=400, deadline=None)
@given(PATH_PAT, PATH_TEXT)
def test_paths_match_like_the_regex_it_replaced(pattern, text):
    assert compile_glob(pattern).match(text) == bool(_reference(pattern).match(text))


@settings(max_examples=200, deadline=None)
@given(PATH_PAT, st.lists(st.lists(st.sampled_from(["a", "b", "ab", "ba"]), min_size=1, max_size=4), max_size=8))
def test_filter_keeps_paths_with_a_matching_folder(pattern, paths):
    rels = sorted({"/".join(p) for p in paths})
    rx = _reference(pattern)
    want = [r for r in rels if any(rx.match("/".join(r.split("/")[:i])) for i in range(1, r.count("/") + 2))]
    segs = tuple(pattern.split("/")) if pattern else ()  # no pattern selects everything
    assert [e.rel for e in filter_glob([E(r) for r in rels], segs)] == (want if segs else rels)


def _child_cpu_seconds(code: str) -> float:
    """Run *code* in a fresh interpreter; it prints its result lines, then its CPU seconds last."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    return float(out[-1])


_CAP_S = 5.0  # a guard against exponential blow-up (the regex version took minutes), not a benchmark


@pytest.mark.parametrize(
    "code",
    [
        # 155 s with the backtracking regex
        """
    import time
    from air_magics.volumes.glob import compile_glob
    assert not compile_glob("*a" * 5 + "*b").match("a" * 200)
    assert not compile_glob("*a" * 30 + "*b").match("a" * 4000)
    assert compile_glob("*a" * 30 + "*b").match("a" * 4000 + "b")
    assert not compile_glob("*[ab]?" * 20 + "c").match("ab" * 2000)
    assert not compile_glob("**a" * 20 + "**b").match("a/" * 2000)
    print(time.process_time())
    """,
        # ran past 30 s with the backtracking regex
        """
    import time
    from dataclasses import dataclass
    from air_magics.volumes.glob import compile_glob, filter_glob

    @dataclass
    class E:
        rel: str

    folders = ["/".join(f"d{i}" for i in range(k)) for k in range(1, 31)]
    entries = [E(f"{d}/f{j:03d}") for d in folders for j in range(100)] + [E(folders[-1] + "/zzz")]
    pattern = "**/" * 12 + "zzz"
    assert [e.rel for e in filter_glob(entries, tuple(pattern.split("/")))] == [folders[-1] + "/zzz"]
    m = compile_glob(pattern)
    assert sum(m.match(e.rel[:k]) for e in entries[::50] for k in range(len(e.rel) + 1)) == 1
    print(time.process_time())
    """,
    ],
    ids=["stars-in-a-segment", "double-stars-over-a-deep-tree"],
)
def test_pathological_patterns_stay_fast(code):
    assert _child_cpu_seconds(code) < _CAP_S


def test_a_pattern_selects_by_path_below_the_root_or_by_name():
    from air_magics.volumes.glob import filter_pattern
    from air_magics.volumes.walk import Entry

    rows = [Entry(r, 1, 0.0) for r in ("a.jpg", "train/b.jpg", "train/c.png", "val/x/d.jpg")]
    assert [e.rel for e in filter_pattern(rows, "*.jpg")] == ["a.jpg", "train/b.jpg", "val/x/d.jpg"]  # by name
    assert [e.rel for e in filter_pattern(rows, "train/*")] == ["train/b.jpg", "train/c.png"]  # by path
    assert filter_pattern(rows, None) == rows and filter_pattern(rows, "") == rows
