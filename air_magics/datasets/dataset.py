"""``UCVolumeDataset``: a volume's files as an ``IterableDataset`` of local (cached) paths.

Each (rank, worker) stream fetches its files through the shared :class:`~air_magics.cache.FileCache`
with a small thread pool that runs ``prefetch`` files ahead, so a couple of worker processes keep
as many requests in flight as dozens of processes would. Order, splitting and resume are the pure
functions of :mod:`air_magics.datasets.epoch_order`.

Validity guarantee: a yielded path stays in the cache for at least ``cache.pin_seconds`` (30 s by
default) after it is yielded, so the consumer can open it; open it (or copy it) within that time.
When the cache's limit is smaller than the data, the files it holds are kept as a stable resident
subset (this dataset's misses never evict what it read since its previous epoch began) and the rest
are served from the process's overflow window: such a path stays valid until the process has
handed out ``cache.overflow_files`` (1,024) more files, or at least 128 when the window's bytes
(1/8 of the cache limit, shared by all processes) are needed: more than a DataLoader keeps in flight.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..cache import FileCache, Residency
from ..errors import DatasetError
from ..io.pools import threads
from ..io.stageclock import STAGES
from ..volumes.filelist import FileList
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .epoch_order import EpochState, Grid, OrderStateError, stream_items, stream_order
from .epoch_stream import EpochStream
from .feed import Feed, Tally, feed
from .item_way import SkippedFile, fetch_item, item_way
from .listing import list_files, shard_groups
from .prefetch import RUN

if TYPE_CHECKING:
    from ..shards.slices import SliceMaps

__all__ = ["UCVolumeDataset", "SkippedFile"]

_STATE_VERSION = 1
OUTPUTS = ("path", "bytes", "file")
WORKER_PREFETCH = 32  # files in flight per DataLoader worker's stream by default (two workers: 64)


class UCVolumeDataset(EpochStream):
    """Files of one or more volume paths, yielded as local cached paths (or ``transform(path)``).

    ``path``: a folder (as in the reference), a file, a glob (``/Volumes/c/s/v/train/**/*.jpg``) or
    a list of them; a local folder (a plain path or ``file://`` URL) is read in place, uncached.
    ``pattern`` filters by name or relative path; ``recursive=False`` takes a
    folder's direct files only. ``shuffle`` with ``seed`` reshuffles per epoch (``set_epoch``); over
    a packed folder the shuffle is shard-aware: shards in a new order each epoch, members shuffled
    within blocks of 4 shards (a member never leaves its block), so streams read a few shards at a time.
    ``output``: what an item is: ``"path"`` (default, as the reference: a local cached path, valid
    for ``cache.pin_seconds`` after it is yielded), ``"bytes"`` (the file's content) or ``"file"``
    (a read-only binary file object; the caller closes it). Over a packed folder ``"bytes"`` and
    ``"file"`` read each member straight from its cached shard by offset, without a local file per
    member (the fastest way to read packed data); ``"path"`` extracts members to files. Decode in
    ``transform``, which runs on the prefetch threads (in the DataLoader's workers)::

        ds = UCVolumeDataset(folder, output="file", transform=lambda f: decode(PIL.Image.open(f)))

    A file object cannot travel between processes: with a DataLoader's workers, ``"file"`` needs a
    ``transform`` that turns it into a value (a tensor, an array).
    ``transform(item)`` runs in the prefetch threads. ``prefetch``: files in flight per stream, one
    thread each; by default 64 where the loop itself iterates the dataset (as many as a plain
    thread pool keeps) and 32 in each DataLoader worker (two workers keep 64). ``on_error``:
    ``"raise"`` (default)
    stops at a file that keeps failing; ``"skip"`` leaves it out and lists it in ``skipped``.
    """

    batches_in_chunks = True

    def __init__(
        self,
        path: str | VolumePath | Sequence[str | VolumePath],
        *,
        pattern: str | None = None,
        recursive: bool = True,
        shuffle: bool = False,
        seed: int = 0,
        transform: Callable[[str], Any] | None = None,
        cache: FileCache | None = None,
        prefetch: int | None = None,
        on_error: str = "raise",
        store: VolumeStore | None = None,
        output: str = "path",
    ) -> None:
        super().__init__()
        self._tally = Tally()  # what the streams handed out (EpochStream's _yielded and skipped read it)
        if on_error not in ("raise", "skip"):
            raise DatasetError(f"on_error={on_error!r}: use 'raise' or 'skip'")
        if output not in OUTPUTS:
            raise DatasetError(f"output={output!r}: use 'path' (a local cached path), 'bytes' or 'file'")
        if prefetch is not None and (isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 1):
            raise DatasetError(f"prefetch={prefetch!r} must be a whole number of at least 1 (or None: the default)")
        paths = [path] if isinstance(path, (str, VolumePath, os.PathLike)) else list(path)
        if not paths:
            raise DatasetError("UCVolumeDataset needs at least one path, e.g. '/Volumes/main/raw/images/train'")
        self.store = store or (cache.store if cache is not None else VolumeStore.shared())
        self.cache = cache or FileCache(store=self.store)
        # names only: the first item does not wait for a stat of every file; the versions that
        # validate cache hits are found as the stream goes (FileCache.validate)
        # entries any process compared with their sources from now on (this dataset's workers, in
        # a DataLoader) need no second request in another of its processes
        self._trusted_since = time.time()
        t0 = perf_counter()
        self.files = list_files(paths, pattern=pattern, recursive=recursive, store=self.store, stat=False)
        STAGES.add("listing", perf_counter() - t0)
        if not self.files:
            raise DatasetError(
                f"no files in {', '.join(map(str, paths))}"
                + (f" matching {pattern!r}" if pattern else "")
                + "; check the path with %air_volume ls"
            )
        self.cache.reads.bind(self.files)
        self.paths = [str(p) for p in paths]
        self.shuffle, self.seed, self.transform = shuffle, seed, transform
        # files in flight per stream: a DataLoader worker's (the loader sizes its queue by it) and one
        # read in the loop's own process, which alone has to keep as many requests in flight as a
        # plain pool does (at 10 ms: 32 reached 0.7 of a 64-thread pool, 64 reached it)
        self.prefetch = WORKER_PREFETCH if prefetch is None else prefetch
        self._own_prefetch = threads("remote-io") if prefetch is None else prefetch
        self.on_error, self.output = on_error, output
        self._init_stream()
        h = hashlib.sha1()  # of "\n".join(every key)
        if isinstance(self.files, FileList):
            self.files.hash_keys(h)
        else:
            h.update("\n".join(f.key for f in self.files).encode("utf-8", "surrogateescape"))
        self.fingerprint = h.hexdigest()[:16]
        self._groups = shard_groups(self.files)  # packed members: shuffled a few shards at a time
        # the resident subset this dataset's misses must not evict (see FileCache.get's keep)
        # (files are sorted: what the first and last share, every key between shares)
        self._prefix = os.path.commonpath([self.files[0].key, self.files[-1].key])
        self._last_start = 0.0  # when the previous epoch began (0: keep all of the prefix)
        self.validation: Any = None  # this process's latest cache validation (FileCache.validate)

    def __len__(self) -> int:
        return len(self.files)

    @property
    def _yielded(self) -> int:  # EpochStream's count of the current stream's items (skipped included)
        return self._tally.yielded

    @_yielded.setter
    def _yielded(self, n: int) -> None:
        self._tally.yielded = n

    @property
    def skipped(self) -> list[SkippedFile]:
        """The files left out after a permanent error (``on_error="skip"``)."""
        return self._tally.skipped

    @skipped.setter
    def skipped(self, files: list[SkippedFile]) -> None:
        self._tally.skipped = files

    def __getitem__(self, i: int) -> Any:
        """File *i* (in listing order, sorted by volume path) as its local cached path, or
        ``transform(path)``: map-style use, ``ds[0]``, ``ds[-1]``, fetched through the cache now."""
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"UCVolumeDataset indices are integers, got {type(i).__name__} {i!r}")
        n = len(self.files)
        if not -n <= i < n:
            raise IndexError(f"UCVolumeDataset index {i} out of range: it has {n} files (0..{n - 1})")
        way = item_way(self.cache, self.output)
        value = fetch_item(
            way, self.files[i % n], None, -1, transform=self.transform, skip_errors=self.on_error == "skip"
        )
        if isinstance(value, SkippedFile):  # on_error="skip": nothing to hand back for this index
            self.skipped.append(value)
            raise DatasetError(f"file {i % n} ({value.path}) could not be read: {value.reason}")
        return value

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["validation"] = None  # a process's own: threads do not travel
        return state

    def __repr__(self) -> str:
        return f"UCVolumeDataset({self.paths!r}, files={len(self.files)}, shuffle={self.shuffle}, epoch={self.epoch})"

    def plan_root(self) -> Path:
        return self.cache.root

    def default_workers(self) -> int | None:
        """1 over a packed folder read by offset without a transform (a second worker only waits for
        the first one's shards: a cold epoch took 1.5x as long with two), else the loader's default."""
        if self._groups is not None and self.output != "path" and self.transform is None:
            return 1
        return None

    def slice_maps(self) -> SliceMaps | None:
        """The loader's reader of this dataset's :class:`~air_magics.shards.MemberSlice` items
        (packed members with ``output="bytes"``): a member whose cached shard is gone by then is
        read again through this dataset."""
        if self._groups is None or self.output != "bytes":
            return None
        from ..shards.slices import SliceMaps

        files, cache = self.files, self.cache
        return SliceMaps(lambda i: files[i].member.read_bytes(cache))

    # -- epochs and state ---------------------------------------------------------------------------
    def _epoch_state(self) -> EpochState:
        base = self._resume
        if base is not None and base.epoch == self.epoch:
            return replace(base, segments=list(base.segments), groups=self._groups)
        return EpochState(self.seed, self.epoch, len(self.files), self.shuffle, self.fingerprint, groups=self._groups)

    def state_dict(
        self, delivered: dict[int, int] | None = None, grid: Grid | None = None, epoch_done: bool = False
    ) -> dict[str, Any]:
        """Progress of the current epoch. Iterated directly, this counts what this process yielded;
        the :class:`~air_magics.data.DataLoader` passes what it *delivered* from its workers. With
        ``torch.distributed`` initialised it is a collective: every rank's progress is gathered, so
        the state can resume on any grid."""
        st = self._state_now(delivered, grid, epoch_done)
        return {"version": _STATE_VERSION, "paths": self.paths, **st.to_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`, on the same or a different grid."""
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise DatasetError(
                f"not a UCVolumeDataset state (version {state.get('version') if isinstance(state, dict) else state!r}); "
                f"pass what state_dict() returned"
            )
        st = self._parse_state(state)
        if st.fingerprint != self.fingerprint or st.n != len(self.files):
            raise DatasetError(
                f"state was saved for other files ({st.n} files, fingerprint {st.fingerprint}) than this dataset's "
                f"({len(self.files)} files, fingerprint {self.fingerprint}, paths {self.paths}); build the dataset "
                f"with the same paths and pattern, or start fresh"
            )
        self._check_order(st)
        self.epoch, self._resume = st.epoch, st

    # -- iteration ----------------------------------------------------------------------------------
    def _plan_items(self) -> tuple[Grid, int, Sequence[int], bool]:
        start = self.start_stream()
        grid, s, st = start.grid, start.stream, start.state
        try:
            items = (
                stream_items(st, grid, s)
                if st.segments
                else stream_order(
                    len(self.files),
                    s,
                    grid.streams,
                    seed=self.seed,
                    epoch=self.epoch,
                    shuffle=self.shuffle,
                    groups=self._groups,
                    shuffler=st.shuffler,
                )
            )
        except OrderStateError as exc:
            raise DatasetError(str(exc)) from None
        return grid, s, items, start.in_worker

    def __iter__(self) -> Iterator[Any]:
        # the stream is planned when its first item is asked for (iter() alone starts nothing), and
        # its items pass through no generator of this class (see feed.feed)
        return feed(self._open_stream)

    def _open_stream(self) -> Feed:
        """This process's stream of the epoch, ready to be handed out."""
        grid, stream, items, in_worker = self._plan_items()
        # in a DataLoader worker: lists of the items that are ready (up to _chunk, a multiple of the
        # loader's batch size but at the end), so one message carries many items warm and the first
        # item leaves at once cold
        att = self.attached
        chunk, batch = (att.chunk, att.batch) if in_worker else (0, 1)
        depth = self.prefetch if in_worker else self._own_prefetch
        if in_worker:  # a path stays valid while it waits in the worker's messages (issue 49 item 7)
            self.cache.reads.hold_ahead(att.queued + depth + RUN)
        # what this process read since its previous epoch began stays resident through this one
        # (with persistent workers the loader's clock, so a worker that started late keeps what the
        # others fetched early in the previous epoch)
        keep, self._last_start = Residency(self._prefix, self._last_start), self._started or time.time()
        files, cache, output = self.files, self.cache, self.output
        if output == "file" and in_worker and self.transform is None:
            raise DatasetError(
                "output='file' items cannot leave a DataLoader worker (a file object does not pickle): pass "
                "transform=... to turn each into a value there, use output='bytes', or num_workers=0"
            )
        if self._groups is not None:  # packed: fetch this stream's shards ahead, in the order it needs them
            self._plan_shards(items)
        if self.validation is not None:
            self.validation.close()
        validation = self.validation = cache.reads.validate(
            files, items, ahead=max(512, 4 * depth), trusted_since=self._trusted_since
        )
        # a loader that reads packed members out of the cached shards itself gets their places
        slices = att.slices and in_worker and output == "bytes" and self.transform is None
        return Feed(
            files=files, items=items, cache=cache, way=item_way(cache, output, slices=slices),
            transform=self.transform, skip_errors=self.on_error == "skip", keep=keep, validation=validation,
            tally=self._tally, prefetch=depth, chunk=chunk, batch=batch, timed=in_worker,
            packed=self._groups is not None,
        )  # fmt: skip

    def _plan_shards(self, items: Sequence[int]) -> None:
        """Each packed folder's shards in the order this stream first needs them (its reader then
        keeps a few fetches ahead of the stream)."""
        plans: dict[int, tuple[Any, list[int]]] = {}
        for i in items:
            m = self.files[i].member
            plans.setdefault(id(m.folder), (m.folder, []))[1].append(m.shard)
        for folder, shards in plans.values():
            folder.plan_reads(self.cache, list(dict.fromkeys(shards)), paths=self.output == "path")
