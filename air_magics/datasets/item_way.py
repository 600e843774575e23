"""One file's way to the item ``output`` asks for: chosen once per stream, for both the warm and
the cold path, against :class:`~air_magics.volumes.resolved.MemberReader` for files the cache
does not copy.

Why one table: the output (``path``, ``bytes``, ``file``, or slices of a cached shard for a
loader that copies them out itself) times the file's kind (a plain volume file through the cache,
a packed member, a local file read in place) was written twice, once for items at hand and once
for items fetched, and drifted (a local folder with ``output="file"`` failed on its first warm
item). :func:`item_way` picks the four functions once, so an item pays no branch on ``output``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..io.retry import is_transient
from ..io.stageclock import STAGES
from ..volumes.resolved import MemberReader, VolumeFile

if TYPE_CHECKING:
    from ..cache import FileCache, Residency

__all__ = ["ItemWay", "SkippedFile", "item_way", "fetch_item"]


@dataclass(frozen=True)
class SkippedFile:
    """A file left out after a permanent error (``on_error="skip"``)."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class ItemWay:
    """How a stream turns a file into its item."""

    ready_member: Callable[[MemberReader, int], Any]  # (member, index) -> the item if at hand, else None
    fetch_member: Callable[[MemberReader, int], Any]  # (member, index) -> the item, fetched as needed
    from_path: Callable[[str], Any]  # a plain file's item from its cached path (a warm hit)
    fetch_plain: Callable[[VolumeFile, Residency | None], Any]  # a plain file's item, fetched on a miss
    paths: bool  # the items are the cached paths themselves (a run of hits is one call)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _open(path: str) -> Any:
    return open(path, "rb")  # noqa: SIM115 - the consumer owns the file object


def _same(path: str) -> str:
    return path


def _ready_file(m: MemberReader, i: int) -> io.BytesIO | None:
    data = m.ready_bytes()
    if data is None:
        return None
    f = io.BytesIO(data)
    f.name = m.name  # type: ignore[attr-defined]  # decoders (PIL) guess the format from it
    return f


def item_way(cache: FileCache, output: str, *, slices: bool = False) -> ItemWay:
    """The way for *output* (``"path"``, ``"bytes"``, ``"file"``) through *cache*; *slices*: a
    DataLoader worker hands packed members' bytes out as their place in the cached shard."""
    reads = cache.reads
    if output == "path":
        return ItemWay(lambda m, i: m.ready(), lambda m, i: m.local_path(cache), _same, reads.fetch, True)
    if output == "bytes":
        if slices:
            return ItemWay(
                lambda m, i: m.ready_slice(i),
                lambda m, i: m.read_slice(cache, i) if i >= 0 else m.read_bytes(cache),
                _read_bytes,
                reads.read,  # a miss's bytes as fetched: the copy is not read back
                False,
            )
        return ItemWay(lambda m, i: m.ready_bytes(), lambda m, i: m.read_bytes(cache), _read_bytes, reads.read, False)
    return ItemWay(_ready_file, lambda m, i: m.open(cache), _open, lambda f, keep: _open(reads.fetch(f, keep)), False)


def fetch_item(
    way: ItemWay,
    f: VolumeFile,
    keep: Residency | None,
    i: int,
    *,
    transform: Callable[[Any], Any] | None,
    skip_errors: bool,
) -> Any:
    """File *f* (dataset index *i*, -1: none) as its item, fetched as needed and transformed; with
    *skip_errors* an I/O or transient error makes it a :class:`SkippedFile` instead."""
    try:
        member = f.member
        item = way.fetch_member(member, i) if member is not None else way.fetch_plain(f, keep)
    except Exception as exc:
        if skip_errors and (is_transient(exc) or isinstance(exc, OSError)):
            return SkippedFile(f.key, f"{type(exc).__name__}: {exc}")
        raise
    if transform is None:
        return item
    t0 = perf_counter()
    try:
        return transform(item)
    finally:
        STAGES.add("transform", perf_counter() - t0)
