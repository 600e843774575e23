"""``pack``: a volume folder into tar shards, locally, incrementally, atomically, resumably.

Commit protocol (the manifest is the commit; readers trust nothing it does not name):

1. Take the destination's pack lock: ``flock`` on ``<dest>/.air-pack.lock``, a file on the volume
   itself, so two packers of one folder exclude each other wherever the volume's locks reach
   (another process, another ``AIR_HOME``, another machine on a volume with shared locks). Sweep
   the temp files dead packers left there (``io.leftovers``: their names carry the owner's pid).
2. List the source once; read the published manifest and its indexes; plan (:mod:`.pack_plan`).
   An unchanged source ends here: nothing is written.
3. Write each new shard as ``.shard-<id>.tar.air-tmp-<pid>-<thread>`` beside its final name,
   ``fsync``, rename into place; then its index the same way. Source files are read on a thread
   pool (a remote mount serves many reads at once) and checked against the listing's size and
   mtime: a file that changed fails the run naming it, before anything is published.
   A shard whose file and index already exist complete (a killed run's) is reused as is (its
   index touched, so it counts as fresh for step 5 of a concurrent packer).
4. ``fsync`` the folder, then replace the manifest (``write_json_atomic``, ``fsync``): the new
   generation is published in one rename.
5. Only then remove shards the new manifest does not name, and never one another packer may still
   publish: a shard is removed only if neither this manifest nor the one now on the volume names
   it, and either the manifest this run replaced named it or it (file and index) is older than
   ``dest.GRACE`` seconds. So even where the volume's locks do not reach (a mount that keeps ``flock``
   per machine), a packer that publishes between another's shards and its manifest leaves those
   shards in place.

A kill before 4 leaves the previous manifest and every shard it names untouched (new shards have
names no published manifest uses); a kill after 4 leaves at most unnamed shards, removed by a later
run. Every write is confined to the destination's volume (``io.confined``). A folder an older
air_magics packed (an older format version) is rewritten whole by the next pack.
"""

from __future__ import annotations

import os
import re
import time
import zlib
from collections.abc import Callable, Iterable

from ..errors import Interrupted, PackError, ShardError
from ..events import Listener, PackEvent, channel
from ..io.atomic import write_json_atomic
from ..io.confined import open_dir
from ..io.leftovers import sweep_stale
from ..io.pools import job_pool, threads
from ..io.units import parse_size
from ..snapshots import PackProgress, PackReport
from ..volumes.glob import filter_pattern
from ..volumes.location import Location
from ..volumes.path import VolumePath
from ..volumes.store import VolumeStore
from ..volumes.walk import Entry
from .dest import check_destination, lock_destination, read_local, remove_unnamed
from .format import (
    MANIFEST_NAME,
    Index,
    Manifest,
    Member,
    ShardInfo,
    dump_index,
    legacy_manifest,
    load_index,
    load_manifest,
    parse_index,
)
from .pack_plan import PackPlan, ShardPlan, make_plan
from .shardfile import Feed, write_shard
from .store_dest import pack_onto_store

__all__ = ["pack", "PackReport", "PackProgress", "plan_pack", "ENGINES"]

ENGINES = ("local", "spark")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # what a volume path refuses (volumes.path)


def _nested(a: VolumePath, b: VolumePath) -> bool:
    """True when *a* is *b* or inside it."""
    return a.volume_id == b.volume_id and tuple(a.parts[: len(b.parts)]) == tuple(b.parts)


def _list_source(store: VolumeStore, src: VolumePath, pattern: str | None) -> list[Entry]:
    entries = store.entries(src, recursive=True, with_dirs=False, stat=True)
    if len(entries) == 1 and entries[0].rel == "":
        raise PackError(f"{src} is a file; pack takes a folder: pass its parent with --pattern NAME")
    files = filter_pattern(entries, pattern)
    for f in files:  # one rule for packing and reading: a name no volume path can hold is refused here
        if _CONTROL.search(f.rel):
            raise PackError(
                f"cannot pack {src}/{f.rel!r}: its name holds a control character (newline, tab, ...), which "
                f"no volume path may, so the packed folder could never serve it; rename the file, or leave it "
                f"out with pattern="
            )
    if not files:
        where = f"{src} matching {pattern!r}" if pattern else f"{src}"
        raise PackError(f"no files to pack in {where}; check it with `%air_volume ls {src} -r`")
    return files


