"""Run a script on several ranks with torch's own launcher (``torch.distributed.run``), live.

Why: code written in a notebook cannot be started on several ranks with ``torch.multiprocessing``
(functions defined in a notebook do not pickle under spawn), and ``torchrun`` in a terminal loses
the notebook. Here the cell becomes a script that torch's elastic agent starts on each rank (with
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT`` set by it), and the
ranks' output streams into the caller as it is printed: rank 0's (or every rank's, prefixed
``[rank k]``). A rank that fails ends the run with that rank's traceback; a timeout or Ctrl-C stops
the launcher and every rank (their own process group), so nothing is left running.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import AirError
from .events import LAUNCH_ID_ENV

__all__ = [
    "RankRun",
    "LaunchError",
    "RankFailedError",
    "RankTimeoutError",
    "run_script",
    "launch",
    "last_traceback",
    "NO_VALUE",
    "LAUNCHER_OPTIONS",
]

# run_script's options that launch() takes from its keyword arguments (the rest go to the function)
LAUNCHER_OPTIONS = ("nnodes", "node_rank", "rdzv_endpoint", "rdzv_backend", "max_restarts", "all_ranks", "timeout")

_LINE = re.compile(r"^\[rank(\d+)\]:(.*)$", re.DOTALL)
_KEEP_LINES = 400  # per rank, for the traceback of a rank that fails
NO_VALUE: Any = type("NoValue", (), {"__repr__": lambda self: "<no value>"})()


class LaunchError(AirError, ValueError):
    """A launch that cannot start as asked (ranks, nodes, return name); nothing was run."""


class RankFailedError(AirError, RuntimeError):
    """A rank exited with an error; the message is which rank, then its traceback."""


class RankTimeoutError(AirError, TimeoutError):
    """The ranks ran past ``timeout``; every one was stopped."""


@dataclass
class RankRun:
    """What a run left: the launcher's exit code, each rank's (from torch's summary, when it
    failed), the wall time and rank 0's value of the ``return_name`` variable."""

    exit_code: int
    wall_s: float
    nproc_per_node: int
    failed_ranks: dict[int, int] = field(default_factory=dict)  # rank -> exit code
    value: Any = NO_VALUE
    ranks: tuple[int, ...] = ()  # the ranks that ran here (global numbers), as their output named them

    @property
    def exit_codes(self) -> dict[int, int]:
        """Each rank's exit code (0 unless torch's failure summary names it)."""
        return {r: self.failed_ranks.get(r, 0) for r in sorted({*self.ranks, *self.failed_ranks})}

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def __repr__(self) -> str:
        what = "ok" if self.ok else f"failed (ranks {sorted(self.failed_ranks) or '?'})"
        value = "" if self.value is NO_VALUE else f", value={self.value!r}"
        return f"RankRun({self.nproc_per_node} rank(s) per node, {what}, {self.wall_s:.1f} s{value})"


def _epilogue(name: str, out: str) -> str:
    """Code appended to the script: rank 0 pickles its variable *name* to *out*."""
    return (
        f"\n\nif __import__('os').environ.get('RANK') == '0' and {name!r} in globals():\n"
        f"    with open({out!r}, 'wb') as _air_f:\n"
        f"        __import__('pickle').dump({name}, _air_f)\n"
    )


def _command(
    script: str,
    nproc_per_node: int,
    nnodes: str,
    node_rank: int,
    rdzv_endpoint: str | None,
    rdzv_backend: str,
    max_restarts: int,
) -> list[str]:
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc_per_node)]
    if nnodes == "1" and rdzv_endpoint is None:
        argv.append("--standalone")  # a free port of torch's choosing
    else:
        if rdzv_endpoint is None:
            raise LaunchError(f"--nnodes {nnodes}: give --rdzv-endpoint HOST:PORT, the same on every node")
        argv += ["--nnodes", nnodes, "--node-rank", str(node_rank), "--rdzv-endpoint", rdzv_endpoint]
        argv += ["--rdzv-backend", rdzv_backend]
    argv += ["--max-restarts", str(max_restarts), "--tee", "3", script]
    return argv


