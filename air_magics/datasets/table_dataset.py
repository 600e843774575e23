"""``UCDataset``: the rows of a table, streamed from its Parquet files into PyTorch in batches.

No Spark session in the training process: an embedded-store table is read from its warehouse
folder, an export (or any folder of Parquet files) from a volume through the cache, or from a
local folder in place. A table on a remote Spark Connect server is exported to a volume first
(``tables.export_table(name, "/Volumes/...")``) and that folder is passed here.

Rows are split evenly over ranks x DataLoader workers, shuffled per epoch at row-group
granularity plus a bounded in-memory window, and the position is exact across a checkpoint on any
grid (rows delivered, not prefetched). The splitting and resume rules are the pure functions of
:mod:`air_magics.datasets.row_plan`; reading and batch conversion are in :mod:`air_magics.tablefiles.scan` (batches: :mod:`.row_batches`).

A folder with a ``_delta_log`` is a Delta table: one snapshot's live files are read
(:mod:`air_magics.tablefiles.delta`), the version is part of the state, and a resume reads that same version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from ..cache import FileCache
from ..errors import DatasetError
from ..tablefiles.delta import DeltaError
from ..tablefiles.filter import FilterError, filter_columns, parse_filter
from ..tablefiles.resolve import Table, TableSchemaError, check_current, resolve
from ..tablefiles.scan import count_rows, count_view_rows
from ..volumes.store import VolumeStore
from .chunking import chunked
from .epoch_order import EpochState, Grid, OrderStateError, with_progress
from .epoch_stream import EpochStream
from .row_batches import iter_batches
from .row_plan import StreamPlan, stream_plan

__all__ = ["UCDataset", "TableSchemaError", "FilterError", "DeltaError"]

_STATE_KIND = "air_magics.UCDataset"
_STATE_VERSION = 1
_CHUNK = 4  # batches per DataLoader worker message at most: a batch is already many rows


def _unknown_columns(bad: list[str], have: list[str]) -> DatasetError:
    import difflib

    near = {b: difflib.get_close_matches(b, have, n=1) for b in bad}
    hints = "".join(f" ({b!r}: did you mean {n[0]!r}?)" for b, n in near.items() if n)
    return DatasetError(f"columns {bad} are not in the table{hints}; it has {have}")


class UCDataset(EpochStream):
    """Batches of a table's rows as dicts: numeric and boolean columns as tensors, others as lists.

    ``source``: a table of the embedded store (``main.demo.features``), a volume folder of Parquet
    files (``/Volumes/main/demo/exports/features``) or a local folder. ``columns`` selects columns
    (read from Parquet only those); ``filter`` keeps rows: a SQL condition such as
    ``"label = 1 AND x1 > 0"`` (comparisons, AND/OR/NOT, IN, BETWEEN, IS NULL; parsed, never
    executed) or a ``pyarrow.compute`` expression. ``shuffle`` with ``seed`` reshuffles per epoch
    (``set_epoch``): the order of row groups, and rows within windows of ``window`` rows.
    ``len(ds)`` is the number of rows (after the filter) per epoch over all ranks. Use it with
    ``air_magics.data.DataLoader(ds, batch_size=None)`` (the dataset batches itself).

    A Delta table (a folder with ``_delta_log``; needs ``air_magics[delta]``) is read at one
    snapshot: the latest, or ``version=N`` / ``timestamp=`` (``datetime`` or ISO 8601) for time
    travel. ``ds.version`` is the version read; the state records it and a resume reads it again
    (refused when it was vacuumed). ``refresh=True`` moves each new epoch (``set_epoch``) to the
    latest version; without it every epoch reads the same snapshot.
    """

    def __init__(
        self,
        source: str,
        columns: Sequence[str] | None = None,
        filter: Any = None,  # noqa: A002 - the reference's name
        batch_size: int = 1024,
        shuffle: bool = False,
        seed: int = 0,
        *,
        window: int = 16384,
        cache: FileCache | None = None,
        store: VolumeStore | None = None,
        version: int | None = None,
        timestamp: Any = None,
        refresh: bool = False,
    ) -> None:
        super().__init__()
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise DatasetError(f"batch_size={batch_size!r} must be a positive integer")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise DatasetError(f"window={window!r} must be a positive number of rows")
        if refresh and (version is not None or timestamp is not None):
            raise DatasetError("refresh=True reads the latest version at each epoch; it takes no version=/timestamp=")
        self.store = store or (cache.store if cache is not None else VolumeStore.shared())
        self.refresh, self.pinned = bool(refresh), version is not None or timestamp is not None
        table = resolve(source, self.store, version=version, timestamp=timestamp)
        self.table = table
        self.cache = cache or (FileCache(store=self.store) if source.strip().startswith("/Volumes/") else None)
        names = list(self.table.schema.names)
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.split(",") if c.strip()]
        self.columns = list(columns) if columns else names
        if not self.columns or (bad := [c for c in self.columns if c not in names]):
            raise _unknown_columns(bad if self.columns else ["(none)"], names)
        self.filter_text = filter if isinstance(filter, str) else (str(filter) if filter is not None else None)
        self._expr = parse_filter(filter, self.table.schema)
        self._read_cols = list(dict.fromkeys(self.columns + filter_columns(self._expr, names)))
        import pyarrow as pa

        self.out_schema = pa.schema([self.table.schema.field(c) for c in self.columns])
        self.source, self.batch_size, self.shuffle, self.seed, self.window = source, batch_size, shuffle, seed, window
        self._use(table)
        self.prefetch = 64  # batches a DataLoader worker keeps queued (DataLoader sizes prefetch_factor by it)
        self._init_stream()  # _yielded counts batches; the state converts them to rows (_progress)

    @classmethod
    def from_export(
        cls,
        table: str,
        dest: str,
        *,
        remote: str | None = None,
        mode: str = "overwrite",
        via: str = "auto",
        **kwargs: Any,
    ) -> UCDataset:
        """A snapshot of *table* (on a remote ``sc://`` server, or the embedded store) exported to the
        volume folder *dest* with :func:`air_magics.tables.export_table` (``via``: who writes the
        files, see there), then read from there through the cache. Only this (main) process talks
        to Spark; workers read the files, and a server that goes away later does not matter."""
        from ..tables import export_table

        result = export_table(table, dest, mode=mode, remote=remote, via=via)
        return cls(result.dest, **kwargs)

    def _use(self, table: Table) -> None:
        """Read *table* (a first resolve, or another Delta version): its units and their rows."""
        if table.schema_text() != self.table.schema_text() and table is not self.table:
            old, new = self.table.schema_text(), table.schema_text()
            raise TableSchemaError(
                f"the schema of {self.source} differs at version {table.version} (was "
                f"{[c for c in old if c not in new]}, now {[c for c in new if c not in old]}); build a new UCDataset"
            )
        self.table = table
        self.units = [(i, rg) for i, p in enumerate(table.parts) for rg in range(len(p.row_groups))]
        self._views: list[tuple[Any, int]] | None = None
        if any(p.view is not None for p in table.parts):
            self._views = [(table.parts[i].view, sum(table.parts[i].row_groups[:rg])) for i, rg in self.units]
        rows = []
        for u, (i, rg) in enumerate(self.units):
            view, offset = self._views[u] if self._views is not None else (None, 0)
            if view is None and self._expr is None:
                rows.append(table.parts[i].row_groups[rg])
            elif view is None:
                rows.append(count_rows(self._local(i), rg, self._expr))
            elif self._expr is None and view.keep is None:
                rows.append(table.parts[i].row_groups[rg])
            elif self._expr is None:
                n = table.parts[i].row_groups[rg]
                rows.append(
                    int(view.keep[offset : offset + n].sum()) + max(0, offset + n - max(len(view.keep), offset))
                )
            else:
                rows.append(count_view_rows(self._local(i), rg, self._expr, view, offset, self._read_cols))
        self.unit_rows = rows
        self.num_rows = sum(rows)
        self.fingerprint = hashlib.sha1(f"{table.fingerprint}\0{self.filter_text}".encode()).hexdigest()[:16]

    @property
    def version(self) -> int | None:
        """The Delta table version this dataset reads (None: a folder of plain Parquet)."""
        return self.table.version

    def _at_version(self, version: int | None) -> None:
        """Switch to Delta *version* (None: the latest) when it is not the one read now."""
        if version is not None and version == self.table.version:
            return
        self._use(resolve(self.source, self.store, version=version))

    def set_epoch(self, epoch: int) -> None:
        """Start *epoch* from its beginning; with ``refresh=True`` a Delta table moves to its latest version."""
        super().set_epoch(epoch)
        if self.refresh and self.table.delta is not None:
            self._at_version(None)

    def epoch_plan(self, started: float) -> dict[str, Any]:
        """The loader's plan for persistent workers, with the Delta snapshot they must read: the
        resolved table itself (pickled), since deltalake cannot run in a forked worker (its tokio
        runtime belongs to the parent) and the worker may hold another version since its start."""
        plan = super().epoch_plan(started)
        if self.table.delta is not None:
            import base64
            import pickle

            plan["delta_version"] = self.table.version
            plan["delta_table"] = base64.b64encode(pickle.dumps(self.table, protocol=5)).decode()
        return plan

    def _follow_plan(self) -> dict[str, Any]:
        plan = super()._follow_plan()
        if plan.get("delta_version") is not None and plan["delta_version"] != self.table.version:
            import base64
            import pickle

            self._use(pickle.loads(base64.b64decode(plan["delta_table"])))  # our own loader's plan file
        return plan

    def _local(self, part: int) -> str:
        """A local path to read part *part* from: in place, or the cache's copy of a volume file."""
        p = self.table.parts[part]
        if not p.volume:
            return p.key
        return self.cache.get(p.key, size=p.size, mtime=p.mtime)  # type: ignore[union-attr]

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return (
            f"UCDataset({self.source!r}, rows={self.num_rows}, columns={self.columns}, filter={self.filter_text!r}, "
            f"batch_size={self.batch_size}, files={len(self.table.parts)}, row_groups={len(self.units)}, "
            f"shuffle={self.shuffle}, epoch={self.epoch}"
            + (f", version={self.table.version})" if self.table.delta is not None else ")")
        )

    # -- epochs and state ---------------------------------------------------------------------------
    def _epoch_state(self) -> EpochState:
        base = self._resume
        if base is not None and base.epoch == self.epoch:
            return replace(base, segments=list(base.segments))
        return EpochState(self.seed, self.epoch, self.num_rows, self.shuffle, self.fingerprint)

    def _stream_plan(self, st: EpochState, grid: Grid, stream: int) -> StreamPlan:
        try:
            return stream_plan(st, self.unit_rows, self.window, grid, stream)
        except OrderStateError as exc:
            raise DatasetError(str(exc)) from None

    def _progress(self, grid: Grid, delivered: dict[int, int]) -> EpochState:
        """The epoch state after this run's *delivered* batches per stream (converted to rows)."""
        st = self._epoch_state()
        rows = {s: min(b * self.batch_size, self._stream_plan(st, grid, s).rows) for s, b in delivered.items()}
        try:
            return with_progress(st, grid, rows)
        except OrderStateError as exc:
            raise DatasetError(str(exc)) from None

    def state_dict(
        self, delivered: dict[int, int] | None = None, grid: Grid | None = None, epoch_done: bool = False
    ) -> dict[str, Any]:
        """Progress of the current epoch in rows delivered per stream. Iterated directly, this counts
        the batches this process yielded; the DataLoader passes the batches it *delivered*. With
        ``torch.distributed`` initialised it is a collective (every rank's progress is gathered)."""
        st = self._state_now(delivered, grid, epoch_done)
        return {
            "kind": _STATE_KIND,
            "version": _STATE_VERSION,
            "source": self.source,
            "schema": self.table.schema_text(),
            "filter": self.filter_text,
            "window": self.window,
            "delta_version": self.table.version,
            **st.to_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from :meth:`state_dict`, on the same or a different grid (batch size may differ)."""
        if not isinstance(state, dict) or state.get("kind") != _STATE_KIND or state.get("version") != _STATE_VERSION:
            got = state.get("kind", state.get("version")) if isinstance(state, dict) else type(state).__name__
            raise DatasetError(f"not a UCDataset state ({got!r}); pass what UCDataset.state_dict() returned")
        latest = self._follow_state_version(state)
        if state.get("schema") != self.table.schema_text():
            old, new = state.get("schema") or [], self.table.schema_text()
            gone = [c for c in old if c not in new]
            added = [c for c in new if c not in old]
            raise TableSchemaError(
                f"the schema of {self.source} changed since the state was saved (was {gone}, now {added}); "
                f"a resumed epoch would not yield the same rows: start the epoch fresh (set_epoch) instead"
            )
        if state.get("filter") != self.filter_text or state.get("window") != self.window:
            raise DatasetError(
                f"state was saved with filter={state.get('filter')!r}, window={state.get('window')}; this dataset has "
                f"filter={self.filter_text!r}, window={self.window}: build it the same way to resume"
            )
        st = self._parse_state(state)
        if latest:  # an epoch's start moved to the latest version: nothing of the old one to resume
            self._check_order(st)
            self.epoch, self._resume = st.epoch, None
            return
        if st.fingerprint != self.fingerprint or st.n != self.num_rows:
            raise DatasetError(
                f"the data of {self.source} changed since the state was saved ({st.n} rows then, {self.num_rows} now; "
                f"files rewritten); start the epoch fresh (set_epoch) instead"
            )
        self._check_order(st)
        self.epoch, self._resume = st.epoch, st

    def _follow_state_version(self, state: dict[str, Any]) -> bool:
        """A Delta state resumes at the version it was saved at (a state at an epoch's start, with
        ``refresh=True``: at the latest, and True is returned); refused when that version is gone or
        this dataset pins another."""
        saved = state.get("delta_version")
        if (saved is None) != (self.table.delta is None):
            what = f"Delta version {saved}" if saved is not None else "a folder of plain Parquet"
            raise DatasetError(
                f"state was saved reading {what} of {state.get('source')}; this dataset reads "
                f"{'Delta version ' + str(self.table.version) if self.table.delta is not None else 'plain Parquet'}: "
                f"start the epoch fresh (set_epoch) instead"
            )
        if self.refresh and saved is not None and not state.get("segments"):
            self._at_version(None)  # nothing of that epoch delivered yet: it may read the latest
            return saved != self.table.version
        if saved is None or saved == self.table.version:
            return False
        if self.pinned:
            raise DatasetError(
                f"state was saved reading version {saved} of {self.source}; this dataset pins version "
                f"{self.table.version}: build it without version=/timestamp= (or with version={saved}) to resume"
            )
        try:
            self._at_version(int(saved))
        except DeltaError as exc:
            raise DeltaError(
                f"cannot resume: the state read version {saved} of {self.source}, which is gone ({exc}); "
                f"start the epoch fresh (set_epoch) on the latest version"
            ) from None
        return False

    # -- iteration ----------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[dict[str, Any]]:
        start = self.start_stream()
        check_current(self.table, self.store)  # overwritten since? refuse in one line, not deep in pyarrow
        plan = self._stream_plan(start.state, start.grid, start.stream)
        # in a DataLoader worker with batch_size=None: lists of up to the loader's chunk of batches per message
        chunk = min(self.attached.chunk, _CHUNK) if start.in_worker else 0
        batches = self._counted(
            iter_batches(
                plan,
                units=self.units,
                local_path=self._local,
                read_cols=self._read_cols,
                out_schema=self.out_schema,
                expr=self._expr,
                batch_size=self.batch_size,
                window=self.window,
                shuffle=self.shuffle,
                views=self._views,
            )
        )
        try:
            yield from chunked(batches, chunk) if chunk else batches
        except (OSError, KeyError, IndexError, ValueError, RuntimeError) as exc:  # pyarrow's errors are these too
            if isinstance(exc, DatasetError):
                raise
            try:
                check_current(self.table, self.store)
            except DatasetError as refusal:  # rewritten mid-epoch: that refusal, not pyarrow's error
                raise refusal from None
            raise

    def _counted(self, batches: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """*batches*, each counted as it leaves (``state_dict()`` counts delivered batches)."""
        for batch in batches:
            self._yielded += 1
            yield batch
