"""``%air_volume``: where volumes live, what a folder holds, create/register/use volumes.

%air_volume                                    where volumes resolve, and the volumes there
%air_volume ls PATH [-r] [--pattern GLOB]      a folder's files, size distribution, advice
                                               (a GLOB with '/' or '**' implies -r); above volume
                                               level: /Volumes the catalogs, /Volumes/c its schemas,
                                               /Volumes/c/s its volumes
%air_volume create catalog.schema.volume [--exist-ok]
%air_volume register catalog.schema.volume URL [--endpoint URL] [--profile NAME] [--option KEY=VALUE]... [--no-check]
                                               checked with one listing first (see volume_register.py)
%air_volume use catalog.schema.volume          default volume for relative paths
%air_volume cache [--clear [--force]]          live cache view: hit rate, size, evictions, data wait
%air_volume cache --check [--repair]           compare the cache's index with its files; repair what crashes left
%air_volume checkpoints DIR                    live view of the checkpoints saved under DIR
%air_volume pack SRC DEST [--shard-size 1GiB] [--pattern GLOB] [--engine local|spark] [--dry-run]
                                               pack a folder of small files into tar shards
%air_volume probe PATH                         measure the storage under PATH (a volume folder or a local
                                               one) in at most 20 s: op latency, read MB/s, files/s, advice
%air_volume mount [POINT]                      /Volumes/... paths in plain Python (open, torch.save):
                                               link /Volumes (or POINT) to the embedded root
%air_volume unmount [POINT]                    remove that link (only a link mount made)
... -o VAR                                     also store the result in VAR (create/register/use:
                                               the volume, which they otherwise only print)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument

from ..errors import VolumeExistsError, VolumeNotFoundError
from ..volumes import VolumePath
from ..volumes.path import parse_namespace
from ..volumes.summary import DEFAULT_ROWS, ListingSummary, NamespaceListing, VolumesOverview
from ..volumes.walk import Entry
from ._common import check_output, output_argument, parse_line, store_output, with_arguments
from ._state import default_volume, store
from .volume_connect import CONNECT_COMMANDS, catalog_command, connect_arguments, is_catalog_command
from .volume_register import register, register_arguments

COMMANDS = ("ls", "create", "register", "use", "cache", "checkpoints", "pack", "probe", "mount", "unmount")
COMMANDS += CONNECT_COMMANDS  # a Unity Catalog's: magics/volume_connect.py
_NARGS = {
    "ls": (0, 1),
    "create": (1, 1),
    "register": (2, 2),
    "use": (1, 1),
    "cache": (0, 0),
    "checkpoints": (1, 1),
    "pack": (2, 2),
    "probe": (1, 1),
    "mount": (0, 1),
    "unmount": (0, 1),
}
_USAGE = {
    "ls": "[PATH]",
    "create": "catalog.schema.volume",
    "register": "catalog.schema.volume URL",
    "use": "catalog.schema.volume",
    "cache": "no arguments (and --clear to empty it, --check [--repair] to check it)",
    "checkpoints": "DIR (the folder a CheckpointManager saves into)",
    "pack": "SRC DEST (two folders)",
    "probe": "PATH (a volume folder, or a local one)",
    "mount": "[POINT] (default /Volumes, or AIR_VOLUMES_MOUNT)",
    "unmount": "[POINT] (default /Volumes, or AIR_VOLUMES_MOUNT)",
}
_PRINTED = frozenset(
    {"create", "register", "use", "pack", "mount", "unmount", *CONNECT_COMMANDS}
)  # print one line; their value only with -o


def arguments(func: Callable[..., Any]) -> Callable[..., Any]:
    return with_arguments(
        func,
        argument("command", nargs="?", help=f"one of {', '.join(COMMANDS)}; none shows where volumes live"),
        argument(
            "args",
            nargs="*",
            help="the command's arguments (a path, a volume name, a URL); mount, unmount: an optional "
            "mount point (default /Volumes): `%%air_volume mount` makes /Volumes/... paths work in plain Python",
        ),
        argument("-r", "--recursive", action="store_true", help="ls: list every file below PATH"),
        argument(
            "--limit",
            type=int,
            metavar="N",
            help=f"ls: rows to show (default {DEFAULT_ROWS}); the counts and sizes always cover every file",
        ),
        argument(
            "--pattern",
            metavar="GLOB",
            help="ls, pack: only entries matching GLOB (e.g. '*.jpg', 'train/**/*.png'); "
            "in ls a GLOB with '/' or '**' looks below PATH as -r does",
        ),
        argument("--shard-size", metavar="SIZE", help="pack: bytes per shard (default 1GiB)"),
        argument("--dry-run", action="store_true", help="pack: plan and report, write nothing"),
        argument(
            "--engine",
            choices=("local", "spark"),
            help="pack: 'local' (threads here, the default) or 'spark' (tasks of the Spark session; "
            "the volume must be mounted at the same path on the executors)",
        ),
        argument("--exist-ok", action="store_true", help="create: no error if the volume already exists"),
        argument(
            "--clear",
            action="store_true",
            help="cache: remove cached files not used in the last 30 s (sources are untouched)",
        ),
        argument(
            "--force",
            action="store_true",
            help="cache --clear: also remove files just handed to a running training loop (unsafe while it runs)",
        ),
        argument(
            "--check",
            action="store_true",
            help="cache: compare the index with the files (rows without files, strays, temps, dead processes' folders)",
        ),
        argument("--repair", action="store_true", help="cache --check: fix what it finds (not live files)"),
        *register_arguments(),
        *connect_arguments(),
        output_argument(),
    )


def run(magics: Any, line: str) -> Any:
    args = parse_line(magics.air_volume, line)
    check_output(args.output)
    value = _command(magics, args)
    if args.output is None and args.command in _PRINTED:
        return None
    return store_output(magics, args.output, value)


def _command(magics: Any, args: Any) -> Any:
    cmd = args.command
    if cmd is None:
        from ..volumes.mount import mount_status

        st = store(fresh=True)  # where volumes resolve, looked at now (a mount may have appeared)
        return _Overview(
            str(st.root),
            st.kind,
            str(st.registry.file),
            magics.default_volume or None,
            st.volumes(),
            st.why,
            mode=str(mount_status()),
        )
    if is_catalog_command(args):
        return catalog_command(magics, args)
    if cmd not in COMMANDS:
        raise UsageError(
            f"unknown command {cmd!r} for %air_volume: use one of {', '.join(COMMANDS)} (see %air_volume?)"
        )
    lo, hi = _NARGS[cmd]
    if not lo <= len(args.args) <= hi:
        raise UsageError(f"%air_volume {cmd} takes {_USAGE[cmd]}; got {' '.join(args.args) or 'nothing'}")
    if cmd != "ls" and (args.recursive or args.limit is not None or (args.pattern and cmd != "pack")):
        raise UsageError(f"-r/--limit/--pattern only apply to `ls` (and --pattern to `pack`), not to {cmd!r}")
    if cmd != "pack" and (args.shard_size or args.dry_run or args.engine):
        raise UsageError(f"--shard-size/--engine/--dry-run only apply to `pack`, not to {cmd!r}")
    if cmd != "create" and args.exist_ok:
        raise UsageError(f"--exist-ok only applies to `create`, not to {cmd!r}")
    if cmd != "cache" and args.clear:
        raise UsageError(f"--clear only applies to `cache`, not to {cmd!r}")
    if args.force and not args.clear:
        raise UsageError("--force only applies to `cache --clear`")
    if (args.check and cmd != "cache") or (args.repair and not args.check):
        raise UsageError("--check only applies to `cache`, and --repair only to `cache --check`")
    if cmd != "register" and (args.endpoint or args.profile or args.option or args.no_check):
        raise UsageError(f"--endpoint/--profile/--option/--no-check only apply to `register`, not to {cmd!r}")
    if args.check and args.clear:
        raise UsageError("give `cache --clear` or `cache --check`, not both")
    if cmd == "cache" and args.check:
        return _cache_check(args.repair)
    if cmd == "cache":
        return _cache(magics, args.clear, args.force)
    if cmd == "checkpoints":
        return _checkpoints(magics, VolumePath.parse(args.args[0], default=default_volume(magics)))
    if cmd == "pack":
        return _pack(magics, args)
    if cmd == "probe":
        return _probe(magics, args.args[0])
    if cmd in ("mount", "unmount"):
        from ..volumes.mount import mount, unmount

        status = (mount if cmd == "mount" else unmount)(args.args[0] if args.args else None)
        print(f"mode: {status}")
        return status
    st = store()
    if cmd == "ls":
        target = args.args[0] if args.args else ""
        default = default_volume(magics)
        if not target and default is None:
            raise UsageError(
                "%air_volume ls needs a PATH (or set a default volume with %air_volume use catalog.schema.volume)"
            )
        parts = parse_namespace(target)
        if parts is not None:  # /Volumes, a catalog or a schema: what it holds, one level down
            if args.recursive or args.pattern:
                raise UsageError(f"-r/--pattern list inside a volume; {target} is above volume level")
            return NamespaceListing.of(parts, st.volumes())
        vp = VolumePath.parse(target or ".", default=default)
        # a pattern naming subfolders ('train/*/x.bin', '**/*.png') can only match below PATH
        recursive = args.recursive or bool(args.pattern and ("/" in args.pattern or "**" in args.pattern))
        base, rows = _listing_rows(st, vp, recursive, args.pattern)
        delta = None if recursive or args.pattern else _delta_note(st, vp)
        return ListingSummary(
            str(vp), rows, base, recursive, args.pattern, _packed_note(st, vp), delta, limit=_limit(args)
        )
    if cmd == "create":
        try:
            info = st.create(args.args[0], exist_ok=args.exist_ok)
        except VolumeExistsError as exc:  # the API's advice (exist_ok=True) in the magic's words
            raise UsageError(str(exc).replace("pass exist_ok=True", "add --exist-ok")) from None
        print(f"created volume /Volumes/{info.volume_id.replace('.', '/')} at {info.location}")
        return info
    if cmd == "register":
        return register(st, args)
    vp = VolumePath.parse_volume(args.args[0])
    info = st.volume_info(vp)  # must exist
    magics.default_volume = vp.volume_id
    print(f"default volume: {vp} (relative paths in %air_volume and %%air_copy now refer to it)")
    return info


def _delta_note(st: Any, vp: VolumePath) -> str | None:
    """What a Delta table folder holds (its latest version), shown instead of its files; None for
    any other folder. A table that cannot be read says why in the same line."""
    from ..errors import AirError
    from ..tablefiles.delta import describe_delta, is_delta_folder

    try:
        loc = st.locate(vp)
    except (AirError, OSError):
        return None
    if not loc.is_local or not is_delta_folder(loc.path):
        return None
    try:
        return describe_delta(loc.path, str(vp))
    except AirError as exc:
        return f"Delta table, unreadable: {exc} (ls -r lists its files)"


def _listing_rows(st: Any, vp: VolumePath, recursive: bool, pattern: str | None) -> tuple[VolumePath, Sequence[Entry]]:
    """The raw rows ``ls`` summarizes and the folder they are relative to (a glob's fixed part),
    without the files air_magics keeps for itself in a user's folder (a pack's lock)."""
    from ..shards.dest import LOCK_NAME

    with _ListingProgress(str(vp)) as progress:
        stats = st.file_stats(vp, progress=progress, drop=(LOCK_NAME,)) if recursive and not pattern else None
        if stats is not None:  # a folder on this disk: the files' columns, no object per file
            return vp, stats
        base, rows = st.listing(vp, recursive=recursive, pattern=pattern, progress=progress)
    return base, [e for e in rows if not e.rel.endswith(LOCK_NAME) or e.rel.rpartition("/")[2] != LOCK_NAME]


class _ListingProgress:
    """A ``\r``-rewritten line while a listing runs long (a notebook's stream output rewrites it
    too): nothing for a listing under :attr:`after` seconds, then its count so far."""

    after = 1.0

    def __init__(self, what: str) -> None:
        self.what, self.shown = what, False
        self.start = time.monotonic()

    def __call__(self, n: int) -> None:
        if time.monotonic() - self.start >= self.after:
            print(f"\rlisting {self.what}: {n:,} entries so far", end="", flush=True)
            self.shown = True

    def __enter__(self) -> _ListingProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.shown:
            print(f"\rlisting {self.what}: done in {time.monotonic() - self.start:.1f} s", flush=True)


def _limit(args: Any) -> int:
    if args.limit is None:
        return DEFAULT_ROWS
    if args.limit < 0:
        raise UsageError(f"--limit {args.limit}: give the number of rows to show (0 or more)")
    return int(args.limit)


def _packed_note(st: Any, vp: VolumePath) -> str | None:
    """One line on what a packed folder holds, or None for any other folder."""
    from ..errors import AirError
    from ..io.units import fmt_bytes, plural
    from ..shards import open_packed

    try:
        packed = open_packed(st, vp)
    except AirError as exc:  # a damaged packed folder is still listed; say what is wrong with it
        return f"packed folder, unreadable: {exc}"
    except OSError:
        return None
    if packed is None:
        return None
    m = packed.manifest
    return (
        f"packed folder: {plural(m.files, 'member')} ({fmt_bytes(m.bytes)}) in {plural(len(m.shards), 'shard')}, generation "
        f"{m.generation}, packed from {m.source}; read it with UCVolumeDataset({str(vp)!r})"
    )


def _pack(magics: Any, args: Any) -> Any:
    from ..shards import pack
    from ..widgets.pack_progress import pack_progress_view

    default = default_volume(magics)
    src, dest = (VolumePath.parse(a, default=default) for a in args.args)
    _check_pack(src, dest, args.shard_size, args.pattern)  # refused here, before any progress is shown
    title = f"{'dry run: ' if args.dry_run else ''}pack {src} -> {dest}"
    view = pack_progress_view(title, widget=None if magics.widgets else False)
    report = None
    try:
        report = pack(
            src,
            dest,
            shard_size=args.shard_size or "1GiB",
            pattern=args.pattern,
            engine=args.engine or "local",
            dry_run=args.dry_run,
            store=store(),
            listeners=[view],
        )
    finally:
        view.close(report)
    return report


def _probe(magics: Any, target: str) -> Any:
    """The probe's report (shown as its table); an absolute path outside /Volumes is a local folder."""
    from ..volumes.path import is_volume_text
    from ..volumes.probe import probe

    if target.startswith(("/", "~")) and not is_volume_text(target):
        return probe(target, store=store())
    return probe(VolumePath.parse(target, default=default_volume(magics)), store=store())