def _stop(proc: subprocess.Popen[str], grace: float = 5.0) -> None:
    """SIGTERM to the launcher's process group (it stops its ranks), SIGKILL after *grace*."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_script(
    code: str,
    *,
    nproc_per_node: int,
    nnodes: str = "1",
    node_rank: int = 0,
    rdzv_endpoint: str | None = None,
    rdzv_backend: str = "c10d",
    max_restarts: int = 0,
    all_ranks: bool = False,
    timeout: float | None = None,
    return_name: str | None = None,
    write: Callable[[str], Any] | None = None,
    env: dict[str, str] | None = None,
) -> RankRun:
    """Run *code* as a script on ``nproc_per_node`` ranks (per node) with ``torch.distributed.run``.

    Output lines go to *write* (default: ``sys.stdout``) as they come: rank 0's, or every rank's as
    ``[rank k] line`` with ``all_ranks``. Raises :class:`RankFailedError` (which rank, its
    traceback) when a rank fails, :class:`RankTimeoutError` past *timeout* seconds; on Ctrl-C every
    rank is stopped and ``KeyboardInterrupt`` raised. *env* adds variables to the ranks' environment.
    """
    if nproc_per_node < 1:
        raise LaunchError(f"nproc_per_node={nproc_per_node}: give 1 or more ranks per node")
    if return_name is not None and not return_name.isidentifier():
        raise LaunchError(f"return name {return_name!r} is not a Python variable name")
    out = write or (lambda s: (sys.stdout.write(s), sys.stdout.flush()))
    with tempfile.TemporaryDirectory(prefix="air-torchrun-") as tmp:
        script, result = Path(tmp) / "cell.py", Path(tmp) / "value.pkl"
        script.write_text(code + (_epilogue(return_name, str(result)) if return_name else "") + "\n")
        argv = _command(str(script), nproc_per_node, nnodes, node_rank, rdzv_endpoint, rdzv_backend, max_restarts)
        child_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
        child_env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = "[rank${rank}]:"  # the global rank, on every node
        child_env.setdefault(LAUNCH_ID_ENV, uuid.uuid4().hex[:12])  # the ranks' loaders group by it (status docs)
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env=child_env,
            start_new_session=True,  # the launcher and its ranks: one group to stop
        )
        tails: dict[int, deque[str]] = {}
        launcher: deque[str] = deque(maxlen=_KEEP_LINES)
        reader = threading.Thread(
            target=_pump, args=(proc, tails, launcher, all_ranks, out), daemon=True, name="air-torchrun-output"
        )
        reader.start()
        try:
            code_ = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
            reader.join(5)
            raise RankTimeoutError(
                f"the ranks ran past --timeout {timeout:g} s and were stopped; give a longer --timeout or find the hang "
                f"(--all-ranks shows every rank's output)"
            ) from None
        except BaseException:  # Ctrl-C, or the kernel stopping the cell: nothing is left running
            _stop(proc)
            reader.join(5)
            raise
        reader.join(10)
        wall = time.monotonic() - start
        failed = _failed_ranks(launcher)
        here = tuple(sorted(tails)) if nnodes != "1" else tuple(range(nproc_per_node))
        run = RankRun(code_, wall, nproc_per_node, failed, ranks=here)
        if code_ != 0:
            raise RankFailedError(_failure_message(code_, failed, tails, launcher))
        if return_name is not None:
            if not result.exists() and nnodes != "1":  # rank 0 runs on another node: its value is there
                return run
            if not result.exists():
                raise RankFailedError(
                    f"rank 0 finished without a variable {return_name!r} to return; assign it in the cell"
                )
            with open(result, "rb") as f:
                run.value = pickle.load(f)
        return run


def _pump(
    proc: subprocess.Popen[str],
    tails: dict[int, deque[str]],
    launcher: deque[str],
    all_ranks: bool,
    out: Callable[[str], Any],
) -> None:
    """Read the launcher's merged output: ranks' lines shown (rank 0, or all) and kept per rank;
    the launcher's own lines kept for the failure summary, never shown."""
    assert proc.stdout is not None
    for line in proc.stdout:
        m = _LINE.match(line)
        if m is None:
            launcher.append(line)
            continue
        rank, text = int(m.group(1)), m.group(2)
        tails.setdefault(rank, deque(maxlen=_KEEP_LINES)).append(text)
        if all_ranks:
            out(f"[rank {rank}] {text}")
        elif rank == 0:
            out(text)


