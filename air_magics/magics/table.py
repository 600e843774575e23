"""``%air_table``: tables through Spark Connect.

    %air_table NAME                                   schema, row count, preview
    %air_table NAME --to pandas|numpy|arrow -o VAR    [--columns a,b] [--where EXPR] [--limit N]
    %air_table --sql "SELECT ..." [--to ...] [-o VAR]
    %air_table NAME --export /Volumes/... [--mode overwrite|error] [--to datasets -o VAR]
    %air_table --tables [catalog.schema]
    ... --remote sc://host:15002                      use that server instead of the default
"""
from __future__ import annotations

from typing import Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from ._common import parse_line, with_arguments


def arguments(func: Callable[..., Any]) -> Callable[..., Any]:
    return with_arguments(
        func,
        argument("name", nargs="?", help="table: [catalog.][schema.]table"),
        argument("--to", choices=["pandas", "numpy", "arrow", "datasets"], help="return the data in this form"),
        argument("-o", "--output", metavar="VAR", help="store the result in this variable"),
        argument("--columns", metavar="A,B", help="only these columns"),
        argument("--where", metavar="EXPR", help="filter rows with a SQL expression"),
        argument("--limit", type=int, metavar="N", help="at most N rows"),
        argument("--sql", metavar="QUERY", help="run this query instead of reading a table"),
        argument("--export", metavar="DEST", help="write Parquet files into this /Volumes/... folder"),
        argument("--mode", choices=["error", "overwrite"], default="error", help="export: replace DEST or refuse"),
        argument("--via", choices=["auto", "server", "client"], default="auto", help="export: who writes the files"),
        argument("--tables", action="store_true", help="list tables (in NAME = catalog.schema if given)"),
        argument("--remote", metavar="URL", help="Spark Connect URL, e.g. sc://localhost:15002"),
    )


def run(magics: Any, line: str) -> Any:
    from .. import tables

    args = parse_line(magics.air_table, line)
    ns = magics.shell.user_ns
    kw: dict[str, Any] = {"remote": args.remote, "user_ns": ns}
    columns = [c for c in (args.columns or "").split(",") if c.strip()] or None
    if args.tables:
        if args.sql or args.export or args.to:
            raise UsageError("--tables lists tables; it takes no --sql, --export or --to")
        return _store(magics, args.output, tables.list_tables(args.name, **kw))
    if args.sql and args.name:
        raise UsageError(f"give a table NAME or --sql, not both (got {args.name!r} and --sql)")
    if not args.sql and not args.name:
        raise UsageError("%air_table needs a table NAME, --sql \"SELECT ...\" or --tables (see %air_table?)")
    if args.export:
        from ..widgets.job_progress import export_progress_view

        view = export_progress_view(f"export to {args.export}", widget=None if magics.widgets else False)
        result = None
        try:
            result = tables.export_table(args.name, args.export, sql=args.sql, columns=columns, where=args.where,
                                         limit=args.limit, mode=args.mode, via=args.via, on_progress=view, **kw)
        finally:
            view.close(result)
        if args.to == "datasets":
            return _store(magics, args.output, result.load_dataset())
        if args.to:
            raise UsageError(f"after --export, --to takes only 'datasets' (got {args.to!r})")
        return _store(magics, args.output, result)
    if args.to == "datasets":
        raise UsageError("--to datasets loads an export: add --export /Volumes/... (or use --to pandas)")
    if args.to is None and not args.sql and not (columns or args.where or args.limit is not None):
        return _store(magics, args.output, tables.describe_table(args.name, **kw))
    to = args.to or "pandas"
    if args.sql:
        if columns or args.where or args.limit is not None:
            raise UsageError("--columns/--where/--limit apply to a table; put them in the --sql query")
        return _store(magics, args.output, tables.read_sql(args.sql, to=to, **kw))
    return _store(magics, args.output, tables.read_table(args.name, columns=columns, where=args.where,
                                                         limit=args.limit, to=to, **kw))


def _store(magics: Any, var: str | None, value: Any) -> Any:
    if var is not None:
        if not var.isidentifier():
            raise UsageError(f"-o takes a variable name, got {var!r}")
        magics.shell.user_ns[var] = value
        return None
    return value
