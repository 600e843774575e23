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
from ..errors import Interrupted
from ..events import CopyEvent, Listener, channel
from ..io.leftovers import TEMP_MARK
from ..io.pools import threads
from ..io.retry import TRANSIENT_ERRNOS, retry_call
from .file import DirMaker, copy_file, is_unchanged, source_stat
from .jobname import source_job_name
from .task import DESTINATION, SIDE_LABELS, CopyFailure, CopyProgress, CopyReport, CopyTask, side_of

__all__ = [
    "copy_files",
    "copy_one",
    "interrupted_message",
    "DEFAULT_WORKERS",
    "CHECK_THREADS",
    "TEMP_MARK",
    "TRANSIENT_ERRNOS",
]

DEFAULT_WORKERS = settings.DEFAULT_COPY_WORKERS  # built-in default of the `workers` setting
CHECK_THREADS = 4 * threads("remote-io")


def copy_one(task: CopyTask, *, retries: int = 4, backoff: float = 0.05, dirs: DirMaker | None = None) -> int:
    """Copy one file atomically (temp + rename), retrying transient errors; raises the last error.

    The single-file form of :func:`copy_files`, used by the cache. Returns the bytes written.
    *dirs*: the caller's destination folders, kept open across calls (the cache keeps one per
    process: a folder is verified once, not at every miss); a folder removed since is made again.
    """
    if dirs is None:

        def attempt() -> int:
            with DirMaker() as fresh:
                return copy_file(task, fresh)

        return retry_call(attempt, retries=retries, backoff=backoff)

    def kept() -> int:
        try:
            return copy_file(task, dirs)
        except FileNotFoundError as exc:
            if side_of(exc) != DESTINATION:  # the source is gone: nothing to do with the folders
                raise
            dirs.forget(task.dst)  # its folder was removed (a clear, an eviction) since it was opened
            return copy_file(task, dirs)

    return retry_call(kept, retries=retries, backoff=backoff)


class _CopyRun:
    """One ``copy_files`` call: the tasks, a shared cursor over them, the counters and the threads.

    Workers pull tasks from the cursor (no future per file); each task is checked ("already there,
    unchanged?"), then copied holding one of ``workers`` slots, retried while its error is
    transient, and counted as copied, skipped or failed."""

    def __init__(
        self, tasks: Sequence[CopyTask], *, workers: int, overwrite: bool, dry_run: bool, retries: int, backoff: float
    ) -> None:
        self.tasks, self.workers = tasks, workers
        self.overwrite, self.dry_run, self.retries, self.backoff = overwrite, dry_run, retries, backoff
        self.lock = threading.Lock()
        self.next = 0
        self.stop = threading.Event()
        self.finished = threading.Event()  # set by the last worker to exit (not Thread.join: see _wait)
        self.expected = self.entered = self.exited = 0  # workers started, begun, ended
        self.copied = self.skipped = 0
        self.bytes_done = self.bytes_copied = 0
        self.failed: list[CopyFailure] = []
        self.bytes_total = sum(t.size or 0 for t in tasks)
        self.dirs = DirMaker(sweep=not dry_run)  # first visit of a folder removes dead processes' temp files
        self.slots = threading.BoundedSemaphore(workers)  # copies at once; more threads may be checking
        self.t0 = time.perf_counter()

    def take(self) -> CopyTask | None:
        with self.lock:
            if self.next >= len(self.tasks) or self.stop.is_set():
                return None
            t = self.tasks[self.next]
            self.next += 1
            return t

    def start(self) -> list[threading.Thread]:
        """Start the workers. Checking "already there, unchanged" is one round trip per existing
        file and needs no disk bandwidth: an unchanged re-run goes faster with more threads than
        copying wants, so up to :data:`CHECK_THREADS` threads check while ``workers`` copy."""
        n = self.workers if self.overwrite else max(self.workers, CHECK_THREADS)
        threads = [
            threading.Thread(target=self._work, name=f"air-copy-{i}", daemon=True)
            for i in range(min(n, max(1, len(self.tasks))))
        ]
        self.expected = len(threads)
        for th in threads:  # a Ctrl-C in here (hundreds to start, the first already copying): see _drain
            th.start()
        return threads

    def _work(self) -> None:
        with self.lock:
            self.entered += 1
        try:
            while (task := self.take()) is not None:
                self._copy_task(task)
        finally:
            with self.lock:
                self.exited += 1
                if self.exited == self.expected:
                    self.finished.set()

    def idle(self) -> bool:
        """After a stop: no thread holds a task any more (one that enters later takes none)."""
        with self.lock:
            return self.entered == self.exited

    def _copy_task(self, task: CopyTask) -> None:
        """One task to its end: copied, skipped, or recorded as failed (never raised)."""
        attempts = [0]
        try:
            n = retry_call(
                lambda: self._attempt(task, attempts), retries=self.retries, backoff=self.backoff, stop=self.stop.is_set
            )
        except Exception as exc:  # one file's failure never stops the others
            side = side_of(exc)
            failure = CopyFailure(str(task.src), str(task.dst), _reason(exc, side), attempts[0], side)
            with self.lock:
                self.failed.append(failure)
            return
        if n is not None:
            with self.lock:
                self.copied += 1
                self.bytes_done += n
                self.bytes_copied += n

    def _attempt(self, task: CopyTask, attempts: list[int]) -> int | None:
        """Bytes copied (or that a dry run would copy), ``None`` when skipped or stopped."""
        attempts[0] += 1
        if not self.overwrite and (size := is_unchanged(task)) is not None:
            with self.lock:
                self.skipped += 1
                self.bytes_done += size
            return None
        if self.dry_run:
            return task.size if task.size is not None else source_stat(task.src)[0]
        with self.slots:
            if self.stop.is_set():
                return None
            return copy_file(task, self.dirs)

    def progress(self, final: bool = False) -> CopyProgress:
        with self.lock:  # sizes unknown before copying (names-only listing): the total is known at the end
            total = max(self.bytes_total, self.bytes_done) if final else self.bytes_total
            return CopyProgress(
                len(self.tasks),
                self.copied,
                self.skipped,
                len(self.failed),
                total,
                self.bytes_done,
                time.perf_counter() - self.t0,
            )

    def report(self, dest: str) -> CopyReport:
        self.failed.sort(key=lambda f: f.src)
        return CopyReport(
            len(self.tasks),
            self.copied,
            self.skipped,
            self.failed,
            self.bytes_copied,
            time.perf_counter() - self.t0,
            dest,
            self.dry_run,
            self.workers,
        )


