"""The copy of a state that a background-staged save writes from, taken on parallel threads into buffers kept between saves.

Why not torch's ``DefaultStager`` for a CPU state: it copies one storage at a time on one thread,
holding the GIL through each copy (``UntypedStorage.copy_``), and on a virtual machine the first
touch of fresh memory is what a first copy costs (pages the host must back: 400-600 MB/s here
once the process has freed memory before). Copying in chunks on :func:`~air_magics.io.pools.threads`
``("cpu")`` threads, with the GIL let go (``Tensor.copy_``), takes a 1 GiB state's first copy from
0.5-2.0 s to 0.33-0.6 s on 2 cores, and later copies, into the same buffers, run at memory speed.

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

__all__ = ["BufferStager", "copies_itself"]

_CHUNK_BYTES = 16 << 20  # one copy job: small enough to spread a large tensor over the threads
_DRIVER = ProcessPool(1, "air-ckpt-staging")  # plans a staging and waits for its copies


class BufferStager:
    """Stages a state (nested dicts, lists and tuples of tensors and plain values) on background
    threads into buffers kept for the next save: ``stage(state)`` returns a ``Future`` of the copy
    at once; the caller must not change the state until it is done (``wait_staged()``).

    The buffers are this stager's for its lifetime (a second copy of the state in memory, as with
    torch's stager); :meth:`close` lets them go. One staging at a time: a second ``stage`` call
    waits for the first to finish copying."""

    _synchronize_after_execute = False  # the loop synchronizes: wait_staged() before the weights change

    def __init__(
        self, fallback: Callable[[], Any] | None = None, workers: int | None = None, keep: bool = True
    ) -> None:
        """*fallback* makes the stager for states this one does not copy itself (torch's
        ``DefaultStager`` with the manager's options; required for :meth:`stage`); *workers* copy
        threads (default: the ``"cpu"`` pool size); *keep*: keep the buffers for the next
        staging (False: each staging's copy is new, and freed with it)."""
        self._fallback_factory = fallback
        self._keep = keep
        self._fallback: Any = None
        self._workers = workers
        self._copies: ProcessPool | None = None
        self._buffers: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # path -> (shape, dtype, stride), buffer
        self._last: Future[Any] | None = None

    @property
    def should_synchronize_after_execute(self) -> bool:
        """False: ``async_save`` returns without waiting for the copy; the loop waits for it."""
        return False

    def stage(self, state: Any) -> Future[Any]:
        """A ``Future`` of the staged copy of *state* (a plain CPU state here; anything else by the fallback)."""
        if not copies_itself(state):
            if self._fallback is None:
                if self._fallback_factory is None:
                    raise TypeError("this BufferStager has no fallback for a state of other than plain CPU tensors")
                self._fallback = self._fallback_factory()
            staged = self._fallback.stage(state)
            if not isinstance(staged, Future):  # a synchronous stager: done already
                done: Future[Any] = Future()
                done.set_result(staged)
                staged = done
            self._last = staged
            return staged
        fut = _DRIVER.get().submit(self.stage_now, state)
        self._last = fut
        return fut

    def stage_now(self, state: Any) -> Any:
        """The staged copy of *state* (plain CPU tensors: :func:`copies_itself`), taken now: the
        caller waits while the pool's threads copy."""
        import torch

        with torch.no_grad():
            jobs: list[tuple[Any, Any]] = []
            kept: dict[tuple[Any, ...], tuple[Any, Any]] = {}
            staged = self._copy_of(state, (), jobs, kept, {}, torch)
            self._buffers = kept if self._keep else {}  # buffers of names that left the state are let go
            if self._copies is None:
                self._copies = ProcessPool(self._workers or threads("cpu"), "air-ckpt-copy")
            if len(jobs) > 1:
                for fut in [self._copies.get().submit(_copy, d, s) for d, s in jobs]:
                    fut.result()
            elif jobs:
                _copy(*jobs[0])
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


def copies_itself(state: Any) -> bool:
    """True when every tensor in *state* is a plain strided CPU tensor (or ``Parameter``): what
    :class:`BufferStager` copies itself (anything else goes to its fallback)."""
    import torch

    return _plain_cpu(state, torch)


def _plain_cpu(x: Any, torch: Any) -> bool:
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


def _copy(dst: Any, src: Any) -> None:
    dst.copy_(src)
