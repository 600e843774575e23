"""How the checkpoint manager calls torch's DCP: quietly, and a background save from a thread of its own.

Why a module of its own: these are the manager's seams to ``torch.distributed.checkpoint``, and
each works around one behaviour of it (a warning per single-process call, ~200 DEBUG records a
save into a discarding handler, the GIL taken by the staging thread that ``async_save`` starts
while its caller is still in the call).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from ..io.pools import ProcessPool

__all__ = ["async_save_on_thread", "dcp_debug_off", "default_stager", "quiet_async_saves", "single_process_quiet"]

_STARTER = ProcessPool(1, "air-ckpt-save")  # where async_save_on_thread calls async_save
_DCP_LOGGER = "c10d-NullHandler-dcp_logger"  # torch's: DEBUG, into a NullHandler
_UNINITIALIZED = "torch.distributed is disabled, unavailable or uninitialized"  # its single-process warning


def quiet_async_saves() -> None:
    """An async save's staging thread warns outside any caller's scope, and the warnings module has
    no per-thread filters: from the first async save on, this one torch message (only it, only as
    attributed to torch.distributed.checkpoint) is ignored in the process. Idempotent."""
    warnings.filterwarnings(
        "ignore",
        message=_UNINITIALIZED,
        category=UserWarning,
        module=r"torch\.distributed\.checkpoint",
    )


@contextmanager
def single_process_quiet() -> Iterator[None]:
    """DCP warns on every single-process save and load ("assuming the intent is to ... in a single
    process"), the normal case here. Scoped to the call: the user's own warning filters are left
    alone (an async save's background thread may still warn once). DCP's debug records are off
    meanwhile (:func:`dcp_debug_off`)."""
    with warnings.catch_warnings(), dcp_debug_off():
        warnings.filterwarnings("ignore", message=_UNINITIALIZED, category=UserWarning)
        yield


@contextmanager
def dcp_debug_off() -> Iterator[None]:
    """DCP makes two DEBUG log records for each of its steps (~200 for a 100-tensor save, 7 ms of
    the caller's time in a background save's call) for a logger whose only handler discards them;
    inside the block that logger records INFO and up (unless someone lowered it, or gave it a
    handler of their own). Safe on any thread: the warnings filters are process-wide, this is not."""
    log = logging.getLogger(_DCP_LOGGER)
    level = log.level
    quiet = level == logging.DEBUG and all(isinstance(h, logging.NullHandler) for h in log.handlers)
    if quiet:
        log.setLevel(logging.INFO)
    try:
        yield
    finally:
        if quiet:
            log.setLevel(level)


def async_save_on_thread(state: Any, writer: Any, stager: Any) -> tuple[Future[Any], Future[Any]]:
    """``dcp.async_save(state, storage_writer=writer, async_stager=stager)`` started on a thread of
    its own; returns (upload done, staging done) at once.

    Why: ``async_save`` starts the staging thread inside the call, and everything the caller does
    after that (DCP's own setup, the upload thread's start, the manager's bookkeeping) waits for
    the GIL behind the copy: 6-15 ms of a 13-25 ms call (256 MB, in-process). The state must not
    change until the staging is done, as with ``async_save`` itself (``wait_staged()``). A
    failure to start (a planning error) fails both futures. One process only: ranks keep the
    call on their own thread, where DCP's collectives are ordered."""
    import torch.distributed.checkpoint as dcp

    upload: Future[Any] = Future()
    staged: Future[Any] = Future()

    def chain(src: Any, dst: Future[Any]) -> None:
        def done(f: Any) -> None:
            exc = f.exception()
            dst.set_exception(exc) if exc is not None else dst.set_result(f.result())

        src.add_done_callback(done)

    def run() -> None:
        try:
            with dcp_debug_off():  # (quiet_async_saves filters the warning: filters are process-wide)
                resp = dcp.async_save(state, storage_writer=writer, async_stager=stager)
        except BaseException as exc:
            staged.set_exception(exc)
            upload.set_exception(exc)
            return
        chain(resp.staging_completion, staged)
        chain(resp.upload_completion, upload)

    _STARTER.get().submit(run)  # a thread kept for it: a new one's start waits for the GIL behind the copy
    return upload, staged


def default_stager() -> Any:
    """torch's ``DefaultStager`` as a background-staged save uses it: the copy on its own thread,
    into pinned memory with non-blocking copies where CUDA is there."""
    import torch
    from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions

    cuda = torch.cuda.is_available()
    return DefaultStager(
        StagingOptions(
            use_pinned_memory=cuda, use_shared_memory=False, use_async_staging=True, use_non_blocking_copy=cuda
        )
    )
