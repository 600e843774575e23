"""The copy of a state that a background-staged save writes from, taken on parallel threads into buffers kept between saves.

Why not torch's ``DefaultStager`` for a CPU state: it copies one storage at a time on one thread,
holding the GIL through each copy (``UntypedStorage.copy_``), while the save's other threads (DCP's
planning on the manager's starter thread, the status events) want it too. Here the copies run in
16 MB batches on the ``"cpu"`` pool's threads with the GIL let go (``Tensor.copy_``). Measured in
the manager's own sequence (1 GiB, after a save, a load and an async save in the process): the
loop's block after 1 s of compute fell from 0.18 s to 0.007-0.06 s. Alone in a quiet process both
copy 1 GiB of fresh memory in the same 0.3-0.5 s: a first copy is bound by the first touch of its
pages (on this VM 0.7-3 GB/s, depending on what the host must back), which is why the buffers
are kept: every later copy runs at memory speed (0.1 s).

A state with anything but plain strided CPU tensors (CUDA tensors, ``DTensor``, sparse or
quantized tensors) is staged by torch's ``DefaultStager`` (pinned buffers where CUDA is there), so
those keep torch's semantics exactly.

Implements torch's public ``AsyncStager`` protocol (``stage``, ``should_synchronize_after_execute``,
``synchronize_staging``, ``close``), so it plugs into ``dcp.async_save(async_stager=...)``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..io.pools import ProcessPool, threads

__all__ = ["BufferStager"]

_CHUNK_BYTES = 16 << 20  # one copy job: small enough to spread a large tensor over the threads
_DRIVER = ProcessPool(1, "air-ckpt-staging")  # plans a staging and waits for its copies
_COPIES = ProcessPool(threads("cpu"), "air-ckpt-copy")  # the copy threads (made on first use, per process)


class BufferStager:
    """Stages a state (nested dicts, lists and tuples of tensors and plain values) on background
    threads into buffers kept for the next save: ``stage(state)`` returns a ``Future`` of the copy
    at once; the caller must not change the state until it is done (``wait_staged()``).

    The buffers are this stager's for its lifetime (a second copy of the state in memory, as with
    torch's stager); :meth:`close` lets them go. One staging at a time: a second ``stage`` call
    waits for the first to finish copying."""

    _synchronize_after_execute = False  # the loop synchronizes: wait_staged() before the weights change

    def __init__(self, fallback: Callable[[], Any]) -> None:
        """*fallback* makes the stager for states this one does not copy itself (torch's
        ``DefaultStager`` with the manager's options)."""
        self._fallback_factory = fallback
        self._fallback: Any = None
        self._buffers: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # path -> (shape, dtype, stride), buffer
        self._last: Future[Any] | None = None

    @property
    def should_synchronize_after_execute(self) -> bool:
        """False: ``async_save`` returns without waiting for the copy; the loop waits for it."""
        return False

    def stage(self, state: Any) -> Future[Any]:
        """A ``Future`` of the staged copy of *state* (a plain CPU state here; anything else by the fallback)."""
        import torch

        if not _plain_cpu(state, torch):
            if self._fallback is None:
                self._fallback = self._fallback_factory()
            staged = self._fallback.stage(state)
            if not isinstance(staged, Future):  # a synchronous stager: done already
                done: Future[Any] = Future()
                done.set_result(staged)
                staged = done
            self._last = staged
            return staged
        fut = _DRIVER.get().submit(self._stage, state)
        self._last = fut
        return fut

    def _stage(self, state: Any) -> Any:
        import torch

        with torch.no_grad():
            jobs: list[tuple[Any, Any]] = []
            kept: dict[tuple[Any, ...], tuple[Any, Any]] = {}
            staged = self._copy_of(state, (), jobs, kept, {}, torch)
            self._buffers = kept  # buffers of names that left the state are let go
            batches = _batches(jobs)
            if len(batches) > 1:
                pool = _COPIES.get()
                for fut in [pool.submit(_copy, batch) for batch in batches]:
                    fut.result()
            elif batches:
                _copy(batches[0])
            return staged

    def synchronize_staging(self) -> None:
        """Wait until the last staging is done (errors are the future's to report)."""
        if self._last is not None:
            try:
                self._last.result()
            except BaseException:
                pass

    def close(self) -> None:
        """Let go of the kept buffers (and the fallback's)."""
        self.synchronize_staging()
        self._buffers = {}
        if self._fallback is not None:
            self._fallback.close()
            self._fallback = None

    def _copy_of(
        self,
        x: Any,
        path: tuple[Any, ...],
        jobs: list[tuple[Any, Any]],
        kept: dict[tuple[Any, ...], tuple[Any, Any]],
        memo: dict[int, Any],
        torch: Any,
    ) -> Any:
        """The staged counterpart of *x*: a buffer for a tensor (its copy queued in *jobs*), a
        container of staged items, or a deep copy of a plain value."""
        if isinstance(x, torch.Tensor):
            if id(x) in memo:  # one tensor under two names (tied weights): one copy
                return memo[id(x)]
            key = (x.shape, x.dtype, x.stride())
            old = self._buffers.get(path)
            buf = old[1] if old is not None and old[0] == key else torch.empty_like(x, requires_grad=False)
            kept[path] = (key, buf)
            memo[id(x)] = buf
            jobs.extend(_chunks(buf, x.detach()))  # (grad mode is per thread: the copy is never tracked)
            return buf
        if isinstance(x, dict):
            out = {k: self._copy_of(v, (*path, k), jobs, kept, memo, torch) for k, v in x.items()}
            if type(x) is dict:
                return out
            same = copy.copy(x)  # an OrderedDict or defaultdict stays one
            same.update(out)
            return same
        if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
            return type(x)(self._copy_of(v, (*path, i), jobs, kept, memo, torch) for i, v in enumerate(x))
        return copy.deepcopy(x)


def _plain_cpu(x: Any, torch: Any) -> bool:
    """True when every tensor in *x* is a plain strided CPU tensor (or ``Parameter``): what
    :class:`BufferStager` copies itself (anything else goes to its fallback)."""
    if isinstance(x, torch.Tensor):
        return (
            type(x) in (torch.Tensor, torch.nn.Parameter)
            and x.device.type == "cpu"
            and x.layout == torch.strided
            and not x.is_quantized
        )
    if isinstance(x, dict):
        return all(_plain_cpu(v, torch) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(_plain_cpu(v, torch) for v in x)
    return True


def _chunks(dst: Any, src: Any) -> list[tuple[Any, Any]]:
    """*src* into *dst* as copy jobs of about ``_CHUNK_BYTES`` (one job unless both are contiguous)."""
    if src.numel() == 0:
        return []
    if not (src.is_contiguous() and dst.is_contiguous()):
        return [(dst, src)]
    d, s = dst.view(-1), src.view(-1)
    step = max(1, _CHUNK_BYTES // max(1, s.element_size()))
    return [(d[a : a + step], s[a : a + step]) for a in range(0, s.numel(), step)]


def _batches(jobs: list[tuple[Any, Any]]) -> list[list[tuple[Any, Any]]]:
    """*jobs* in order, as batches of about ``_CHUNK_BYTES`` each (small tensors together: one
    thread hand-off per batch, not per tensor)."""
    out: list[list[tuple[Any, Any]]] = []
    size = _CHUNK_BYTES
    for job in jobs:
        if size >= _CHUNK_BYTES:
            out.append([])
            size = 0
        out[-1].append(job)
        size += job[1].numel() * job[1].element_size()
    return out


def _copy(batch: list[tuple[Any, Any]]) -> None:
    for dst, src in batch:
        dst.copy_(src)
