"""A pack run as it goes and when it ends: :class:`PackProgress` (the ``on_progress`` sugar),
:class:`PackReport` (what ``pack`` returns) and :class:`PackEvent`, what ``pack`` emits on
:data:`air_magics.events.channel` (and to its per-call ``listeners``) so widgets, text bars and
logs listen to a pack as they listen to a copy (``air_magics.widgets.pack_progress``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..events import Event
from ..io.units import fmt_bytes

__all__ = ["PackProgress", "PackReport", "PackEvent"]


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
                f"{self.dest}: unchanged, {self.files:,} files in {self.shards} shards (generation "
                f"{self.generation}), nothing written in {self.seconds:.2f} s"
            )
        return (
            f"{self.source} -> {self.dest}: {self.files:,} files, {fmt_bytes(self.bytes)} in {self.shards} shards "
            f"(generation {self.generation}); {verb} {self.shards_written} shards ({self.files_written:,} files, "
            f"{fmt_bytes(self.bytes_written)}), kept {self.shards_kept}, reused {self.shards_reused}, "
            f"removed {self.shards_removed}, {self.seconds:.2f} s"
        )

    def __repr__(self) -> str:  # the value a magic returns: the summary, not twelve raw fields
        return f"<PackReport: {self}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


@dataclass(frozen=True, kw_only=True)
class PackEvent(Event):
    """Progress of one ``pack`` call: ``state`` is ``running``, then ``done`` (with ``report``) or
    ``failed`` (with ``error``). ``job`` is the destination folder."""

    source: ClassVar[str] = "pack"
    progress: PackProgress
    src: str = ""
    dest: str = ""
    engine: str = "local"
    started: float = 0.0
    report: PackReport | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        p = self.progress
        return {
            "kind": "pack",
            "job": self.job,
            "src": self.src,
            "dest": self.dest,
            "engine": self.engine,
            "state": self.state,
            "pid": self.pid,
            "started": self.started,
            "files_done": p.files_done,
            "files_total": p.files_total,
            "bytes_done": p.bytes_done,
            "bytes_total": p.bytes_total,
            "shards_done": p.shards_done,
            "shards_total": p.shards_total,
            "seconds": p.seconds,
            "report": dict(self.report.__dict__) if self.report is not None else None,
            "error": self.error,
            "finished": self.time if self.terminal else None,
        }
