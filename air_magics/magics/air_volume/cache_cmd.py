"""``%air_volume cache``: the live cache view; ``--clear`` empties it, ``--check`` compares its index
with its files."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .command import Command, Text, option

__all__ = ["CACHE"]


def _cache(magics: Any, args: Any) -> Any:
    if args.force and not args.clear:
        raise UsageError("--force only applies to `cache --clear`")
    if args.repair and not args.check:
        raise UsageError("--repair only applies to `cache --check`")
    if args.check and args.clear:
        raise UsageError("give `cache --clear` or `cache --check`, not both")
    from ...cache import FileCache

    cache = FileCache()
    if args.check:
        return Text(str(cache.check(repair=args.repair)))
    from ...widgets import CacheView, cache_text, has_widget_frontend

    if args.clear:

        def line(p: Any) -> None:  # a \r-rewritten progress line (a notebook's stream output rewrites it too)
            print(f"\rclearing cache {cache.root}: {p}", end="", flush=True)

        report = cache.clear(force=args.force, progress=line)  # called at 0 first: the line is always open
        print(f"\ncache {cache.root}: {report}")
    cache.publish_status()
    if magics.widgets and has_widget_frontend():
        return CacheView()
    return Text(cache_text())


CACHE = Command(
    "cache",
    "",
    (0, 0),
    "live cache view: hit rate, size, evictions, data wait",
    _cache,
    (
        option(
            "--clear", action="store_true", help="remove cached files not used in the last 30 s (sources untouched)"
        ),
        option(
            "--force",
            action="store_true",
            help="with --clear: also remove files just handed to a running training loop (unsafe while it runs)",
        ),
        option(
            "--check",
            action="store_true",
            help="compare the index with the files (rows without files, strays, temps, dead processes' folders)",
        ),
        option("--repair", action="store_true", help="with --check: fix what it finds (not live files)"),
    ),
)
