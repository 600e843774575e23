"""``%air_volume pack SRC DEST``: pack a folder of small files into tar shards."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...errors import VolumeNotFoundError
from ...volumes import VolumePath
from .._state import default_volume, store
from .command import Command, option

__all__ = ["PACK"]


def _pack(magics: Any, args: Any) -> Any:
    from ...shards import pack
    from ...widgets.pack_progress import pack_progress_view

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


def _check_pack(src: VolumePath, dest: VolumePath, shard_size: str | None, pattern: str | None) -> None:
    """Refuse what ``pack`` would refuse about its arguments, cheaply (no listing), so a bad request is
    one line and never a progress bar that fails at 0%. ``pack`` checks again (and the rest)."""
    from ...io.units import parse_size
    from ...volumes.summary import pack_suggestion

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


PACK = Command(
    "pack",
    "SRC DEST",
    (2, 2),
    "pack a folder of small files into tar shards (two folders)",
    _pack,
    (
        option("--shard-size", metavar="SIZE", help="bytes per shard (default 1GiB)"),
        option("--pattern", metavar="GLOB", help="only files matching GLOB (e.g. '*.jpg', 'train/**/*.png')"),
        option(
            "--engine",
            choices=("local", "spark"),
            help="'local' (threads here, the default) or 'spark' (tasks of the Spark session; the volume must be "
            "mounted at the same path on the executors)",
        ),
        option("--dry-run", action="store_true", help="plan and report, write nothing"),
    ),
    printed=True,
    paths=True,
)
