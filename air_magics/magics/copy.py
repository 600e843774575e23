"""``%%air_copy --to DEST [--from SRC ...] [--workers N] [--overwrite] [--dry-run] [--allow-failures] [-o VAR]``.

``--to`` is the destination (its one meaning in every magic); ``--workers`` defaults to the
``workers`` setting (``%config AirMagics.workers``, ``$AIR_COPY_WORKERS``, 64). Sources are
``/Volumes/...`` paths or globs, local absolute paths, or paths relative to the default volume.
The body, one source per line, is taken literally (``x{7*6}.txt`` is that file; nothing in it is
evaluated or expanded); the magic line expands ``{name}``/``$name`` of notebook variables only, so a
source held in a variable goes on the line: ``%%air_copy --from {local_dir}/train --to /Volumes/...``
(``--from`` may repeat, and the body may then be empty). The relative
layout below each source's anchor is kept (see :mod:`air_magics.transfer.copy_plan`). Returns the
:class:`~air_magics.transfer.CopyReport` (``-o VAR`` stores it in VAR too).

A copy where any file failed shows its report (which side failed for each file: reading the
source or writing the destination), then ends with a one-line error naming how many failed, so
"Run All" stops there; ``--allow-failures`` returns the report instead, as the Python API
``air_magics.copy()`` always does (check ``report.ok`` there).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

from ..errors import AirError
from ..transfer import copy_files, parse_sources, plan_copy
from ..widgets import copy_progress_view
from ._common import check_output, expand_names, output_argument, parse_line, store_output
from ._state import default_volume, store

_ARGUMENTS = (
    argument("--to", dest="dest", metavar="DEST", help="destination folder: local path or /Volumes/..."),
    argument(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="SRC",
        help="a source on the magic line (repeatable), where {name}/$name of notebook variables are expanded; "
        "the body's lines are taken literally",
    ),
    argument(
        "--workers",
        type=int,
        metavar="N",
        help="parallel copies (default: the workers setting, %%config AirMagics.workers, else 64)",
    ),
    argument("--overwrite", action="store_true", help="copy even files that are already there unchanged"),
    argument("--dry-run", action="store_true", help="only report what would be copied or skipped"),
    argument(
        "--allow-failures",
        action="store_true",
        help="return the report even when files failed (default: show it, then raise an error)",
    ),
    output_argument(),
    argument("-q", "--quiet", action="store_true", help="no progress display"),
    argument("--job", metavar="NAME", help="name shown for this copy in the sidebar's jobs (default: random)"),
)


def arguments(func: Callable[..., Any]) -> Callable[..., Any]:
    """The magic's options; ``name`` makes its help and usage read ``%%air_copy`` (a cell magic)."""
    for deco in reversed((magic_arguments(name="%air_copy"), *_ARGUMENTS)):
        func = deco(func)
    return func


def run(magics: Any, line: str, cell: str) -> Any:
    args = parse_line(
        magics.air_copy,
        line,
        stray_words="Sources go one per line below the magic line (%%air_copy --to DEST, then the body), or on "
        "the line with --from SRC (repeatable): %air_copy --from SRC --to DEST",
    )
    if not args.dest:
        raise UsageError("%%air_copy needs --to DEST (a local folder or a /Volumes/... folder)")
    body = parse_sources(cell or "")
    sources = [*args.sources, *body]
    if not sources:
        raise UsageError(
            "%%air_copy cell is empty: put one /Volumes/... path or glob per line below the magic line, "
            "or --from SRC on the line"
        )
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    check_output(args.output)
    if args.job is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", args.job):
        raise UsageError(f"--job {args.job!r}: use letters, digits, '_', '-' or '.' (at most 64)")
    try:
        plan = plan_copy(sources, args.dest, store=store(), default_volume=default_volume(magics))
    except AirError as exc:
        hint = _literal_placeholder_hint(body, magics.shell.user_ns)
        raise UsageError(f"{exc}{hint}") from None
    view = (
        None
        if args.quiet
        else copy_progress_view(
            f"{'dry run: ' if args.dry_run else ''}copy to {args.dest}", widget=None if magics.widgets else False
        )
    )
    report = None
    try:
        report = copy_files(
            plan.tasks,
            workers=args.workers,
            overwrite=args.overwrite,
            dry_run=args.dry_run,
            listeners=() if view is None else (view,),
            dest=plan.dest,
            sources=plan.sources,
            job=None if args.dry_run else (args.job or uuid.uuid4().hex[:12]),
        )
    finally:
        if view is not None:
            view.close(report)
    store_output(magics, args.output, report, show=not (report.failed and not args.allow_failures))
    if report.failed and not args.allow_failures:
        from IPython.display import display

        display(report)
        raise UsageError(
            f"{len(report.failed)} of {report.files_total} files failed to copy to {plan.dest} (report above"
            f"{'; also in ' + args.output if args.output else ''}); fix the cause and re-run "
            "(copied files are skipped), or pass --allow-failures to carry on"
        )
    return report


def _literal_placeholder_hint(body: list[str], user_ns: dict[str, Any]) -> str:
    """When a body line names a notebook variable (``{local_dir}/x``), say why it was not expanded
    and what to write instead: the usual cause of a "does not exist" for such a line."""
    for line in body:
        if expand_names(line, user_ns) != line:  # what the line would have meant, had it been expanded
            return (
                f". Note: the cell body is taken literally, so the notebook variables in {line!r} were not "
                f"expanded; put that source on the magic line instead: %%air_copy --from {line} --to ..."
            )
    return ""
