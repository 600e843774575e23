"""The parallel copy engine shared by ``%%air_copy``, the cache and the checkpoint writer.

Many small files on a remote volume are latency-bound, not bandwidth-bound, so the engine keeps
many requests in flight with a bounded pool of threads (file I/O releases the GIL; no process per
file). For each file it

* opens every source and destination folder through the one confined primitive
  (:mod:`air_magics.io.confined`): nothing is read or written outside the source's volume or the
  destination root, even when a link is swapped in mid-copy, and a FIFO fails without blocking,
* creates each destination folder once and keeps a verified descriptor of it (concurrent creators
  never fail on ``EEXIST`` the way ``xargs -P ... cp --parents`` does); the first visit removes
  temp files that dead processes left there,
* skips it when the destination already has the same size and mtime (unless ``overwrite``),
* reads it in one large sequential read (``posix_fadvise(SEQUENTIAL)``) into a temp name beside
  the target, stamps the source mtime and renames it into place: a reader never sees a partial
  file under its final name, even when the process is killed,
* retries transient errors (``EIO``, timeouts, connection resets) with jittered exponential
  backoff, and records a file that keeps failing by name while every other file still lands.

Progress is reported as :class:`~air_magics.events.CopyEvent`s emitted from the *calling* thread at
a fixed interval, to the call's listeners and the process-wide channel, so widgets, status
documents and loggers never run on worker threads.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Sequence

from .. import settings
from ..events import CopyEvent, Listener, channel
from ..io.leftovers import TEMP_MARK
from ..io.retry import TRANSIENT_ERRNOS, retry_call
from .file import DirMaker, copy_file, is_unchanged, source_stat
from .task import CopyFailure, CopyProgress, CopyReport, CopyTask

__all__ = ["copy_files", "copy_one", "DEFAULT_WORKERS", "CHECK_THREADS", "TEMP_MARK", "TRANSIENT_ERRNOS"]

DEFAULT_WORKERS = settings.DEFAULT_COPY_WORKERS  # built-in default of the `workers` setting
CHECK_THREADS = 256


def copy_one(task: CopyTask, *, retries: int = 4, backoff: float = 0.05) -> int:
    """Copy one file atomically (temp + rename), retrying transient errors; raises the last error.

    The single-file form of :func:`copy_files`, used by the cache. Returns the bytes written.
    """

    def attempt() -> int:
        with DirMaker() as dirs:
            return copy_file(task, dirs)

    return retry_call(attempt, retries=retries, backoff=backoff)


class _Run:
    """Shared state of one ``copy_files`` call."""

    def __init__(self, tasks: Sequence[CopyTask]) -> None:
        self.tasks = tasks
        self.lock = threading.Lock()
        self.next = 0
        self.stop = threading.Event()
        self.copied = self.skipped = 0
        self.bytes_done = self.bytes_copied = 0
        self.failed: list[CopyFailure] = []
        self.bytes_total = sum(max(t.size, 0) for t in tasks)

    def take(self) -> CopyTask | None:
        with self.lock:
            if self.next >= len(self.tasks) or self.stop.is_set():
                return None
            t = self.tasks[self.next]
            self.next += 1
            return t


def copy_files(
    tasks: Iterable[CopyTask],
    *,
    workers: int | None = None,
    overwrite: bool = False,
    dry_run: bool = False,
    retries: int = 4,
    backoff: float = 0.05,
    progress_interval: float = 0.1,
    dest: str = "",
    job: str | None = None,
    sources: Sequence[str] = (),
    listeners: Sequence[Listener] = (),
) -> CopyReport:
    """Copy every task in parallel; never raises for a single file (see ``report.failed``).

    ``workers`` bounds the copies in flight (default: the ``workers`` setting, 64).
    ``retries`` extra attempts are made for transient errors, waiting ``backoff * 2**k`` (jittered).
    ``dry_run`` only decides what would be copied or skipped. Progress goes out as
    :class:`~air_magics.events.CopyEvent`s on the calling thread every ``progress_interval``
    seconds and once at the end (``done``, ``failed`` or ``interrupted``), to ``listeners`` and to
    :data:`air_magics.events.channel` (each event's ``progress`` is a :class:`CopyProgress`). A
    listener that raises is logged and the copy goes on.
    ``KeyboardInterrupt`` stops handing out files, lets in-flight files finish (or vanish: never a
    partial file under a final name) and is re-raised. ``job`` names the copy in its events (the
    default listeners write a named copy's progress to the status document ``job-copy-<job>`` for
    the sidebar), ``sources`` are the lines it was planned from, to label it.
    """
    tasks = _interleave(list(tasks))
    if workers is None:
        workers = settings.copy_workers()
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    run = _Run(tasks)
    dirs = DirMaker(sweep=not dry_run)  # first visit of a folder removes dead processes' temp files
    t0 = time.perf_counter()

    def work_one(task: CopyTask) -> None:
        attempts = 0

        def attempt() -> int | None:
            nonlocal attempts
            attempts += 1
            if not overwrite and (size := is_unchanged(task)) is not None:
                with run.lock:
                    run.skipped += 1
                    run.bytes_done += size
                return None
            if dry_run:
                return task.size if task.size >= 0 else source_stat(task.src)[0]
            with copy_slots:  # at most `workers` copies at once; more threads may be checking
                if run.stop.is_set():
                    return None
                return copy_file(task, dirs)

        try:
            n = retry_call(attempt, retries=retries, backoff=backoff, stop=run.stop.is_set)
        except Exception as exc:  # one file's failure never stops the others
            with run.lock:
                run.failed.append(CopyFailure(str(task.src), str(task.dst), _reason(exc, task), attempts))
            return
        if n is not None:
            with run.lock:
                run.copied += 1
                run.bytes_done += n
                run.bytes_copied += n

    def worker() -> None:
        while (task := run.take()) is not None:
            work_one(task)

    # Checking "already there, unchanged" is one round trip per existing file and needs no disk
    # bandwidth: an unchanged re-run goes faster with more threads than copying wants.
    copy_slots = threading.BoundedSemaphore(workers)
    n_threads = workers if overwrite else max(workers, CHECK_THREADS)
    threads = [
        threading.Thread(target=worker, name=f"air-copy-{i}", daemon=True)
        for i in range(min(n_threads, max(1, len(tasks))))
    ]
    for th in threads:
        th.start()

    def snapshot(final: bool = False) -> CopyProgress:
        with run.lock:  # sizes unknown before copying (names-only listing): the total is known at the end
            total = max(run.bytes_total, run.bytes_done) if final else run.bytes_total
            return CopyProgress(
                len(tasks), run.copied, run.skipped, len(run.failed), total, run.bytes_done, time.perf_counter() - t0
            )

    also = tuple(listeners)
    started, srcs = time.time(), tuple(sources)[:20]

    def emit(state: str = "running") -> None:
        channel.emit(
            CopyEvent(
                job=job,
                state=state,
                progress=snapshot(final=state != "running"),
                dest=dest,
                sources=srcs,
                started=started,
            ),
            also,
        )

    try:
        for th in threads:
            while th.is_alive():
                th.join(progress_interval)
                emit()
    except BaseException:
        run.stop.set()
        for th in threads:
            th.join()
        emit("interrupted")
        raise
    finally:
        if not any(th.is_alive() for th in threads):
            dirs.close()
    emit("failed" if run.failed else "done")
    run.failed.sort(key=lambda f: f.src)
    return CopyReport(
        len(tasks),
        run.copied,
        run.skipped,
        run.failed,
        run.bytes_copied,
        time.perf_counter() - t0,
        dest,
        dry_run,
        workers,
    )


def _interleave(tasks: list[CopyTask]) -> list[CopyTask]:
    """Round-robin over destination folders: the kernel serialises creates and renames within one
    folder, so concurrent workers should be writing into different folders."""
    groups: dict[str, list[CopyTask]] = {}
    for t in tasks:
        groups.setdefault(os.path.dirname(t.dst.path), []).append(t)
    if len(groups) <= 1:
        return tasks
    out: list[CopyTask] = []
    lists = list(groups.values())
    for i in range(max(map(len, lists))):
        out.extend(g[i] for g in lists if i < len(g))
    return out


# Steps of one copy by the side they touch: the innermost one in a failure's traceback says which side failed.
_READ_STEPS = frozenset({"open_read", "_read_all", "source_stat", "cat_file"})
_WRITE_STEPS = frozenset(
    {"open_dir", "_make_below", "publish_at", "write_all", "open_write", "_publish_atomic", "folder", "ensure"}
)
READING, WRITING = "reading the source", "writing the destination"


def _side(exc: BaseException, task: CopyTask | None) -> str:
    """Which side of *task* failed: :data:`READING`, :data:`WRITING`, or ``""`` when unknown."""
    name = getattr(exc, "filename", None)
    if task is not None and isinstance(name, str) and name:
        if name == task.src.path:
            return READING
        if name in (task.dst.path, os.path.dirname(task.dst.path)) or name.startswith(
            "." + os.path.basename(task.dst.path)
        ):
            return WRITING
    side = ""
    tb = exc.__traceback__
    while tb is not None:
        step = tb.tb_frame.f_code.co_name
        side = READING if step in _READ_STEPS else WRITING if step in _WRITE_STEPS else side
        tb = tb.tb_next
    return side


def _reason(exc: BaseException, task: CopyTask | None = None) -> str:
    """The error, prefixed with the side that failed (``reading the source: ...``) when known."""
    if isinstance(exc, OSError) and exc.errno is not None:
        text = f"{type(exc).__name__}: [Errno {exc.errno}] {exc.strerror}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    side = _side(exc, task)
    return f"{side}: {text}" if side else text
