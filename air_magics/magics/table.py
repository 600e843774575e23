"""``%air_table``: tables through Spark Connect.

    %air_table NAME                                   schema, row count, preview
    %air_table /Volumes/.../tbl [--as ...]            a folder of Parquet or a Delta table, read without Spark
    %air_table NAME --as pandas|numpy|arrow -o VAR    [--columns a,b] [--where EXPR] [--limit N] [--max-bytes 4GiB]
    %air_table --sql "SELECT ... FROM main.ds.t" [--as ...] [-o VAR]
    %air_table NAME --to /Volumes/... [--mode overwrite|error] [--as datasets -o VAR]   (--export DEST too)
    %air_table --tables [catalog.schema]
    %air_table --stop                                 stop the embedded Spark server now (frees its ~1 GB)
    ... --remote sc://host:15002                      use that server instead of the default

``--to`` is a destination, as in ``%%air_copy``; the form of the result is ``--as``. The old
``--to pandas|numpy|arrow|datasets`` still works and prints one deprecation line. ``-o VAR``
stores the result in VAR and returns it, as in every magic. A read into memory is refused when its
estimated size is above ``--max-bytes`` (default: the ``table_max_bytes`` setting, else 1/8 of memory).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from ..events import ExportEvent
from ._common import check_output, output_argument, parse_line, store_output, with_arguments

__all__ = ["arguments", "run", "FORMATS"]

FORMATS = ("pandas", "numpy", "arrow", "datasets")


def arguments(func: Callable[..., Any]) -> Callable[..., Any]:
    return with_arguments(
        func,
        argument("name", nargs="?", help="table: [catalog.][schema.]table, or a /Volumes/... folder (Parquet, Delta)"),
        argument("--as", dest="form", choices=FORMATS, help="return the data in this form"),
        output_argument(),
        argument("--columns", metavar="A,B", help="only these columns"),
        argument("--where", metavar="EXPR", help="filter rows with a SQL expression"),
        argument("--limit", type=int, metavar="N", help="at most N rows"),
        argument("--sql", metavar="QUERY", help="run this query (tables as catalog.schema.table) instead of a table"),
        argument("--max-bytes", dest="max_bytes", metavar="SIZE", help="refuse reads estimated above SIZE, e.g. 4GiB"),
        argument(
            "--to",
            dest="to",
            metavar="DEST",
            help="export: write Parquet files into this /Volumes/... folder (same as --export)",
        ),
        argument("--export", metavar="DEST", help="write Parquet files into this /Volumes/... folder"),
        argument("--mode", choices=["error", "overwrite"], default="error", help="export: replace DEST or refuse"),
        argument("--via", choices=["auto", "server", "client"], default="auto", help="export: who writes the files"),
        argument("--tables", action="store_true", help="list tables (in NAME = catalog.schema if given)"),
        argument("--remote", metavar="URL", help="Spark Connect URL, e.g. sc://localhost:15002"),
        argument("--stop", action="store_true", help="stop the embedded Spark server now (the next call starts it)"),
    )


def normalise(args: Any) -> Any:
    """Fold ``--to`` into ``--export`` (a destination) or, in its old meaning, ``--as`` (a format)."""
    to, args.to = args.to, None
    if to is None:
        return args
    if to in FORMATS:
        if args.form is not None:
            raise UsageError(f"--to {to} is the old spelling of --as {to}; give the form once, with --as")
        print(
            f"%air_table: --to {to} is deprecated, write --as {to} (--to is now a destination, as in %%air_copy)",
            file=sys.stderr,
        )
        args.form = to
    elif "/" in to:
        if args.export is not None:
            raise UsageError(f"give the destination once: --to {to} or --export {args.export}, not both")
        args.export = to
    else:
        raise UsageError(
            f"--to {to!r}: invalid choice; --to takes a destination folder (/Volumes/...), "
            f"and the form of the result goes after --as ({', '.join(FORMATS)})"
        )
    return args


class _ShownOnFirstEvent:
    """An export's progress view, made at its first event (an export refused by its checks, a bad
    mode or an existing destination, shows no progress line or bar before its error), and told only
    what changes what it shows (the ``done`` event repeats the last counts; ``close`` says done)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make, self.view, self.shown = make, None, None

    def __call__(self, event: ExportEvent) -> None:
        from ..widgets.job_progress import describe_job

        text = describe_job(event.to_dict())
        if text == self.shown:
            return
        if self.view is None:
            self.view = self.make()
        self.shown = text
        self.view(event)

    def close(self, result: Any) -> None:
        if self.view is not None:
            self.view.close(result)