def _check_pack(src: VolumePath, dest: VolumePath, shard_size: str | None, pattern: str | None) -> None:
    """Refuse what ``pack`` would refuse about its arguments, cheaply (no listing), so a bad request is
    one line and never a progress bar that fails at 0%. ``pack`` checks again (and the rest)."""
    from ..io.units import parse_size
    from ..volumes.summary import pack_suggestion

    if shard_size is not None:
        try:
            parse_size(shard_size, "--shard-size")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if dest.is_relative_to(src):
        raise UsageError(
            f"destination {dest} is inside the source {src}: its shards would be packed into themselves; "
            f"pick a destination outside it, e.g. {pack_suggestion(src, pattern)}"
        )
    if src.is_relative_to(dest):
        raise UsageError(f"source {src} is inside the destination {dest}; pick a destination outside the source")
    st = store()
    st.volume_info(src)  # the source volume must exist (its message says how to create it)
    info = st.stat(src)
    if not info.is_dir:
        raise UsageError(f"{src} is a file; pack takes a folder: pass its parent with --pattern {src.name}")
    try:
        st.volume_info(dest)
    except VolumeNotFoundError:
        raise UsageError(
            f"destination volume {dest.volume_id!r} does not exist: pack writes into a folder of an existing "
            f"volume, outside the source; e.g. {pack_suggestion(src, pattern)}"
        ) from None
    if st.exists(dest) and not st.stat(dest).is_dir:
        raise UsageError(f"destination {dest} is a file; pass a folder (new, or one written by pack)")