_SUMMARY = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank: \d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)")


def _failed_ranks(launcher: Sequence[str]) -> dict[int, int]:
    """Rank -> exit code from the launcher's failure summary (``ChildFailedError``)."""
    text = "".join(launcher)
    return {int(r): int(c) for r, c in _SUMMARY.findall(text)}


_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(:\s|:$|$)")  # "ValueError: ...", "KeyboardInterrupt"


def last_traceback(lines: list[str]) -> str:
    """A rank's last traceback among its output lines. torch tees a rank's stdout and stderr
    separately, so a line the rank printed can arrive inside or after the traceback: the block is
    its header, the indented frame lines, and the first line after them that reads as an exception
    (``Name: message``); other lines are left out. No traceback: the last 20 lines."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return "".join(lines[-20:]).rstrip()
    block = [lines[starts[-1]]]
    for line in lines[starts[-1] + 1 :]:
        if line.startswith((" ", "\t")):
            block.append(line)
        elif _EXCEPTION_LINE.match(line.rstrip("\n")):
            block.append(line)
            break
    return "".join(block).rstrip()


def _failure_message(code: int, failed: dict[int, int], tails: dict[int, deque[str]], launcher: deque[str]) -> str:
    if not failed:  # the launcher itself failed (a bad flag, the rendezvous): its own last lines
        tail = "".join(list(launcher)[-15:]).rstrip()
        return f"torch.distributed.run exited with code {code}:\n{tail}"
    # the rank that failed by itself: a positive exit code (its own error) before one a signal ended
    # (-15: the launcher stopping the others, which its summary lists as failed too; a race decides
    # whether it does), then the lowest rank
    rank = min(failed, key=lambda r: (failed[r] < 0, r))
    trace = last_traceback(list(tails.get(rank, ())))
    others = sorted(set(failed) - {rank})
    also = f" (ranks {others} failed too)" if others else ""
    return f"rank {rank} failed with exit code {failed[rank]}{also}; the other ranks were stopped:\n{trace}"


def launch(fn: Callable[..., Any], *args: Any, nproc_per_node: int, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` on every rank; rank 0's return value.

    *fn* and its arguments are pickled with ``cloudpickle`` (by value when defined in a notebook or
    ``__main__``, so they exist in the ranks' fresh interpreters); the keyword arguments named in
    :data:`LAUNCHER_OPTIONS` go to :func:`run_script`, the others to *fn*. Errors as :func:`run_script`."""
    try:
        import cloudpickle
    except ImportError:
        raise ImportError(
            "air_magics.launch pickles the function by value with cloudpickle: pip install 'air_magics[data]' "
            "(or cloudpickle)"
        ) from None
    options = {k: kwargs.pop(k) for k in LAUNCHER_OPTIONS if k in kwargs}
    with tempfile.TemporaryDirectory(prefix="air-launch-") as tmp:
        payload = Path(tmp) / "call.pkl"
        payload.write_bytes(cloudpickle.dumps((fn, args, kwargs)))
        code = (
            "import cloudpickle\n"
            f"with open({str(payload)!r}, 'rb') as _air_f:\n"
            "    _air_fn, _air_args, _air_kwargs = cloudpickle.load(_air_f)\n"
            "result = _air_fn(*_air_args, **_air_kwargs)\n"
        )
        return run_script(code, nproc_per_node=nproc_per_node, return_name="result", **options).value
