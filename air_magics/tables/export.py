"""Export a table or query to Parquet files in a volume folder, then load them with ``datasets``.

The files are written into a pending folder beside the target (``.pending-export-<pid>-<id>``) and
the folder is renamed into place only when complete, so a failed export never leaves a half-written
dataset under the target path. The leading dot hides it from listings; the pid lets the next export
into the same folder remove what a killed export left (pending and ``.trash-export-<pid>-<id>``
folders of processes that are gone). Two ways to write:

* ``server``: the Spark server writes the Parquet itself (it must see the volume's path: the
  embedded server on a local or mounted volume);
* ``client``: the result is fetched in bounded chunks (:mod:`air_magics.tables.result_stream`) and written
  by this process into files of about ``rows_per_file`` rows: neither this process nor the server
  holds the whole result.

``via="auto"`` picks ``server`` when the server can see the volume, else ``client``. Names, modes
and the destination are checked before any server is started or reached. A destination that is a
Delta table (a ``_delta_log`` folder) is refused even with ``overwrite``: the export's plain Parquet
would replace the table and its history, and its readback is plain Parquet by construction.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import settings
from ..errors import ExportTargetError, Interrupted, TablesError
from ..events import ExportEvent, Listener, channel
from ..io.folders import publish_folder
from ..io.leftovers import PENDING_EXPORT_PREFIX, owned_name, sweep_stale
from ..io.units import fmt_bytes
from ..snapshots import ExportProgress
from ..tablefiles.names import TableName
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .ops import sql_frame, table_frame
from .result_stream import chunk_bytes, write_parquet_stream
from .row_limit import check_limit
from .session import get_session, guarded

__all__ = ["export_table", "ExportResult", "hf_cache_dir"]


def hf_cache_dir() -> Path | None:
    """Where exports loaded with ``datasets`` keep its Arrow cache: ``$AIR_HOME/hf-cache``, or ``None``
    (``datasets``' own choice) when the user set ``HF_DATASETS_CACHE`` or ``HF_HOME``."""
    if os.environ.get("HF_DATASETS_CACHE") or os.environ.get("HF_HOME"):
        return None
    return settings.air_home() / "hf-cache"


@dataclass
class ExportResult:
    """Where an export landed and what it holds; ``load_dataset()`` opens it with Hugging Face ``datasets``."""

    dest: str
    files: list[str] = field(default_factory=list)
    rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    via: str = ""
    local_files: list[str] = field(default_factory=list, repr=False)

    def load_dataset(self, **kwargs: Any) -> Any:
        """The export as a ``datasets.Dataset``; keyword arguments go to ``datasets.load_dataset``.

        ``datasets`` converts the files into Arrow files in its cache: under ``$AIR_HOME/hf-cache``
        (with everything else air_magics keeps), not ``~/.cache/huggingface``, unless ``cache_dir``
        is given or ``HF_DATASETS_CACHE``/``HF_HOME`` is set."""
        try:
            import datasets
        except ImportError:
            raise TablesError("Hugging Face datasets is not installed: pip install 'air_magics[tables]'") from None
        if not self.local_files:
            raise TablesError(f"{self.dest} holds no Parquet files on local or mounted storage to load")
        cache = hf_cache_dir()
        if cache is not None:
            kwargs.setdefault("cache_dir", str(cache))
        # datasets' own bars ("Generating train split: 0 examples") count its Arrow conversion, not the
        # export the user waited for, and read as if nothing had been exported: quiet for this call
        bars_on = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()
        try:
            return datasets.load_dataset("parquet", data_files=self.local_files, split="train", **kwargs)
        finally:
            if bars_on:
                datasets.enable_progress_bars()

    def __repr__(self) -> str:
        return (
            f"<ExportResult {self.dest}: {self.rows:,} rows in {len(self.files)} Parquet files, "
            f"{fmt_bytes(self.bytes)}, {self.seconds:.1f} s via {self.via}>"
        )


class _Progress:
    """Spark Connect progress handler and the client writer's counts -> export events.

    Events go to the call's listeners and the process-wide channel. Tasks add
    up over the export's Spark operations (a client export runs several), an event that would say
    nothing new is not sent, and the last one (``done``) counts every task as done.
    """

    def __init__(self, job: str, dest: str, listeners: Sequence[Listener]) -> None:
        self.job, self.dest, self.started = job, dest, time.time()
        self.progress = ExportProgress()
        self.state = ""
        self.ops: dict[Any, tuple[int, int, int]] = {}
        self.also: tuple[Listener, ...] = tuple(listeners)

    def __call__(self, stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
        stages = list(stages or [])
        if not stages:
            return
        self.ops[operation_id] = (
            sum(s.num_tasks for s in stages),
            sum(s.num_completed_tasks for s in stages),
            sum(s.num_bytes_read for s in stages),
        )
        tasks, tasks_done, read = (sum(v[i] for v in self.ops.values()) for i in range(3))
        self.update(tasks=tasks, tasks_done=tasks_done, bytes_read=read)

    def update(self, state: str = "running", **info: Any) -> None:
        if state == "done" and self.progress.tasks:
            info.setdefault("tasks_done", self.progress.tasks)
        new = dataclasses.replace(self.progress, **info)
        if new == self.progress and state == self.state:
            return
        self.progress, self.state = new, state
        channel.emit(
            ExportEvent(job=self.job, state=state, dest=self.dest, progress=self.progress, started=self.started),
            self.also,
        )


def _parquet_files(d: str) -> list[str]:
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".parquet"))


