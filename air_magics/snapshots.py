"""The values events carry: frozen snapshots of a copy, the cache, a loader's timing, an export,
a pack run and its report; and :func:`document`, the one way any of them (and any event) becomes
the JSON-ready form that status documents, the REST API and the sidebar's TypeScript types share.

They sit at the bottom of the package (stdlib and :mod:`air_magics.io` only) so that
:mod:`air_magics.events` can name them without importing the layers that produce them; each is
re-exported where it was always found (``air_magics.transfer.CopyProgress``,
``air_magics.cache.CacheInfo``, ``air_magics.shards.PackProgress``).

A document is read off the dataclass itself: each field under its name (``metadata`` may rename it,
``{"key": ...}``, leave it out, :data:`HIDDEN`, or merge a nested value's own document in, made by
:func:`flat`), then the properties named in the class's ``DERIVED``. :func:`document_keys` gives the
same keys from the class alone: what ``tests/test_event_schema.py`` compares the TypeScript
interfaces with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from .io.units import fmt_bytes, plural, share_percent

__all__ = [
    "CopyProgress",
    "CacheInfo",
    "LoaderTimes",
    "ExportProgress",
    "PackProgress",
    "PackReport",
    "HIDDEN",
    "flat",
    "document",
    "document_keys",
]

HIDDEN: Mapping[str, Any] = MappingProxyType({"doc": False})
"""Field metadata: the field is left out of the document."""


def flat(cls: type) -> Mapping[str, Any]:
    """Field metadata: the field's value (a *cls*) contributes its own document's keys in its place."""
    return MappingProxyType({"flat": cls})


def document(value: Any) -> dict[str, Any]:
    """The JSON-ready form of a dataclass instance (see the module docstring for the rules)."""
    out: dict[str, Any] = {}
    for f in fields(value):
        meta = f.metadata
        if meta.get("doc") is False:
            continue
        v = getattr(value, f.name)
        if "flat" in meta:
            out.update(document(v))
        else:
            out[meta.get("key", f.name)] = _plain(v)
    for name in getattr(type(value), "DERIVED", ()):
        out[name] = _plain(getattr(value, name))
    return out


def document_keys(cls: type) -> tuple[str, ...]:
    """The keys :func:`document` writes for an instance of *cls*, from the class alone."""
    keys: list[str] = []
    for f in fields(cls):
        meta = f.metadata
        if meta.get("doc") is False:
            continue
        keys.extend(document_keys(meta["flat"]) if "flat" in meta else (meta.get("key", f.name),))
    return (*keys, *getattr(cls, "DERIVED", ()))


def _plain(v: Any) -> Any:
    if is_dataclass(v) and not isinstance(v, type):
        return document(v)
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


@dataclass(frozen=True)
class CopyProgress:
    """A snapshot of a running copy."""

    DERIVED: ClassVar[tuple[str, ...]] = ("files_done", "files_per_second", "eta")
    files_total: int
    copied: int
    skipped: int
    failed: int
    bytes_total: int
    bytes_done: int
    elapsed: float

    @property
    def files_done(self) -> int:
        return self.copied + self.skipped + self.failed

    @property
    def files_per_second(self) -> float:
        return self.files_done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def bytes_per_second(self) -> float:
        return self.bytes_done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left, from the file rate; ``None`` before the first file lands."""
        rate = self.files_per_second
        return (self.files_total - self.files_done) / rate if rate > 0 else None

    @property
    def fraction(self) -> float:
        return self.files_done / self.files_total if self.files_total else 1.0