def _cache(magics: Any, clear: bool, force: bool = False) -> Any:
    from ..cache import FileCache
    from ..widgets import CacheView, cache_text, has_widget_frontend

    cache = FileCache()
    if clear:

        def line(p: Any) -> None:  # a \r-rewritten progress line (a notebook's stream output rewrites it too)
            print(f"\rclearing cache {cache.root}: {p}", end="", flush=True)

        report = cache.clear(force=force, progress=line)  # called at 0 first: the line is always open
        print(f"\ncache {cache.root}: {report}")
    cache.publish_status()
    if magics.widgets and has_widget_frontend():
        return CacheView()
    return _Text(cache_text())


def _cache_check(repair: bool) -> Any:
    """The cache's self-check (``FileCache.check``): one line per problem found (and repaired)."""
    from ..cache import FileCache

    return _Text(str(FileCache().check(repair=repair)))


def _checkpoints(magics: Any, directory: VolumePath) -> Any:
    from ..checkpoints.commit import checkpoint_status
    from ..widgets import CheckpointView, checkpoints_text, has_widget_frontend

    doc = checkpoint_status(str(directory), store())  # validates the path and the volume
    if not store().exists(directory):
        raise UsageError(f"{directory} does not exist; pass the folder a CheckpointManager saves into")
    if not doc["steps"] and store().exists(directory / ".metadata"):  # saved by plain dcp.save, not a manager
        return _Text(
            f"checkpoints in {directory}: one plain DCP checkpoint (.metadata), not saved by a CheckpointManager "
            f"(no step_N folders, so no latest step); load it with dcp.load(..., "
            f"storage_reader=UCVolumeReader({str(directory)!r}))"
        )
    if magics.widgets and has_widget_frontend():
        return CheckpointView(str(directory))
    return _Text(checkpoints_text(doc))


@dataclass
class _Overview(VolumesOverview):
    """The overview plus the mode plain Python sees (real mount, embedded via symlink, store only)."""

    mode: str = ""

    def __repr__(self) -> str:
        head, _, rest = super().__repr__().partition("\n")
        return f"{head}\nmode: {self.mode}\n{rest}"

    def _repr_html_(self) -> str:
        from html import escape

        return super()._repr_html_().replace("<table>", f"<p>mode: {escape(self.mode)}</p><table>", 1)


class _Text(str):
    """Shown as-is (no quotes) at the prompt."""

    def __repr__(self) -> str:
        return str(self)