def _previous(
    dest: VolumePath, dloc: Location
) -> tuple[Manifest | None, dict[str, list[Member] | None], tuple[int, set[str]] | None]:
    """The published manifest, each of its shards' members (None: file or index damaged), and, for
    a manifest an older air_magics wrote (the folder is rewritten whole), its generation and names."""
    if not check_destination(dest, dloc):
        return None, {}, None
    try:
        raw = read_local(dloc, MANIFEST_NAME)
    except OSError as exc:  # a folder or special file by that name; or it went away meanwhile
        raise ShardError(
            f"manifest {dest}/{MANIFEST_NAME} cannot be read ({exc.strerror or exc}); if {dest} holds nothing "
            f"else of yours, delete it and pack again"
        ) from None
    legacy = legacy_manifest(raw)
    if legacy is not None:
        return None, {}, legacy
    try:
        manifest = load_manifest(raw, f"{dest}/{MANIFEST_NAME}")
    except ShardError as exc:
        raise ShardError(f"{exc}; or, if {dest} holds nothing else of yours, delete it and pack again") from None
    members: dict[str, list[Member] | None] = {}
    for s in manifest.shards:
        try:
            if os.stat(os.path.join(dloc.path, s.name)).st_size != s.bytes:
                raise ShardError("size")
            members[s.name] = load_index(read_local(dloc, s.index), f"{dest}/{s.index}", s)
        except (OSError, ShardError):
            members[s.name] = None  # rewritten by this run
    return manifest, members, None


def _complete(dloc: Location, sp: ShardPlan) -> Index | None:
    """The index of shard *sp* if a previous run left it complete on the destination, else None."""
    try:
        ix = parse_index(read_local(dloc, sp.index), sp.index, sp.name)
        if os.stat(os.path.join(dloc.path, sp.name)).st_size != ix.bytes or ix.bytes != sp.bytes:
            return None
    except (OSError, ShardError):
        return None
    want = [(f.rel, f.size, f.mtime) for f in sp.files]
    return ix if [(m.name, m.src_size, m.mtime) for m in ix.members] == want else None


def _check_request(
    svp: VolumePath, dvp: VolumePath, shard_size: int | str, store: VolumeStore, staged: Location | None = None
) -> tuple[int, Location, Location]:
    """The refusals that need no lock and write nothing: shard size, nested paths, a volume that is
    not local or mounted; returns ``(shard size, source, destination)`` (*staged*: the destination's
    local stand-in, :mod:`.store_dest`)."""
    try:
        size = parse_size(shard_size, "shard size")
    except ValueError as exc:
        raise PackError(str(exc)) from None
    if not size or size < 4096:
        raise PackError(f"shard size {shard_size!r} is too small: give e.g. '1GiB' (at least 4 KiB)")
    if _nested(dvp, svp):
        raise PackError(
            f"destination {dvp} is inside the source {svp}: its shards would be packed into themselves; "
            f"pick a destination outside it"
        )
    if _nested(svp, dvp):
        raise PackError(f"source {svp} is inside the destination {dvp}; pick a destination outside the source")
    sloc, dloc = store.locate(svp), staged or store.locate(dvp)
    if not dloc.is_local or not sloc.is_local:
        raise PackError(
            f"pack needs local or mounted volumes; {dvp if not dloc.is_local else svp} is on "
            f"{dloc if not dloc.is_local else sloc}: mount it (for engine='spark' at the same path on the "
            f"notebook and on the executors) and register it with that path"
        )
    return size, sloc, dloc


def _plan(dvp: VolumePath, dloc: Location, files: list[Entry], size: int) -> PackPlan:
    previous, members, legacy = _previous(dvp, dloc)
    plan = make_plan(files, size, previous, members)
    if legacy is not None:
        plan.base_generation, plan.superseded = legacy
    return plan


def plan_pack(
    src: str | VolumePath,
    dest: str | VolumePath,
    *,
    shard_size: int | str = "1GiB",
    pattern: str | None = None,
    store: VolumeStore | None = None,
) -> tuple[PackPlan, Location, Location]:
    """Check the request and plan it (step 2 of the protocol); nothing is written."""
    store = store or VolumeStore()
    svp, dvp = VolumePath.parse(src), VolumePath.parse(dest)
    size, sloc, dloc = _check_request(svp, dvp, shard_size, store)
    check_destination(dvp, dloc)
    return _plan(dvp, dloc, _list_source(store, svp, pattern), size), sloc, dloc