def run(magics: Any, line: str) -> Any:
    from .. import tables

    args = normalise(parse_line(magics.air_table, line))
    check_output(args.output)
    ns = magics.shell.user_ns
    kw: dict[str, Any] = {"remote": args.remote, "user_ns": ns}
    columns = [c for c in (args.columns or "").split(",") if c.strip()] or None
    if args.stop:
        return _stop(args)
    if args.tables:
        if args.sql or args.export or args.form or args.max_bytes:
            raise UsageError("--tables lists tables; it takes no --sql, --to/--export, --as or --max-bytes")
        return store_output(magics, args.output, tables.list_tables(args.name, **kw))
    if args.sql and args.name:
        raise UsageError(f"give a table NAME or --sql, not both (got {args.name!r} and --sql)")
    if not args.sql and not args.name:
        raise UsageError('%air_table needs a table NAME, --sql "SELECT ..." or --tables (see %air_table?)')
    if args.max_bytes is not None and args.export:
        raise UsageError("--max-bytes limits a read into memory; an export (--to/--export) writes files instead")
    if args.export and args.form not in (None, "datasets"):
        raise UsageError(f"an export is returned as is or --as datasets, not --as {args.form}")
    if args.export:
        from ..widgets.job_progress import export_progress_view

        title, widget = f"export to {args.export}", None if magics.widgets else False
        view = _ShownOnFirstEvent(lambda: export_progress_view(title, widget=widget))
        result = None
        try:
            result = tables.export_table(
                args.name,
                args.export,
                sql=args.sql,
                columns=columns,
                where=args.where,
                limit=args.limit,
                mode=args.mode,
                via=args.via,
                listeners=[view],
                **kw,
            )
        finally:
            view.close(result)
        return store_output(magics, args.output, result.load_dataset() if args.form == "datasets" else result)
    if args.form == "datasets":
        raise UsageError("--as datasets loads an export: add --export /Volumes/... (or use --as pandas)")
    if args.form is None and not args.sql and not (columns or args.where or args.limit is not None or args.max_bytes):
        return store_output(magics, args.output, tables.describe_table(args.name, **kw))
    to = args.form or "pandas"
    if args.sql:
        if columns or args.where or args.limit is not None:
            raise UsageError("--columns/--where/--limit apply to a table; put them in the --sql query")
        return store_output(magics, args.output, tables.read_sql(args.sql, to=to, max_bytes=args.max_bytes, **kw))
    frame = tables.read_table(
        args.name, columns=columns, where=args.where, limit=args.limit, to=to, max_bytes=args.max_bytes, **kw
    )
    return store_output(magics, args.output, frame)


def _stop(args: Any) -> None:
    """``--stop``: the embedded server, for every process using it; it takes no other argument."""
    from ..tables.server import stop_server, store_dir

    flags = {"name": "NAME", "sql": "--sql", "form": "--as", "export": "--to", "remote": "--remote", "output": "-o"}
    flags.update(columns="--columns", where="--where", limit="--limit", max_bytes="--max-bytes", tables="--tables")
    given = [flag for attr, flag in flags.items() if getattr(args, attr) not in (None, False)]
    if given:
        raise UsageError(f"--stop stops the embedded Spark server and takes nothing else: drop {' '.join(given)}")
    if stop_server():
        print(f"Stopped the embedded Spark Connect server of {store_dir()}; the next table call starts it again")
    else:
        print(f"No embedded Spark Connect server is running for {store_dir()}")
