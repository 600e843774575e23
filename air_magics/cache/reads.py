"""A cache's face for the input pipeline: resolved files bound to their slots, served warm or fetched.

Why a face of its own: a dataset touches the cache per item, and per item it must enter one
layer once (:mod:`air_magics.datasets.feed`): :meth:`Reads.hit_paths` serves a run of warm items
with one lookup, :meth:`Reads.fetch` / :meth:`Reads.read` a miss, :meth:`Reads.validate` checks
what the cache holds against the sources ahead of the consumer. ``FileCache.reads`` is this
process's (made anew after a fork); users meet the cache's other face, :class:`~.filecache.FileCache`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..io.versions import same_version
from ..transfer import Landed
from ..volumes.filelist import FileList
from ..volumes.resolved import VolumeFile, slot_of
from .entries import Entries
from .hits import HitLog
from .miss import MissPath
from .overflow import OverflowWindow, Residency
from .validate import Validation

__all__ = ["Reads"]


class Reads:
    """The data path over one cache's parts: *files_root* (where slots are), this process's hit
    log, overflow window and miss path, the shared index; *on_validated*: a validation ended."""

    def __init__(
        self,
        files_root: str,
        *,
        hits: HitLog,
        overflow: OverflowWindow,
        miss: MissPath,
        entries: Entries,
        on_validated: Callable[[Validation], None],
    ) -> None:
        self.files_root = files_root
        self._hits, self._overflow, self._miss, self._entries = hits, overflow, miss, entries
        self._on_validated = on_validated

    def bind(self, files: Sequence[VolumeFile]) -> None:
        """Give each file its cache slot (once, when a dataset lists its files); packed members and
        files read in place have none. A :class:`~air_magics.volumes.filelist.FileList` takes its
        folder's slot once (its items make theirs)."""
        root = self.files_root
        if isinstance(files, FileList):
            files.bind(root)
            return
        for f in files:
            if f.member is None:
                f.slot = slot_of(root, f.key)

    def hit(self, f: VolumeFile) -> str | None:
        """*f*'s cached path when this process validated it for *f*'s version and its pin is
        fresh, else ``None``: the warm path, one dictionary lookup and no system call."""
        size = f.size
        if size is None or not self._hits.serve(f.key, size, f.mtime):  # type: ignore[arg-type]
            return None
        self._overflow.handed_out()
        return f.slot

    def hit_paths(self, files: Sequence[VolumeFile], block: Sequence[int]) -> list[str]:
        """The cached paths of ``files[i]``, ``i`` in *block*, from the first, that :meth:`hit`
        serves: a dataset's warm path. A :class:`~air_magics.volumes.filelist.FileList`'s run is
        looked up from its names and versions directly, no item made (why: 0.8 us an item)."""
        if isinstance(files, FileList):
            rels, keys, sizes, mtimes = files.run(block)
            n = self._hits.serve_run(keys, sizes, mtimes)
            paths = files.slots(rels[:n]) if n else []
        else:
            run = [files[i] for i in block]
            n = self._hits.serve_run([f.key for f in run], [f.size for f in run], [f.mtime for f in run])
            paths = [f.slot for f in run[:n]]
        if n:
            self._overflow.handed_out(n)
        return paths

    def validated_here(self, files: Sequence[VolumeFile], i: int) -> bool:
        """Whether this process validated ``files[i]`` at the version the list carries: when
        :meth:`hit` still says None its pin has aged (an epoch longer than ``pin_seconds / 4``),
        and a validation re-pins it in a batch, no fetch needed."""
        if isinstance(files, FileList):
            key, size, mtime = files.key(i), files.sizes[i], files.mtimes[i]
        else:
            f = files[i]
            key, size, mtime = f.key, f.size, f.mtime
        known = self._hits.version(key)
        return known is not None and size is not None and size >= 0 and same_version(*known, size, mtime)  # type: ignore[arg-type]

    def fetch(self, f: VolumeFile, keep: Residency | None = None) -> str:
        """*f*'s cached path for its current version, fetching it on a miss (see :meth:`get`)."""
        local = self._miss.fetch(f, keep)
        self._overflow.handed_out()
        return local

    def hold_ahead(self, n: int) -> None:
        """Paths this process hands out are consumed up to *n* hand-outs later (a DataLoader
        worker's messages wait in the loader's queue): its overflow window keeps every file at least
        that long (see :meth:`.OverflowWindow.hold_ahead`)."""
        self._overflow.hold_ahead(n)

    def read(self, f: VolumeFile, keep: Residency | None = None) -> bytes:
        """*f*'s content for its current version, as :meth:`fetch` makes it local: on a miss the
        bytes the fetch read from the source (the copy is never read back), else the cached file's.
        A dataset's ``output="bytes"`` reads each file once this way."""
        landed = Landed(keep_data=True)
        local = self._miss.fetch(f, keep, landed)
        self._overflow.handed_out()
        if landed.data is not None:
            return landed.data
        with open(local, "rb") as fh:
            return fh.read()

    def validate(
        self,
        files: Sequence[VolumeFile],
        order: Sequence[int],
        *,
        ahead: int = 512,
        trusted_since: float = float("inf"),
    ) -> Validation:
        """Start checking what the cache holds for ``files[i]``, ``i`` in *order*, against the
        sources, wide (the copy engine's concurrency) and at most *ahead* items ahead of the
        consumer; an entry some process checked at or after *trusted_since* (this run's start) is
        taken as checked. *files* are sorted by key, as a dataset's listing is. See
        :class:`~air_magics.cache.validate.Validation`."""
        return Validation(
            self._entries,
            self._hits,
            files,
            order,
            ahead=ahead,
            trusted_since=trusted_since,
            on_done=self._on_validated,
        )