def pack(
    src: str | VolumePath,
    dest: str | VolumePath,
    shard_size: int | str = "1GiB",
    pattern: str | None = None,
    engine: str = "local",
    dry_run: bool = False,
    *,
    store: VolumeStore | None = None,
    workers: int | None = None,
    retries: int = 4,
    listeners: Iterable[Listener] = (),
) -> PackReport:
    """Pack the files of folder *src* into tar shards in folder *dest* (see the module docstring).

    ``shard_size``: target bytes per shard (``"1GiB"``); ``pattern``: only files whose name or
    relative path matches this glob; ``dry_run``: plan and report, write nothing. Re-running on an
    unchanged source writes nothing; after changes only new shards are written. ``engine``:
    ``"local"`` (threads in this process) or ``"spark"`` (the same plan, shards written by tasks of
    the Spark session, :mod:`.spark`; the volume must be mounted at the same path on the executors).
    Progress: :class:`PackEvent` on :data:`air_magics.events.channel` and to *listeners* (at most
    10 a second, then one ``done``/``failed``/``interrupted``); each event's ``progress`` is a
    :class:`PackProgress`. Ctrl-C raises :class:`~air_magics.errors.Interrupted` (a
    ``KeyboardInterrupt``) saying how many shards were written: a re-run reuses them."""
    if engine not in ENGINES:
        raise PackError(f"engine={engine!r}: use one of {', '.join(map(repr, ENGINES))}")
    svp, dvp = VolumePath.parse(src), VolumePath.parse(dest)
    also, started = tuple(listeners), time.time()
    last = [PackProgress(0, 0, 0, 0, 0, 0, 0.0)]

    def emit(state: str, report: PackReport | None = None, error: str | None = None) -> None:
        event = PackEvent(
            job=str(dvp),
            state=state,
            progress=last[0],
            src=str(svp),
            dest=str(dvp),
            engine=engine,
            started=started,
            report=report,
            error=error,
        )
        channel.emit(event, also=also)

    def progress(p: PackProgress) -> None:
        last[0] = p
        emit("running")

    try:
        report = _pack(
            svp,
            dvp,
            shard_size,
            pattern,
            engine,
            dry_run,
            progress,
            store or VolumeStore(),
            workers or threads("remote-io"),
            retries,
        )
    except KeyboardInterrupt as exc:
        emit("interrupted", error="interrupted")
        if isinstance(exc, Interrupted):
            raise
        raise Interrupted(_interrupted_message(last[0], dvp, dry_run), "pack") from None
    except Exception as exc:
        emit("failed", error=str(exc) or type(exc).__name__)
        raise
    r = report
    files, nbytes, shards = r.files_written, r.bytes_written, r.shards_written
    last[0] = PackProgress(files, files, nbytes, nbytes, shards, shards, r.seconds)
    emit("done", report=report)
    return report


def _interrupted_message(p: PackProgress, dvp: VolumePath, dry_run: bool) -> str:
    """The one line an interrupted pack ends with: the shards that landed and how to resume."""
    if dry_run:
        return "pack dry run interrupted; nothing was written"
    if not p.shards_total:
        return f"pack interrupted before any shard was written to {dvp}; re-run to pack"
    return (
        f"pack interrupted: {p.shards_done:,} of {p.shards_total:,} shards written to {dvp} (published only when "
        "all are: the manifest is written last); re-run to pack the rest (written shards are reused)"
    )


def _pack(
    svp: VolumePath,
    dvp: VolumePath,
    shard_size: int | str,
    pattern: str | None,
    engine: str,
    dry_run: bool,
    report_progress: Callable[[PackProgress], None],
    store: VolumeStore,
    workers: int,
    retries: int,
    staged: Location | None = None,
) -> PackReport:
    t0 = time.monotonic()
    report = PackReport(str(svp), str(dvp), dry_run=dry_run)
    if dry_run:
        plan, _, _ = plan_pack(svp, dvp, shard_size=shard_size, pattern=pattern, store=store)
        return _finish(report, plan, t0, written=plan.new)
    if staged is None and not (target := store.locate(dvp)).is_local:  # an object store: packed locally, put there
        args = (svp, dvp, shard_size, pattern, engine, dry_run, report_progress, store, workers, retries)
        return pack_onto_store(target, lambda stage: _pack(*args, staged=stage))
    size, sloc, dloc = _check_request(svp, dvp, shard_size, store, staged)
    check_destination(dvp, dloc)  # refused before the lock file is made in it
    files = _list_source(store, svp, pattern)  # the source needs no lock: listed before the folder is made
    dfd = open_dir(dloc.path, dloc.root, create=True)
    try:
        lock = lock_destination(dfd, dvp)
    except BaseException:
        os.close(dfd)
        raise
    try:
        plan = _plan(dvp, dloc, files, size)  # the published manifest, read under the lock
        if plan.unchanged:
            report.unchanged = True
            return _finish(report, plan, t0, written=[])
        sweep_stale(dfd)
        infos, written, reused = _write_all(dfd, dloc, plan, sloc, workers, retries, report_progress, t0, engine)
        os.fsync(dfd)
        manifest = Manifest(
            plan.generation,
            str(svp),
            parse_size(shard_size) or 0,
            plan.fingerprint,
            len(plan.files),
            plan.bytes,
            tuple(plan.kept) + tuple(infos),
            time.time(),
        )
        write_json_atomic(
            os.path.join(dloc.path, MANIFEST_NAME), manifest.to_dict(), root=dloc.root, fsync=True, indent=1
        )
        report.shards_removed = remove_unnamed(dfd, dloc, manifest, plan.superseded)
        report.shards_reused = len(reused)
        return _finish(report, plan, t0, written=written, generation=manifest.generation)
    finally:
        if lock is not None:
            os.close(lock)  # releases the flock
        os.close(dfd)