def _check_target(path: str, target: VolumePath) -> None:
    """Refuse a destination that is a file, or lies below one, before anything runs."""
    p, depth = path, len(target.parts)
    for up in range(depth):  # the destination, then its folders inside the volume
        if os.path.lexists(p) and not os.path.isdir(p):
            where = (
                "is a file" if up == 0 else f"lies below the file {target.root.joinpath(*target.parts[: depth - up])}"
            )
            raise ExportTargetError(
                f"export destination {target} {where}: an export writes a folder of Parquet files; "
                f"remove or rename the file, or export to another folder"
            )
        p = os.path.dirname(p)


def export_table(
    source: str | None = None,
    dest: str | VolumePath = "",
    *,
    sql: str | None = None,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    limit: int | None = None,
    mode: str = "error",
    via: str = "auto",
    rows_per_file: int = 1_000_000,
    remote: str | None = None,
    user_ns: dict[str, Any] | None = None,
    store: VolumeStore | None = None,
    listeners: Sequence[Listener] = (),
) -> ExportResult:
    """Export table *source* (or the query *sql*) to Parquet under the volume folder *dest*.

    Progress goes out as :class:`~air_magics.events.ExportEvent` (job id, Spark tasks, rows,
    files) to ``listeners`` and :data:`air_magics.events.channel`; the default listeners write it
    to the ``job-export-<id>`` status document. Ctrl-C stops the server's job, removes the pending
    folder and raises :class:`~air_magics.errors.Interrupted` (a ``KeyboardInterrupt``) saying so.
    """
    if (source is None) == (sql is None):
        raise TablesError("export needs a table name or sql=..., not both")
    if mode not in ("error", "overwrite"):
        raise TablesError(f"mode {mode!r}: use 'error' or 'overwrite'")
    if via not in ("auto", "server", "client"):
        raise TablesError(f"via {via!r}: use 'auto', 'server' or 'client'")
    if rows_per_file < 1:
        raise TablesError(f"rows_per_file {rows_per_file} must be positive")
    check_limit(limit)
    if source is not None:
        TableName.parse(source)  # a bad name is refused before any server is started
    store = store or VolumeStore()
    target = VolumePath.parse(dest)
    if target.is_root:
        raise TablesError(f"export into a folder inside the volume, not the volume root {target}")
    loc = store.locate(target)
    if not loc.is_local:
        raise TablesError(
            f"{target} is on {loc}: export needs a local or mounted volume (fsspec volumes: copy the files after)"
        )
    _check_target(loc.path, target)
    from ..tablefiles.delta import is_delta_folder

    if is_delta_folder(loc.path):  # replacing it with plain Parquet would drop the table and its history
        raise ExportTargetError(
            f"{target} is a Delta table (it has a _delta_log folder); an export writes plain Parquet and would "
            f"replace the table and its history: export to another folder, or remove the table first"
        )
    if os.path.exists(loc.path) and os.listdir(loc.path) and mode == "error":
        raise TablesError(f"{target} already exists; pass --mode overwrite (mode='overwrite') to replace it")
    s = get_session(remote, user_ns=user_ns)
    how = ("server" if s.embedded else "client") if via == "auto" else via
    sweep_stale(os.path.dirname(loc.path), remove_dirs=True)  # what killed exports left here
    pending = os.path.join(
        os.path.dirname(loc.path), owned_name(PENDING_EXPORT_PREFIX)
    )  # hidden, and sweepable once this process is gone
    job_id = uuid.uuid4().hex[:12]
    job = f"job-export-{job_id}"  # the Spark tag of its operations, and its status document's name
    prog = _Progress(job_id, str(target), listeners)
    t0 = time.perf_counter()
    prog.update()

    def run() -> None:
        df = sql_frame(s, sql) if sql is not None else table_frame(s, source, columns=columns, where=where, limit=limit)
        if sql is not None and (columns or where or limit is not None):
            df = df.select(*columns) if columns else df
            df = df.where(where) if where else df
            df = df.limit(limit) if limit is not None else df
        s.spark.registerProgressHandler(prog)
        s.spark.addTag(job)
        try:
            if how == "server":
                df.write.mode("error").option("maxRecordsPerFile", rows_per_file).parquet(pending)
            else:
                write_parquet_stream(
                    s.spark,
                    df,
                    pending,
                    rows_per_file,
                    chunk_bytes(s.spark),
                    lambda rows, files: prog.update(rows=rows, files=files),
                )
        except BaseException:  # stop the server's job too (Ctrl-C): it would go on writing into the pending folder
            try:
                s.spark.interruptTag(job)
            except Exception:
                pass
            raise
        finally:
            s.spark.removeTag(job)
            s.spark.removeProgressHandler(prog)

    try:
        guarded(s, f"exporting {source or 'the query'} to {target}", run)
        _keep_only_parquet(pending)
        files = _parquet_files(pending)
        _publish(pending, loc.path, loc.root, mode)
    except KeyboardInterrupt as exc:
        shutil.rmtree(pending, ignore_errors=True)
        prog.update("interrupted", error="interrupted")
        if isinstance(exc, Interrupted):
            raise
        raise Interrupted(
            f"export interrupted: nothing was written to {target} (the partial export was removed and its Spark "
            "job stopped); re-run to export again",
            "export",
        ) from None
    except BaseException as exc:
        shutil.rmtree(pending, ignore_errors=True)
        prog.update("failed", error=str(exc)[:300])
        raise
    import pyarrow.parquet as pq

    local = _parquet_files(loc.path)
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in local)
    size = sum(os.path.getsize(f) for f in local)
    result = ExportResult(
        str(target),
        [str(target / os.path.basename(f)) for f in local],
        rows,
        size,
        time.perf_counter() - t0,
        how,
        local,
    )
    prog.update("done", rows=rows, files=len(files), bytes=size)
    return result


def _keep_only_parquet(folder: str) -> None:
    """Spark's ``_SUCCESS`` and ``.crc`` files make other readers fail ("Parquet file size is 0
    bytes" in ``datasets``): the published folder holds Parquet data files only."""
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not name.endswith(".parquet") and os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)


def _publish(pending: str, final: str, root: str | None, mode: str) -> None:
    """Rename the finished folder into place (replacing the old one for ``overwrite``): see
    :func:`air_magics.io.folders.publish_folder`."""
    try:
        publish_folder(pending, final, root=root, replace=mode == "overwrite")
    except FileExistsError:
        raise TablesError(f"{final} appeared while exporting; nothing was replaced") from None
