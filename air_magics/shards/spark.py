"""``pack(..., engine="spark")``: the shards of a plan written by Spark tasks, in parallel.

The driver (the notebook) lists the source once and plans exactly as the local engine does
(:mod:`.pack_plan`: same shards, same names), so both engines pack the same members. It sends one row
per shard to the active Spark Connect session (:func:`air_magics.tables.session.get_session`);
a plain Python UDF (pickled, not Arrow: a worker needs no pandas or pyarrow, only this package on
its ``PYTHONPATH``) writes that shard straight to the destination with :func:`.shardfile.write_shard`
(temp name, fsync, rename, then its index) and returns the index. The driver then publishes the
manifest (:mod:`.writer`), as for the local engine.

Requirement: the Spark workers open the volume paths the driver resolved (``Location.path``), so
the volume must be mounted at the same path on every executor as in the notebook (a Databricks
``/Volumes`` FUSE mount, or the same NFS/FUSE path everywhere). On the embedded local server the
workers run on this machine and the paths are the same by construction. A retried or speculative
task is harmless: a shard's name is a digest of its members, so two attempts write identical
bytes and the last rename wins.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from ..errors import AirError, PackError
from ..io.confined import open_dir
from ..io.pools import job_pool
from ..volumes.location import Location
from ..volumes.walk import Entry
from .format import Index, parse_index
from .pack_plan import ShardPlan
from .shardfile import Feed, write_shard

__all__ = ["write_shards_spark", "pack_task"]

_MAX_PARTITIONS = 4096


def _payload(sp: ShardPlan, sloc: Location, dloc: Location, retries: int, workers: int) -> str:
    return json.dumps(
        {
            "sid": sp.sid,
            "bytes": sp.bytes,
            "files": [[f.rel, f.size, f.mtime] for f in sp.files],
            "src": [sloc.path, sloc.root],
            "dest": [dloc.path, dloc.root],
            "retries": retries,
            "workers": workers,
        },
        ensure_ascii=False,
    )


def pack_task(payload: str) -> str:
    """Runs in a Spark Python worker: write one shard, return ``{"index": ...}`` or ``{"error": ...}``
    (an error travels back as text so the driver raises it as one line naming the file)."""
    try:
        p = json.loads(payload)
        sp = ShardPlan(p["sid"], tuple(Entry(r, int(s), float(t)) for r, s, t in p["files"]), int(p["bytes"]))
        sloc, dloc = Location(p["src"][0], root=p["src"][1]), Location(p["dest"][0], root=p["dest"][1])
        dfd = open_dir(dloc.path, dloc.root, create=True)
        try:
            with job_pool("remote-io", "air-pack", int(p["workers"])) as pool:
                feed = Feed(pool, sloc, [sp], int(p["retries"]))
                try:
                    write_shard(dfd, sp, feed, lambda _n: None)
                finally:
                    feed.close()
        finally:
            os.close(dfd)
        return json.dumps({"name": sp.name, "index": sp.index})
    except AirError as exc:
        return json.dumps({"error": str(exc)})
    except OSError as exc:
        return json.dumps({"error": f"{type(exc).__name__}: {exc} (on the Spark worker {os.uname().nodename})"})


def _session() -> Any:
    from ..tables.session import get_session, guarded

    s = get_session()
    return s, guarded


def write_shards_spark(
    todo: list[ShardPlan],
    sloc: Location,
    dloc: Location,
    *,
    retries: int,
    workers: int,
    read_index: Callable[[ShardPlan], bytes],
    on_shard: Callable[[ShardPlan], None],
) -> dict[str, Index]:
    """Write every shard of *todo* on Spark; returns each one's index, read back from the
    destination by the driver (*read_index*) and checked, so a worker that wrote elsewhere (the
    volume not mounted at the same path) fails here by name instead of publishing nothing real."""
    if not todo:
        return {}
    session, guarded = _session()
    spark = session.spark
    from pyspark.sql.functions import col, udf
    from pyspark.sql.types import StringType

    rows = [(i, _payload(sp, sloc, dloc, retries, workers)) for i, sp in enumerate(todo)]
    task = udf(pack_task, StringType(), useArrow=False).asNondeterministic()

    out: dict[str, Index] = {}

    def one(row: Any) -> None:
        sp = todo[int(row["i"])]
        res = json.loads(row["out"] or "{}")
        if "error" in res:
            raise PackError(f"a Spark task packing {sp.name} failed: {res['error']}; nothing was published")
        try:
            ix = parse_index(read_index(sp), sp.index, sp.name)
        except (OSError, AirError) as exc:
            raise PackError(
                f"a Spark task reported {sp.name} written but the driver cannot read it in {dloc.path} ({exc}); "
                f"engine='spark' needs the volume mounted at the same path on the executors as here"
            ) from None
        if ix.bytes != sp.bytes or [m.name for m in ix.members] != [f.rel for f in sp.files]:
            raise PackError(f"shard {sp.name} written by Spark does not match its plan; run pack again")
        out[sp.name] = ix
        on_shard(sp)

    def run() -> None:
        df = spark.createDataFrame(rows, "i INT, plan STRING").repartition(min(len(rows), _MAX_PARTITIONS), "i")
        for row in df.select(col("i"), task(col("plan")).alias("out")).toLocalIterator():
            one(row)  # as partitions finish: progress per shard

    guarded(session, f"packing {len(todo)} shards on Spark", run)
    missing = [sp.name for sp in todo if sp.name not in out]
    if missing:
        raise PackError(f"Spark returned no result for {len(missing)} shards ({missing[0]}, ...); run pack again")
    return out