def _write_all(
    dfd: int,
    dloc: Location,
    plan: PackPlan,
    sloc: Location,
    workers: int,
    retries: int,
    report_progress: Callable[[PackProgress], None] | None,
    t0: float,
    engine: str = "local",
) -> tuple[list[ShardInfo], list[ShardPlan], list[ShardPlan]]:
    """Write (or reuse) every new shard; returns their manifest entries, those written, those reused."""
    todo: list[ShardPlan] = []
    reused: list[ShardPlan] = []
    written: list[ShardPlan] = []
    index: dict[str, Index] = {}
    for sp in plan.new:
        ix = _complete(dloc, sp)
        if ix is not None:
            index[sp.name] = ix
            reused.append(sp)
            try:  # fresh again: a concurrent packer's step 5 leaves it for this run's manifest
                os.utime(sp.index, dir_fd=dfd)
            except OSError:
                pass
        else:
            todo.append(sp)
    total_files, total_bytes = sum(len(sp.files) for sp in todo), sum(sp.data_bytes for sp in todo)
    files = nbytes = shards = 0
    last = 0.0

    def report(force: bool = False) -> None:
        nonlocal last
        now = time.monotonic()
        if report_progress is not None and (force or now - last >= 0.1):
            last = now
            report_progress(PackProgress(files, total_files, nbytes, total_bytes, shards, len(todo), now - t0))

    def tick(size: int) -> None:
        nonlocal files, nbytes
        files, nbytes = files + 1, nbytes + size
        report()

    if engine == "spark":
        from .spark import write_shards_spark

        def shard_done(sp: ShardPlan) -> None:
            nonlocal files, nbytes, shards
            files, nbytes, shards = files + len(sp.files), nbytes + sp.data_bytes, shards + 1
            written.append(sp)
            report()

        report(force=True)
        index.update(
            write_shards_spark(
                todo,
                sloc,
                dloc,
                retries=retries,
                workers=workers,
                read_index=lambda sp: read_local(dloc, sp.index),
                on_shard=shard_done,
            )
        )
    else:
        with job_pool("remote-io", "air-pack", workers) as pool:
            feed = Feed(pool, sloc, todo, retries)
            try:
                for sp in todo:
                    index[sp.name] = write_shard(dfd, sp, feed, tick)
                    written.append(sp)
                    shards += 1
                    report(force=True)  # the count an interrupted run reports is exact ...
            except KeyboardInterrupt:  # ... and so is it when the interrupt came between a shard and its count
                shards = sum(1 for sp in todo if _complete(dloc, sp) is not None)
                report(force=True)
                raise
            finally:
                feed.close()
    report(force=True)

    def info(sp: ShardPlan, ix: Index) -> ShardInfo:
        crc = zlib.crc32(dump_index(ix))
        return ShardInfo(sp.name, sp.index, len(ix.members), ix.bytes, sp.data_bytes, ix.crc32, ix.mtime, crc)

    return [info(sp, index[sp.name]) for sp in plan.new], written, reused


def _finish(
    report: PackReport, plan: PackPlan, t0: float, *, written: list[ShardPlan], generation: int | None = None
) -> PackReport:
    report.files, report.bytes = len(plan.files), plan.bytes
    report.shards = len(plan.kept) + len(plan.new)
    report.shards_kept = len(plan.kept)
    report.shards_written = len(written)
    report.files_written = sum(len(sp.files) for sp in written)
    report.bytes_written = sum(sp.data_bytes for sp in written)
    report.generation = generation if generation is not None else (plan.previous.generation if plan.previous else 0)
    report.seconds = time.monotonic() - t0
    return report
