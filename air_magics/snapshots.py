"""The values events carry: frozen snapshots of a copy, the cache, a loader's timing, an export.

They sit at the bottom of the package (stdlib and :mod:`air_magics.io` only) so that
:mod:`air_magics.events` can name them without importing the layers that produce them; each is
re-exported where it was always found (``air_magics.transfer.CopyProgress``,
``air_magics.cache.CacheInfo``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .io.units import fmt_bytes

__all__ = ["CopyProgress", "CacheInfo", "LoaderTimes", "ExportProgress"]


@dataclass(frozen=True)
class CopyProgress:
    """A snapshot of a running copy."""

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

    @property
    def hit_rate(self) -> float:
        n = self.hits + self.misses
        return self.hits / n if n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(asdict(self), hit_rate=self.hit_rate)

    def __repr__(self) -> str:
        limit = fmt_bytes(self.limit) if self.limit else "none"
        return (
            f"cache {self.root}: {self.entries:,} files, {fmt_bytes(self.bytes)} (limit {limit}, free disk "
            f"{fmt_bytes(self.free_disk)}); hit rate {self.hit_rate:.1%} ({self.hits:,} hits, {self.misses:,} misses); "
            f"{fmt_bytes(self.bytes_hit)} served, {fmt_bytes(self.bytes_fetched)} fetched; {self.evictions:,} evictions"
            + (f"; {self.overflows:,} served past the limit" if self.overflows else "")
        )


@dataclass(frozen=True)
class LoaderTimes:
    """Where a training loop's time went so far: waiting for batches vs. everything else."""

    steps: int
    data_wait: float
    compute: float
    last_wait: float = 0.0

    @property
    def wait_share(self) -> float:
        total = self.data_wait + self.compute
        return self.data_wait / total if total > 0 else 0.0

    def to_dict(self) -> dict[str, float]:
        return {
            "steps": self.steps,
            "data_wait_s": self.data_wait,
            "compute_s": self.compute,
            "wait_share": self.wait_share,
        }


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
        return {k: v for k, v in asdict(self).items() if v is not None}
