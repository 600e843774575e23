"""``CheckpointManager``: one folder per save, visible only when complete, ``latest`` moved last.

Layout under the manager's volume folder::

    step_10/            committed: torch DCP files, .checksums.json, .metadata, and _COMMITTED
    .pending-step_11/   a save in progress (or the leftover of a crashed one)
    .pruning-step_7.ab12cd34/  a pruned step, out of sight, being deleted (or the leftover of a kill)
    latest              text file naming the newest committed step, replaced atomically

A save writes into ``.pending-step_<N>`` (never into an existing checkpoint; its files under
their own names, as nothing in it is seen before the rename), writes ``.metadata``, the manifest
and ``_COMMITTED`` side by side once the data is there (see :mod:`air_magics.checkpoints.volume_writer`),
renames the folder to ``step_<N>`` (atomic on mounted and embedded volumes), moves ``latest`` and prunes
to ``keep`` steps. An object store has no rename (every one is a copy and a delete): there the save
writes ``step_<N>/`` itself, each file once under its final name, and ``_COMMITTED``, written after
every other file, is the commit (:meth:`~.held_folder.HeldFolder.begin_save`). ``latest()`` trusts
only folders with both ``.metadata`` and ``_COMMITTED``, so a crash at any point leaves the previous checkpoint
loadable and ``latest`` unchanged. Every transition (staging, uploading, committed, failed) is
emitted as a :class:`~air_magics.events.CheckpointEvent` (rank 0); the default listeners write it to
the status document that the checkpoint view and the sidebar show.

Integrity: ``_COMMITTED`` is JSON holding the size and checksum (xxh3-128, :mod:`.digests`) of
every other file of the step (hashed as the files stream to the volume); loads verify the local copies they read and
:meth:`CheckpointManager.verify` checks a whole step. A missing or changed file raises
:class:`~air_magics.errors.CheckpointCorruptError` naming it and the step to fall back to.
Pruning un-commits first (renames ``step_N`` to ``.pruning-step_N.<id>``, or on object stores
deletes ``_COMMITTED``), then deletes, so ``steps()`` never lists a half-deleted step.

Leftovers: ``.pruning-*`` folders are never loadable and deleting them twice is harmless, so every
prune (after each committed save) and :meth:`~CheckpointManager.cleanup` remove them whoever made
them. ``.pending-step_N`` folders carry no owner (every rank writes into the same one), so they
are removed only by a save of the same step N and by ``cleanup()``; so is, on an object store, a
``step_N`` without its ``_COMMITTED`` (a killed save's).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..errors import AirError
from ..events import CheckpointEvent, Listener, channel
from ..io import ranks
from ..volumes.location import Location
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from .commit import COMMITTED, STEP_RE, commit_marker, scan_checkpoints, status_name
from .dcp_calls import async_save_on_thread, default_stager, quiet_async_saves, single_process_quiet
from .digests import ALGORITHM
from .held_folder import HeldFolder, StagedText
from .load_errors import corruption_in, earlier_step_on_corruption, one_line_error
from .pruning import TAIL, StepPruner
from .save_history import TERMINAL, SaveHistory
from .stager import BufferStager
from .train_state import apply_state, collect_state, loader_key, model_state
from .volume_writer import CheckpointError, UCVolumeReader, UCVolumeWriter

__all__ = ["CheckpointManager"]

_WAITED_NOTICE = 0.05  # seconds a save waited for the previous one before the view mentions it


class CheckpointManager:
    """Save and restore training state under a volume folder, keeping the newest ``keep`` steps.

    A new manager announces itself with a ``CheckpointEvent(state="announced", show=show)``: in a
    notebook with ``%load_ext air_magics`` the extension shows its live view with its first save (unless ``show=False``
    or ``%config AirMagics.widgets = False``; ``show=True`` asks for it regardless). Its saves are
    reported as checkpoint events to ``listeners`` and :data:`air_magics.events.channel`.
    """

    def __init__(
        self,
        directory: str | VolumePath,
        *,
        keep: int = 3,
        store: VolumeStore | None = None,
        upload_workers: int = 32,
        show: bool | None = None,
        listeners: Sequence[Listener] = (),
    ) -> None:
        if keep < 1:
            raise CheckpointError(f"keep={keep}: keep at least 1 checkpoint")
        self.store = store or VolumeStore.shared()
        self.directory = VolumePath.parse(directory)
        self.store.volume_info(self.directory)  # the volume must exist
        self.keep, self.upload_workers = keep, upload_workers
        self._pending: Any = None  # (upload future, committed event, staging future or None)
        self._stager: Any = None  # the background stager (its copy buffers reused across saves)
        self._lock = threading.Lock()
        self.status_name = status_name(str(self.directory))
        self._active: str | None = None
        self._located: Location | None = None  # see _loc
        self._held: HeldFolder | None = None  # see _held_folder
        self._pruner = StepPruner(self.directory, self.store, keep, self._loc)  # after each commit
        self.listeners = tuple(listeners)
        self._saves = SaveHistory(str(self.directory), keep, self.listeners, self.latest)
        if ranks.rank_and_world()[0] == 0 and self._loc().is_local:  # (an object store has no folders to make)
            self.store.makedirs(self.directory)
        self._held_folder().hold()  # located and opened now: the first save resolves no path either
        channel.emit(
            CheckpointEvent(state="announced", directory=str(self.directory), keep=keep, show=show), self.listeners
        )

    def __repr__(self) -> str:
        return f"CheckpointManager({str(self.directory)!r}, keep={self.keep}, latest={self.latest()})"

    # -- where things are -----------------------------------------------------------------------
    def _held_folder(self) -> HeldFolder:
        """The manager's folder, for the save's lookups (see :mod:`.held_folder`)."""
        if self._held is None:
            self._held = HeldFolder(self._loc())
        return self._held

    def _loc(self, name: str = "") -> Location:
        """Where the manager's folder (or *name* in it) lies. The folder is located once per manager
        (a lookup is an ``lstat`` per path part on a mount: 2-4 ms on a volume at 2 ms a request, and a
        save made several); what escapes the volume through a link is still refused at every open
        (:mod:`air_magics.io.confined`), and a save that fails locates it again."""
        here = self._located
        if here is None:
            here = self._located = self.store.locate(self.directory)
        return here.join(name) if name else here

    def step_path(self, step: int) -> VolumePath:
        return self.directory / f"step_{int(step)}"

    def steps(self) -> list[int]:
        """Committed steps, oldest first."""
        self._wait_tail()
        return scan_checkpoints(self.directory, self.store)["steps"]

    def latest(self) -> int | None:
        """The newest complete step (the ``latest`` pointer, verified), or ``None``."""
        self._wait_tail()
        pointed = self._held_folder().read_text("latest")
        if pointed and STEP_RE.match(pointed) and self._committed(int(pointed[5:])):
            return int(pointed[5:])  # two or three requests; the listing only without a pointer
        steps = scan_checkpoints(self.directory, self.store)["steps"]  # (no pointer to a complete step: one listing)
        return steps[-1] if steps else None

    def _committed(self, step: int) -> bool:
        """Whether ``step_<step>`` is a complete checkpoint (see :meth:`HeldFolder.committed`)."""
        return self._held_folder().committed(f"step_{int(step)}")

    # -- saving ---------------------------------------------------------------------------------
    def save(
        self,
        step: int,
        state: dict[str, Any] | None = None,
        *,
        model: Any = None,
        optimizer: Any = None,
        loader: Any = None,
        blocking: bool = True,
        background_staging: bool = False,
    ) -> None:
        """Save *state* (or model/optimizer/loader) as ``step_<step>``. ``blocking=False`` returns
        once the state is staged in memory and finishes in the background (see :meth:`wait`).

        ``background_staging=True`` (with ``blocking=False``) returns at once: the copy of the state
        is taken on a background thread while the step computes (pinned buffers where CUDA is
        there), and the loop must call :meth:`wait_staged` before it changes the weights (before
        ``optimizer.step()``), as torchtitan does::

            loss.backward()
            mgr.wait_staged()        # the previous save's copy is taken: the weights may change
            optimizer.step()
            if step % 100 == 0:
                mgr.save(step, model=model, optimizer=optimizer, blocking=False, background_staging=True)

        With one process, ``background_staging=True`` runs torch's ``async_save`` itself on a thread
        kept for it, so a failure there (the state cannot be staged or planned) is not raised here:
        the save's record says ``failed`` with the error (the view shows it; :meth:`wait` returns).

        One save is in flight at a time: a save waits for the previous one to finish."""
        import torch.distributed.checkpoint as dcp

        t_wait = time.perf_counter()
        self.wait()  # one save in flight at a time
        waited = time.perf_counter() - t_wait
        rank, world = ranks.rank_and_world()
        here = self._loc()
        folder = self._held_folder()
        try:  # the pending folder (OS paths) or the step's own (object stores), a crashed attempt's leftover gone
            into = folder.begin_save(f"step_{int(step)}", clear=rank == 0)
        except FileExistsError:
            raise CheckpointError(
                f"{self.step_path(step)} already exists; checkpoints are never overwritten: use a new step"
            ) from None
        if state is None:
            state = collect_state(model, optimizer, loader, rank)
        pending = self.directory / into
        self._active = into
        ranks.barrier(world)
        # reported from the events thread (see SaveHistory.publish): the status document (1.5-3 ms on a disk busy
        # with the previous save's writeback) is off the loop's clock
        rec = self._saves.record(step, "staging", started=time.time())
        # the pointer's next text, written while the data streams (not before: a create in the folder
        # would hold up the pending folder's); the commit renames it into place
        pointer = StagedText(folder, "latest", f"step_{int(step)}") if rank == 0 else None

        def on_writer(e: CheckpointEvent) -> None:
            if pointer is not None and e.state == "uploading":
                pointer.start(TAIL.get())
            self._update(rec, e.state, **e.detail)

        if waited > _WAITED_NOTICE:  # the previous save had not finished: the view says so
            rec["waited_s"] = waited
        writer = UCVolumeWriter(
            pending,
            store=self.store,
            location=here.join(pending.name),
            make_folder=lambda: folder.make_folder(pending.name),  # relative to the held folder
            # checksums of every file (None if torch ran the save elsewhere: then .checksums.json has them)
            marker=(COMMITTED, lambda files: commit_marker(step, files or None, ALGORITHM)),
            upload_workers=self.upload_workers,
            listeners=[on_writer],
        )
        writer.manifest_fsync = False  # _COMMITTED, fsynced before the step is renamed in, records the checksums
        t0 = time.perf_counter()
        if not blocking:
            quiet_async_saves()  # outside the scoped filter below, which would undo it on exit
        staged: Any = None
        try:
            # one process: the call returns at once, DCP runs on a thread of its own (see dcp_calls)
            on_thread = not blocking and background_staging and world == 1
            with contextlib.nullcontext() if on_thread else single_process_quiet():
                if blocking:
                    dcp.save(state, storage_writer=writer)
                elif on_thread:
                    fut, staged = async_save_on_thread(state, writer, self._background_stager())
                elif background_staging:
                    resp = dcp.async_save(state, storage_writer=writer, async_stager=self._background_stager())
                    fut, staged = resp.upload_completion, resp.staging_completion
                else:
                    fut = dcp.async_save(state, storage_writer=writer)
        except BaseException as exc:
            self._located = self._held = None  # the volume may have moved: the next save looks again
            if pointer is not None:
                pointer.discard()
            self._update(rec, "failed", error=str(one_line_error(exc, "save failed")))
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise one_line_error(exc, f"saving step {step} to {self.directory} failed") from None
        rec["blocked_s"] = time.perf_counter() - t0
        if blocking:
            self._commit(step, rec, writer, rank, world, pointer)
            return
        if staged is not None:  # how long the background copy took, from the call
            staged.add_done_callback(lambda f: rec.__setitem__("staging_s", time.perf_counter() - t0))
        done = threading.Event()
        with self._lock:
            self._pending = (fut, done, staged)
        fut.add_done_callback(lambda f: self._finish_async(f, step, rec, writer, rank, pointer, done))

    def _update(self, rec: dict[str, Any], state: str, **info: Any) -> None:
        if state in TERMINAL:
            self._active = None  # (cleanup() may remove its pending folder from now on)
        self._saves.update(rec, state, **info)

    def _background_stager(self) -> Any:
        """The stager of ``background_staging`` saves, made on first use and kept (its buffers are
        reused): a CPU state is copied on parallel threads (:class:`~.stager.BufferStager`), any
        other by torch's ``DefaultStager``, into pinned memory where CUDA is there."""
        if self._stager is None:
            self._stager = BufferStager(default_stager)
        return self._stager

    def wait_staged(self) -> None:
        """Wait until the save in flight has its copy of the state (call it before the loop changes
        the weights: ``optimizer.step()``); at once when no ``background_staging`` save is in
        flight. A staging that failed is reported by the save's record (:meth:`wait` returns)."""
        with self._lock:
            pending = self._pending
        if pending is not None and pending[2] is not None:
            try:
                pending[2].result()
            except BaseException:
                pass  # the upload fails with it, and its callback records the save as failed

    def _finish_async(
        self,
        fut: Any,
        step: int,
        rec: dict[str, Any],
        writer: UCVolumeWriter,
        rank: int,
        pointer: StagedText | None,
        done: threading.Event,
    ) -> None:
        try:
            fut.result()
        except BaseException as exc:
            if pointer is not None:
                pointer.discard()
            self._update(rec, "failed", error=str(one_line_error(exc, "save failed")))
            done.set()
            return
        try:
            self._commit(step, rec, writer, rank, 1, pointer)  # no collectives off the main thread
        except Exception as exc:
            self._located = self._held = None  # the volume may have moved: the next save looks again
            self._update(rec, "failed", error=str(exc))
        finally:
            done.set()

    def wait(self) -> None:
        """Wait for a background save to finish (committed or failed), and its pruning."""
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is not None:
            fut, done, _ = pending
            try:
                fut.result()
            except BaseException:
                pass  # recorded as failed by the callback
            done.wait()  # committed (or failed) and published
        self._wait_tail()

    def _commit(
        self, step: int, rec: dict[str, Any], writer: UCVolumeWriter, rank: int, world: int, pointer: StagedText | None
    ) -> None:
        if rank == 0:
            folder = self._held_folder()
            try:  # (relative to the held folder: no path is resolved again, see .held_folder)
                # _COMMITTED: written by the writer beside its last files when it wrote the folder in place
                marker = None if writer.marker_written else commit_marker(step, writer.checksums or None, ALGORITHM)
                final = f"step_{int(step)}"
                folder.commit(writer.volume_path.name, final, marker=COMMITTED, text=marker)
                # the pointer before the call returns (another process's view, the sidebar, reads it); not
                # fsynced: it is a hint every reader checks (a pointer a power cut kept at the previous
                # step names a complete one, as if the crash had come a moment earlier)
                if pointer is not None:  # (rank 0 has one: see save)
                    pointer.publish()
            except BaseException:
                self._located = self._held = None  # the folder may have moved: the next save looks again
                if pointer is not None:
                    pointer.discard()
                raise
            self._saves.latest = step
            # committed: with one process the pruning need not hold the caller (see .pruning)
            self._pruner.after_commit(rec, self._saves.publish, background=world == 1)
        ranks.barrier(world)
        seconds = time.time() - rec["started"]
        per_rank = writer.rank_bytes if len(writer.rank_bytes) > 1 else None  # rank 0 saw every rank's files
        total = sum(per_rank) + writer.bytes_uploaded - writer.rank_bytes[0] if per_rank else writer.bytes_uploaded
        self._update(
            rec,
            "committed",
            bytes=total,
            seconds=seconds,
            mb_per_s=total / 1e6 / seconds if seconds > 0 else 0.0,
            rank_bytes=per_rank,
        )

    def _wait_tail(self) -> None:
        """Wait for the last save's pruning (see :mod:`.pruning`)."""
        self._pruner.wait()

    def cleanup(self, *, older_than: float = 0.0) -> list[str]:
        """Remove leftovers of crashed saves and prunes; returns their names.

        ``.pruning-*`` folders always go. ``.pending-*`` folders and uncommitted ``step_N`` folders
        (never loadable: e.g. on object stores a killed prune already deleted the marker) go when
        older than *older_than* seconds, except this manager's running save. Call it while no other
        process saves here: a pending folder does not say which process owns it.
        """
        return self._pruner.cleanup(older_than=older_than, active=self._active)

    # -- loading --------------------------------------------------------------------------------
    def load(self, state: dict[str, Any], step: int | None = None) -> int:
        """Load into *state* (in place) from *step* or the latest complete one; returns the step."""
        return self._load_step(state, self._pick(step))

    def _load_step(self, state: dict[str, Any], step: int) -> int:
        import torch.distributed.checkpoint as dcp

        with earlier_step_on_corruption(self.steps, step):
            try:
                with single_process_quiet():
                    dcp.load(state, storage_reader=self._reader(step))
            except BaseException as exc:
                if isinstance(exc, (KeyboardInterrupt, SystemExit, AirError)) or corruption_in(exc):
                    raise
                raise one_line_error(
                    exc,
                    f"checkpoint {self.step_path(step)} does not match the state to load (different model or keys?)",
                ) from None
        return step

    def verify(self, step: int | None = None) -> int:
        """Check every file of *step* (default: the latest) against the checksums recorded when it
        was saved, before trusting it (e.g. after copying checkpoints around). Returns the step;
        raises :class:`CheckpointCorruptError` naming the first bad file. Steps saved before
        checksums existed are checked for presence and size only."""
        step = self._pick(step)
        with earlier_step_on_corruption(self.steps, step):
            self._reader(step).verify()
        return step

    def _reader(self, step: int) -> UCVolumeReader:
        read = self._held_folder().marker_read  # (an object store's step: its marker just read, a GET less)
        marker = read[1] if read is not None and read[0] == f"step_{int(step)}" else None
        return UCVolumeReader(self.step_path(step), store=self.store, marker_text=marker)

    def restore(
        self, *, model: Any = None, optimizer: Any = None, loader: Any = None, step: int | None = None
    ) -> int | None:
        """Restore model, optimizer and loader from *step* or the latest; ``None`` if there is none yet."""
        newest = self.latest() if step is None else None  # (verified: not picked again)
        if step is None and newest is None:
            return None
        if model is None and loader is None:
            raise CheckpointError("nothing to restore into: pass model= (and optimizer=) and/or loader=")
        step = newest if newest is not None else self._pick(step)
        rank, _ = ranks.rank_and_world()
        state = model_state(model, optimizer)
        key = None
        if loader is not None:
            with earlier_step_on_corruption(self.steps, step):
                key = loader_key(set(self._reader(step).read_metadata().state_dict_metadata), rank)
            if key is None and model is None:
                raise CheckpointError(
                    f"{self.step_path(step)} holds no loader state: it was saved without loader=; "
                    "save with mgr.save(step, loader=loader) to resume a loader"
                )
        if key:
            state[key] = ""
        self._load_step(state, step)
        apply_state(state, model, optimizer, loader, key)
        return step

    def _pick(self, step: int | None) -> int:
        self._wait_tail()  # a step being pruned is not picked
        if step is None:
            step = self.latest()
            if step is None:
                raise CheckpointError(f"no complete checkpoint in {self.directory}; save one first")
        elif not self._committed(step):
            raise CheckpointError(
                f"{self.step_path(step)} is missing or incomplete; complete steps: {self.steps() or 'none'}"
            )
        return step
