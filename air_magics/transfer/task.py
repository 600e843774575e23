"""The values the copy engine works with: a task, a failure, a progress snapshot, a report.

They sit at the bottom of :mod:`air_magics.transfer`: the planner produces tasks, the engine and
the per-file copy consume them, and front ends render progress and reports; none of those import
each other through here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..io.units import fmt_bytes, fmt_rate, plural
from ..snapshots import CopyProgress  # the value copy events carry; it lives below the events
from ..volumes.location import Location
from ..volumes.resolved import VolumeFile

__all__ = [
    "CopyTask",
    "Landed",
    "CopyFailure",
    "CopyProgress",
    "CopyReport",
    "SOURCE",
    "DESTINATION",
    "mark_side",
    "side_of",
]

SOURCE, DESTINATION = "source", "destination"
"""The two sides of a copy, as :attr:`CopyFailure.side` names them."""
SIDE_LABELS = {SOURCE: "reading the source", DESTINATION: "writing the destination"}
_SIDE_ATTR = "air_copy_side"


def mark_side(exc: BaseException, side: str) -> None:
    """Record on *exc* that it happened on *side* (:data:`SOURCE` or :data:`DESTINATION`), where it
    happens; a mark made closer to the failure (a source read inside a destination write) is kept."""
    if getattr(exc, _SIDE_ATTR, None) is None:
        try:
            setattr(exc, _SIDE_ATTR, side)
        except AttributeError:  # an exception type without attributes: the side stays unknown
            pass


def side_of(exc: BaseException) -> str | None:
    """The side :func:`mark_side` recorded on *exc*, or ``None`` (it failed outside either side)."""
    return getattr(exc, _SIDE_ATTR, None)


@dataclass(slots=True)
class Landed:
    """What a one-file copy learned on the way, for its caller to use instead of asking again: the
    source's ``mtime`` stamped on the copy (no ``stat`` of the result), and, with ``keep_data``,
    the content when the file was read whole (a cache miss that yields bytes reads the source once
    and the copy never; ``None`` for a file streamed in ranges)."""

    keep_data: bool = False
    data: bytes | None = None
    mtime: float | None = None


@dataclass(frozen=True, slots=True)
class CopyTask:
    """Copy ``file`` (the listing's resolved file: its source and version, ``None`` while not
    known) to ``dst``: the copy engine, the cache and the checkpoint upload share one value of a
    file, :class:`~air_magics.volumes.resolved.VolumeFile`. ``landed``: filled by the copy (see
    :class:`Landed`)."""

    file: VolumeFile
    dst: Location
    landed: Landed | None = None

    @property
    def src(self) -> Location:
        return self.file.src

    @property
    def size(self) -> int | None:
        return self.file.size

    @property
    def mtime(self) -> float | None:
        return self.file.mtime


@dataclass(frozen=True)
class CopyFailure:
    """A file that could not be copied, with the last error and how often it was tried. ``side`` is
    the side that failed, :data:`SOURCE` or :data:`DESTINATION` (``None``: unknown), and ``reason``
    starts with it in words: ``reading the source: ...`` or ``writing the destination: ...``."""

    src: str
    dst: str
    reason: str
    attempts: int
    side: str | None = None


@dataclass
class CopyReport:
    """What a copy did. ``ok`` is False when any file failed."""

    files_total: int = 0
    copied: int = 0
    skipped: int = 0
    failed: list[CopyFailure] = field(default_factory=list)
    bytes_copied: int = 0
    seconds: float = 0.0
    dest: str = ""
    dry_run: bool = False
    workers: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def files_per_second(self) -> float:
        return self.copied / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.bytes_copied / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        verb = "would copy" if self.dry_run else "copied"
        s = (
            f"{verb} {self.copied:,} of {plural(self.files_total, 'file')} ({fmt_bytes(self.bytes_copied)}) to {self.dest} "
            f"in {self.seconds:.2f} s"
        )
        if not self.dry_run and self.copied:
            s += f" ({self.files_per_second:,.0f} files/s, {fmt_rate(self.bytes_copied / max(self.seconds, 1e-9))})"
        if self.skipped:
            s += f"; {self.skipped} unchanged skipped"
        if self.failed:
            s += f"; {len(self.failed)} FAILED"
        return s

    def __repr__(self) -> str:
        return f"<CopyReport: {self.summary()}>"

    def __str__(self) -> str:
        lines = [self.summary()]
        lines += [f"  failed: {f.src} -> {f.dst}: {f.reason} ({f.attempts} attempts)" for f in self.failed[:20]]
        if len(self.failed) > 20:
            lines.append(f"  ... and {len(self.failed) - 20} more (see report.failed)")
        return "\n".join(lines)

    def _repr_pretty_(self, p: object, cycle: bool) -> None:
        """IPython's text display: the failed files too, when there are any."""
        p.text(str(self) if self.failed else repr(self))  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        from html import escape

        color = "#2e7d32" if self.ok else "#c62828"
        rows = "".join(
            f"<tr><td><code>{escape(f.src)}</code></td><td><code>{escape(f.dst)}</code></td><td>{escape(f.reason)}</td></tr>"
            for f in self.failed[:50]
        )
        head = "<tr><th>source</th><th>destination</th><th>what failed</th></tr>"
        table = f"<table>{head}{rows}</table>" if rows else ""
        return f"<div><b style='color:{color}'>{escape(self.summary())}</b>{table}</div>"