class _Emitter:
    """A run's progress as :class:`CopyEvent`s to the call's listeners and the process-wide channel."""

    def __init__(
        self, run: _CopyRun, job: str | None, dest: str, sources: Sequence[str], listeners: Sequence[Listener]
    ) -> None:
        self.run, self.job, self.dest = run, job, dest
        self.sources, self.listeners = tuple(sources)[:20], tuple(listeners)
        self.started = time.time()

    def __call__(self, state: str = "running") -> None:
        event = CopyEvent(
            job=self.job,
            state=state,
            progress=self.run.progress(final=state != "running"),
            dest=self.dest,
            sources=self.sources,
            started=self.started,
        )
        channel.emit(event, self.listeners)


def _wait(run: _CopyRun, emit: _Emitter, interval: float) -> None:
    """Start the workers and wait for them on the calling thread, emitting progress every *interval* seconds.
    ``KeyboardInterrupt`` (or a listener's error) stops handing out files, lets in-flight ones
    finish, emits ``interrupted`` and is re-raised.

    The wait is on an event the last worker sets, not ``Thread.join``: a Ctrl-C that lands inside
    ``join`` can leave CPython 3.11 taking a running thread for finished (its ``_tstate_lock``
    released by the interrupted join), and then the folders were closed under copies still in
    flight, whose temp files could not be removed. After a stop the folders are closed only once no
    worker holds a file."""
    try:
        run.start()
        while not run.finished.wait(interval):
            emit()
    except BaseException:
        run.stop.set()
        _drain(run)
        emit("interrupted")
        raise
    finally:
        if run.finished.is_set() or run.idle():
            run.dirs.close()


def _drain(run: _CopyRun) -> None:
    """Wait for the files in flight after a stop: until every worker that began has ended (counted
    by the workers, not by which ``Thread.start`` calls returned: a Ctrl-C inside one cannot tell
    whether its thread runs; a thread that begins after the stop takes no file). A second Ctrl-C
    stops the waiting (each file in flight still lands whole or not at all: temp name, rename)."""
    try:
        while not run.idle():
            run.finished.wait(0.02)
    except KeyboardInterrupt:
        pass


def interrupted_message(p: CopyProgress, dest: str, dry_run: bool = False) -> str:
    """The one line an interrupted copy ends with: what landed and how to resume."""
    if dry_run:
        return f"dry run interrupted after checking {p.files_done:,} of {p.files_total:,} files; nothing was copied"
    where = f" in {dest}" if dest else ""
    failed = f" ({p.failed:,} failed)" if p.failed else ""
    return (
        f"copy interrupted: {p.copied + p.skipped:,} of {p.files_total:,} files landed{where}{failed}; "
        "re-run to copy the rest (copied files are skipped)"
    )


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
    Ctrl-C (``KeyboardInterrupt``) stops handing out files, lets in-flight files finish (or vanish:
    never a partial file under a final name) and raises :class:`~air_magics.errors.Interrupted`, a
    ``KeyboardInterrupt`` whose message is one line: how many files landed and that a re-run copies
    the rest. ``job`` names the copy in its events (the
    default listeners write a named copy's progress to the status document ``job-copy-<job>`` for
    the sidebar's Jobs); ``None`` names it after its source (``train-3f2a1c``:
    :func:`~air_magics.transfer.jobname.source_job_name`), ``""`` leaves it unnamed (no document:
    an internal copy such as a checkpoint upload, which the sidebar shows as the checkpoint's).
    ``sources`` are the lines it was planned from, to label it.
    """
    if workers is None:
        workers = settings.copy_workers()
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    run = _CopyRun(
        _interleave(list(tasks)),
        workers=workers,
        overwrite=overwrite,
        dry_run=dry_run,
        retries=retries,
        backoff=backoff,
    )
    if job is None and not dry_run:
        job = source_job_name(sources or [_source_folder(run)], dest)
    emit = _Emitter(run, job or None, dest, sources, listeners)
    try:
        _wait(run, emit, progress_interval)
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):
            raise
        raise Interrupted(interrupted_message(run.progress(final=True), dest, dry_run), "copy") from None
    emit("failed" if run.failed else "done")
    return run.report(dest)


def _source_folder(run: _CopyRun) -> str:
    """The folder of the first file a copy given bare tasks copies (what its job is named after)."""
    return os.path.dirname(str(run.tasks[0].src)) if run.tasks else ""


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


def _reason(exc: BaseException, side: str | None) -> str:
    """The error, prefixed with the side that failed (``reading the source: ...``) when known."""
    if isinstance(exc, OSError) and exc.errno is not None:
        text = f"{type(exc).__name__}: [Errno {exc.errno}] {exc.strerror}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return f"{SIDE_LABELS[side]}: {text}" if side in SIDE_LABELS else text
