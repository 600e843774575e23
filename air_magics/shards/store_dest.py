"""Packing onto an object store (a volume registered to ``s3://...``): packed in a local staging
folder, then published to the store, the manifest last.

Why: the packer's commit protocol (:mod:`.writer`) writes through a confined folder descriptor,
``fsync`` and renames; an object store has none of them, but a PUT is atomic per object. So the
pack runs unchanged against a private local folder seeded with the store's published state (its
manifest and indexes, and each shard as a sparse file of its size: the plan keeps the shards it
names without a byte of them read), and then:

1. the shards written by this run and their indexes are uploaded (``put``, 64 at a time);
2. the new manifest is uploaded: the one write that publishes the generation;
3. only then shards and indexes the replaced manifest named and the new one does not are removed.

A kill before 2 leaves the previous manifest and all it names untouched (new shards have names no
published manifest uses). Object stores have no locks: two packers of one folder at once are not
excluded (the last manifest wins; shards it names are never removed by the other, which removes
only what its own replaced manifest named).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from ..io.pools import job_pool, threads
from ..io.retry import retry_call
from ..snapshots import PackReport
from ..volumes.location import Location
from .format import MANIFEST_NAME, load_manifest

__all__ = ["pack_onto_store"]


def _seed(fs: Any, base: str, stage: str) -> set[str]:
    """The store's published manifest and indexes into *stage*, its shards as sparse files of their
    sizes; returns the names the published manifest holds (none when there is none)."""
    try:
        raw = retry_call(lambda: fs.cat_file(f"{base}/{MANIFEST_NAME}"))
    except FileNotFoundError:
        return set()
    try:
        manifest = load_manifest(raw, f"{base}/{MANIFEST_NAME}")
    except Exception:  # an older or damaged manifest: the local packer decides (rewrites the folder whole)
        manifest = None
    with open(os.path.join(stage, MANIFEST_NAME), "wb") as f:
        f.write(raw)
    if manifest is None:
        return set()
    names: set[str] = set()
    for s in manifest.shards:
        try:
            index = retry_call(lambda s=s: fs.cat_file(f"{base}/{s.index}"))
        except FileNotFoundError:
            continue  # (the plan rewrites a shard whose index is gone)
        with open(os.path.join(stage, s.index), "wb") as f:
            f.write(index)
        with open(os.path.join(stage, s.name), "wb") as f:
            f.truncate(s.bytes)
        names.update((s.name, s.index))
    return names


def pack_onto_store(dloc: Location, run: Callable[[Location], PackReport]) -> PackReport:
    """Run the local packer *run* against a staging folder seeded from object-store folder *dloc*,
    then publish what it wrote there (see the module docstring)."""
    fs, base = dloc.fs, dloc.path.rstrip("/")
    with tempfile.TemporaryDirectory(prefix="air-pack-stage-") as stage:
        published = _seed(fs, base, stage)
        report = run(Location(stage, None, stage))
        if report.dry_run or report.unchanged:
            return report
        with open(os.path.join(stage, MANIFEST_NAME), "rb") as f:
            raw = f.read()
        manifest = load_manifest(raw, f"{base}/{MANIFEST_NAME}")
        named = {n for s in manifest.shards for n in (s.name, s.index)}
        upload = sorted(n for n in named if n not in published)
        with job_pool("remote-io", "air-pack-upload", min(threads("remote-io"), max(1, len(upload)))) as pool:
            list(pool.map(lambda n: retry_call(lambda: fs.put_file(os.path.join(stage, n), f"{base}/{n}")), upload))
        retry_call(lambda: fs.pipe_file(f"{base}/{MANIFEST_NAME}", raw))
        for n in sorted(published - named):
            try:
                retry_call(lambda n=n: fs.rm_file(f"{base}/{n}"))
            except FileNotFoundError:
                pass
    return report
