"""``%%air_torchrun --nproc-per-node N [...] [--all-ranks] [--timeout S] [--return NAME] [-o VAR]``.

The cell runs as a script on N ranks through torch's own launcher (:mod:`air_magics.torch_launcher`),
with torchrun's flag names; its output streams into the cell as the ranks print (rank 0's, or every
rank's with ``--all-ranks``). A rank that fails ends the cell with one line naming the rank, then
its traceback. The kernel's settings (``%config AirMagics.*``) reach the ranks as their ``AIR_*``
variables. Returns a :class:`~air_magics.torch_launcher.RankRun` (``-o VAR`` stores it); with
``--return NAME`` its ``value`` is rank 0's ``NAME``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from ._common import check_output, output_argument, parse_line, store_output, with_arguments

__all__ = ["arguments", "run"]


def arguments(func: Callable[..., Any]) -> Callable[..., Any]:
    return with_arguments(
        func,
        argument(
            "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int, metavar="N", help="ranks on this node"
        ),
        argument("--nnodes", default="1", metavar="N", help="nodes (torchrun's: N or MIN:MAX); default 1"),
        argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0, help="this node's rank"),
        argument("--rdzv-endpoint", "--rdzv_endpoint", dest="rdzv_endpoint", metavar="HOST:PORT", help="rendezvous"),
        argument("--rdzv-backend", "--rdzv_backend", dest="rdzv_backend", default="c10d", help="default c10d"),
        argument("--max-restarts", "--max_restarts", dest="max_restarts", type=int, default=0, help="default 0"),
        argument("--all-ranks", action="store_true", help="show every rank's output as [rank k] (default: rank 0's)"),
        argument("--timeout", type=float, metavar="S", help="stop every rank after S seconds"),
        argument("--return", dest="return_name", metavar="NAME", help="rank 0's value of variable NAME, in .value"),
        output_argument(),
    )


def _rank_environment(magics: Any) -> dict[str, str]:
    """What the ranks inherit from the kernel beyond its environment: ``%config AirMagics.*`` as
    ``AIR_*`` variables and the ``%air_volume use`` volume as ``AIR_DEFAULT_VOLUME``."""
    from ..volumes.path import DEFAULT_VOLUME_ENV

    env = magics.as_environment()
    if magics.default_volume:
        env[DEFAULT_VOLUME_ENV] = magics.default_volume
    return env


def run(magics: Any, line: str, cell: str | None) -> Any:
    from ..torch_launcher import run_script

    args = parse_line(magics.air_torchrun, line)
    check_output(args.output)
    if not cell or not cell.strip():
        raise UsageError("%%air_torchrun runs its cell on every rank: put the training code below the magic line")
    if args.nproc is None or args.nproc < 1:
        got = "nothing" if args.nproc is None else args.nproc
        raise UsageError(f"%%air_torchrun needs --nproc-per-node N (1 or more ranks on this node), got {got}")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give the seconds to wait (more than 0), or leave it out")
    if args.return_name is not None and not args.return_name.isidentifier():
        raise UsageError(f"--return {args.return_name!r}: give the name of a variable the cell assigns")
    result = run_script(
        cell,
        nproc_per_node=args.nproc,
        nnodes=args.nnodes,
        node_rank=args.node_rank,
        rdzv_endpoint=args.rdzv_endpoint,
        rdzv_backend=args.rdzv_backend,
        max_restarts=args.max_restarts,
        all_ranks=args.all_ranks,
        timeout=args.timeout,
        return_name=args.return_name,
        env=_rank_environment(magics),
    )
    return store_output(magics, args.output, result)