@dataclass(frozen=True)
class CacheInfo:
    """A snapshot of the cache: contents, bounds and the statistics all processes add to."""

    DERIVED: ClassVar[tuple[str, ...]] = ("hit_rate",)
    root: str
    entries: int
    bytes: int
    limit: int | None
    reserve: int
    free_disk: int
    hits: int
    misses: int
    bytes_hit: int
    bytes_fetched: int
    evictions: int
    overflows: int = 0  # misses served past a full cache (the overflow window), not kept
    # this process's checks of cached files against their sources (a new process checks once what
    # the cache holds before serving it): files checked, and the seconds those checks took
    revalidated: int = 0
    revalidation_seconds: float = 0.0

    @property
    def hit_rate(self) -> float:
        n = self.hits + self.misses
        return self.hits / n if n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return document(self)

    def __repr__(self) -> str:
        limit = fmt_bytes(self.limit) if self.limit else "none"
        return (
            f"cache {self.root}: {plural(self.entries, 'file')}, {fmt_bytes(self.bytes)} (limit {limit}, free disk "
            f"{fmt_bytes(self.free_disk)}); hit rate {self.hit_rate:.1%} ({self.hits:,} hits, {self.misses:,} misses); "
            f"{fmt_bytes(self.bytes_hit)} served, {fmt_bytes(self.bytes_fetched)} fetched; {self.evictions:,} evictions"
            + (f"; {self.overflows:,} served past the limit" if self.overflows else "")
            + (
                f"; revalidated {self.revalidated:,} files against the volume in {self.revalidation_seconds:.2f} s"
                if self.revalidated
                else ""
            )
        )


@dataclass(frozen=True)
class LoaderTimes:
    """Where a training loop's time went so far: waiting for batches vs. everything else."""

    DERIVED: ClassVar[tuple[str, ...]] = ("wait_share", "wait_percent")
    steps: int
    data_wait: float = field(metadata={"key": "data_wait_s"})
    compute: float = field(metadata={"key": "compute_s"})
    last_wait: float = field(default=0.0, metadata=HIDDEN)
    verdict: str = ""  # the input pipeline's verdict in one line (from the 10th step on)
    stages: Mapping[str, float] = field(default_factory=dict)  # wall seconds per input stage (LoaderTiming.stages)
    # the verdict's kind (air_magics.datasets.verdict.kind_of: warming-up before the 10th step): views show
    # this, never a threshold rule of their own
    verdict_kind: str = ""
    items: int = 0  # items handed out so far (the training chart's items/s)
    read_bytes: int = 0  # bytes the input stages read from storage so far (its MB/s)

    @property
    def wait_share(self) -> float:
        total = self.data_wait + self.compute
        return self.data_wait / total if total > 0 else 0.0

    @property
    def wait_percent(self) -> float:
        """The share as every view shows it (rounded once, to 0.1): what the verdict's kind is decided on."""
        return share_percent(self.wait_share)

    def to_dict(self) -> dict[str, float]:
        return document(self)


@dataclass(frozen=True)
class ExportProgress:
    """What an export has done so far; ``None`` for what it has not reported yet."""

    rows: int = 0
    files: int = 0
    tasks: int | None = None
    tasks_done: int | None = None
    bytes_read: int | None = None
    bytes: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields reported so far (those still ``None`` are left out)."""
        return {k: v for k, v in document(self).items() if v is not None}


@dataclass(frozen=True)
class PackProgress:
    """A pack run so far (reported on the calling thread, at most 10 times a second, and at the end)."""

    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    shards_done: int
    shards_total: int
    seconds: float


@dataclass
class PackReport:
    """What a pack run did. ``shards_written``: new shards written now; ``shards_reused``: complete
    shards a killed run had left, taken as they were; ``shards_kept``: published shards kept."""

    source: str
    dest: str
    files: int = 0
    bytes: int = 0
    shards: int = 0
    shards_written: int = 0
    shards_reused: int = 0
    shards_kept: int = 0
    shards_removed: int = 0
    files_written: int = 0
    bytes_written: int = 0
    generation: int = 0
    unchanged: bool = False
    dry_run: bool = False
    seconds: float = 0.0

    def __str__(self) -> str:
        verb = "would write" if self.dry_run else "wrote"
        if self.unchanged:
            return (
                f"{self.dest}: unchanged, {plural(self.files, 'file')} in {plural(self.shards, 'shard')} (generation "
                f"{self.generation}), nothing written in {self.seconds:.2f} s"
            )
        return (
            f"{self.source} -> {self.dest}: {plural(self.files, 'file')}, {fmt_bytes(self.bytes)} in "
            f"{plural(self.shards, 'shard')} (generation {self.generation}); {verb} "
            f"{plural(self.shards_written, 'shard')} ({plural(self.files_written, 'file')}, "
            f"{fmt_bytes(self.bytes_written)}), kept {self.shards_kept}, reused {self.shards_reused}, "
            f"removed {self.shards_removed}, {self.seconds:.2f} s"
        )

    def __repr__(self) -> str:  # the value a magic returns: the summary, not twelve raw fields
        return f"<PackReport: {self}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))
