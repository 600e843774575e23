"""One loader measurement, in its own interpreter: ``python -m benchmarks.scenarios.loader_child SPEC_JSON``.

Runs in this project's venv (air_magics, plain torch) or in the reference's own venv, so it imports only
the standard library and the loader it measures. Steps: imports (not timed), setup (dataset + loader:
the listing), a cold epoch, a warm epoch over the same loader; the consumer touches every item. The
marks (monotonic times) let the harness cut its PSS samples per phase. Result: JSON at spec's
``result_file``.

``step_ms``: a simulated training step, the consumer sleeps that long after every 32 items; the time
spent waiting in ``next()`` is the data wait, reported per epoch. Kind ``copy`` measures the ceilings
instead of a loader: its "cold epoch" is the copy engine (``air_magics.copy``) copying the same folder
to local disk, its "warm epoch" a bare single-thread ``open().read()`` loop over the copied files. Kind
``pool`` is the plain yardstick for the cold epoch: a ``ThreadPoolExecutor(64)`` copying each file to
local disk with ``shutil.copyfile``, the consumer reading each copy as it lands; its warm epoch is the
same bare loop. Kind ``spdl`` is SPDL's thread pipeline (``spdl.pipeline``, 64 concurrent
``open().read()`` into memory, no cache: its warm epoch reads the volume again).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

__all__ = ["NaiveFiles", "SpdlFiles", "child_main"]


def _cpu_now() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class NaiveFiles:
    """A map-style dataset: item i is the bytes of file i, read with ``open().read()``."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> bytes:
        with open(self.paths[i], "rb") as f:
            return f.read()


def _decode(path: str):
    """The image-decoding pattern: open the yielded path with PIL, as an HWC uint8 tensor."""
    import numpy as np
    import torch
    from PIL import Image

    with Image.open(path) as im:
        arr = np.asarray(im.convert("RGB"))
    return torch.from_numpy(arr.copy()), os.path.getsize(path), os.path.basename(path)


def _images(ds):
    """A user's wrapper ``IterableDataset`` that decodes every path the library's dataset yields."""
    import torch.utils.data as tud

    class Images(tud.IterableDataset):
        def __init__(self, inner) -> None:
            self.inner = inner

        def __iter__(self):
            for p in self.inner:
                yield _decode(p)

    return Images(ds)


def _build(spec: dict, info: dict):
    """The loader of *spec*'s kind (ref | air | torch), built as a user would. ``pil``: wrapped in a
    decoding ``IterableDataset`` and batched by 32 (the pattern of an image-training script)."""
    kind, workers, prefetch, pf = spec["kind"], spec.get("workers"), spec.get("prefetch"), spec.get("prefetch_factor")
    kw = {} if workers is None else {"num_workers": workers}
    pil = spec.get("pil")
    batch = {"batch_size": 32} if pil else {"batch_size": None}
    if kind == "ref":
        from databricks.air.data import DataLoader, UCVolumeDataset

        if workers == 0:
            kw["prefetch_factor"] = None
        ds = UCVolumeDataset(spec["ref_path"])
        return DataLoader(_images(ds) if pil else ds, **batch, **kw), None
    if kind == "air":
        from air_magics.data import DataLoader, UCVolumeDataset

        opts = {} if prefetch is None else {"prefetch": prefetch}
        if spec.get("output"):  # "bytes": members read by offset from the cached shard
            opts["output"] = spec["output"]
        ds = UCVolumeDataset(spec["air_path"], **opts)
        if pf is not None:
            kw["prefetch_factor"] = pf
        info["prefetch"] = ds.prefetch
        return DataLoader(_images(ds) if pil else ds, **batch, **kw), ds
    import torch.utils.data as tud

    with os.scandir(spec["naive_path"]) as it:
        paths = sorted(e.path for e in it if e.is_file(follow_symlinks=False))
    return tud.DataLoader(NaiveFiles(paths), batch_size=None, shuffle=False, num_workers=workers or 0), None


STEP_ITEMS = 32  # a simulated step consumes this many items


def _epoch(loader, step_ms: float = 0.0) -> tuple[float, float, dict]:
    t0 = time.monotonic()
    first, n, nbytes, names, kinds = None, 0, 0, set(), set()
    wait, it, steps = 0.0, iter(loader), 0
    while True:
        w0 = time.monotonic()
        try:
            item = next(it)
        except StopIteration:
            break
        if first is None:
            first = time.monotonic() - t0
        if isinstance(item, (list, tuple)) and len(item) == 3:  # a decoded batch: (images, sizes, names)
            k = len(item[2])
            b, n = int(item[1].sum()), n + k - 1
            names.update(item[2])
        elif isinstance(item, (bytes, bytearray, memoryview)):
            b = len(item)
        else:  # a local path (str); read it now: the reference only guarantees it until the next item
            with open(item, "rb") as f:
                b = len(f.read())
            names.add(os.path.basename(str(item)))
        # data wait: from asking for the item until its bytes are in memory (a loader that yields
        # paths on the volume itself, like the reference, reads the volume here, not in next())
        wait += time.monotonic() - w0
        kinds.add(type(item).__name__)
        n += 1
        nbytes += b
        if step_ms and n // STEP_ITEMS > steps:
            steps = n // STEP_ITEMS
            time.sleep(step_ms / 1000)
    t1 = time.monotonic()
    return (
        t0,
        t1,
        {
            "seconds": t1 - t0,
            "first_item": first,
            "items": n,
            "bytes": nbytes,
            "distinct_names": len(names) if names else None,
            "item_types": sorted(kinds),
            "wait_s": wait,
        },
    )


def _ceilings(spec: dict, marks: dict) -> list[dict]:
    """Kind ``copy``: the copy engine over the same folder, then a bare read loop over the copies."""
    import air_magics

    dest = os.path.join(os.path.dirname(spec["result_file"]), "copied")
    marks["setup"] = marks["epoch0_start"] = time.monotonic()
    report = air_magics.copy([spec["air_path"]], dest)
    marks["epoch0_end"] = time.monotonic()
    paths = sorted(os.path.join(r, f) for r, _, fs in os.walk(dest) for f in fs)
    cold = {
        "seconds": marks["epoch0_end"] - marks["epoch0_start"],
        "first_item": None,
        "items": report.copied,
        "bytes": sum(os.path.getsize(p) for p in paths),
        "distinct_names": len({os.path.basename(p) for p in paths}),
        "item_types": ["copy"],
        "wait_s": 0.0,
    }
    marks["epoch1_start"], marks["epoch1_end"], warm = _epoch(paths)
    return [cold, warm]


POOL_THREADS = 64  # the plain pool's threads, as in the copy benchmark's pool row
SPDL_CONCURRENCY = 64


def _listing(folder: str) -> list[str]:
    with os.scandir(folder) as it:
        return sorted(e.path for e in it if e.is_file(follow_symlinks=False))


def _pool_copies(paths: list[str], dest: str):
    """Kind ``pool``: 64 threads each ``shutil.copyfile`` a file to local disk; yields the copies as they land."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    os.makedirs(dest, exist_ok=True)

    def one(src: str) -> str:
        dst = os.path.join(dest, os.path.basename(src))
        shutil.copyfile(src, dst)
        return dst

    with ThreadPoolExecutor(POOL_THREADS) as ex:
        for fut in as_completed([ex.submit(one, p) for p in paths]):
            yield fut.result()


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class SpdlFiles:
    """Kind ``spdl``: each ``__iter__`` runs an SPDL pipeline reading every file into memory, 64 at once."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def __iter__(self):
        from spdl.pipeline import PipelineBuilder

        pipeline = (
            PipelineBuilder()
            .add_source(self.paths)
            .pipe(_read, concurrency=SPDL_CONCURRENCY, output_order="completion")
            .add_sink(SPDL_CONCURRENCY)
            .build(num_threads=SPDL_CONCURRENCY)
        )
        with pipeline.auto_stop():
            yield from pipeline.get_iterator(timeout=600)


def _yardstick(spec: dict, marks: dict) -> list[dict]:
    """Kinds ``pool`` and ``spdl``: list the folder (setup), then a cold and a warm epoch."""
    paths = _listing(spec["naive_path"])
    marks["setup"] = time.monotonic()
    if spec["kind"] == "spdl":
        src = SpdlFiles(paths)
        marks["epoch0_start"], marks["epoch0_end"], cold = _epoch(src)
        marks["epoch1_start"], marks["epoch1_end"], warm = _epoch(src)
        return [cold, warm]
    dest = os.path.join(os.path.dirname(spec["result_file"]), "pooled")
    marks["epoch0_start"], marks["epoch0_end"], cold = _epoch(_pool_copies(paths, dest))
    marks["epoch1_start"], marks["epoch1_end"], warm = _epoch(_listing(dest))
    return [cold, warm]


def child_main(spec: dict) -> int:
    marks = {"start": time.monotonic()}
    kind = spec["kind"]
    if kind == "ref":  # the same imports _build does, so none of them is timed
        from databricks.air.data import DataLoader, UCVolumeDataset  # noqa: F401
    elif kind == "air":
        import air_magics.datasets.loader  # noqa: F401  (imports torch now, not inside setup)
        from air_magics.data import DataLoader, UCVolumeDataset  # noqa: F401
    elif kind == "torch":
        import torch.utils.data  # noqa: F401
    elif kind == "spdl":
        import spdl.pipeline  # noqa: F401
    if spec.get("pil"):
        import numpy  # noqa: F401
        import PIL.Image  # noqa: F401
    marks["imported"] = time.monotonic()
    cpu0 = _cpu_now()
    if kind in ("copy", "pool", "spdl"):
        epochs = _ceilings(spec, marks) if kind == "copy" else _yardstick(spec, marks)
        marks["done"] = time.monotonic()
        out = {"marks": marks, "epochs": epochs, "cpu_s": _cpu_now() - cpu0, "info": {}}
        Path(spec["result_file"]).write_text(json.dumps(out))
        return 0

    info: dict = {}
    loader, ds = _build(spec, info)
    info.update(
        num_workers=loader.num_workers,
        prefetch_factor=loader.prefetch_factor,
        persistent_workers=loader.persistent_workers,
    )
    marks["setup"] = time.monotonic()

    epochs, hits = [], []
    for e in range(2):
        marks[f"epoch{e}_start"], marks[f"epoch{e}_end"], ep = _epoch(loader, spec.get("step_ms") or 0.0)
        epochs.append(ep)
        if ds is not None:
            ci = ds.cache.info()
            hits.append((ci.hits, ci.misses))
    if hits:  # per-epoch cache hits and misses (air only)
        info["epoch_hits"] = [
            (h - (hits[i - 1][0] if i else 0), m - (hits[i - 1][1] if i else 0)) for i, (h, m) in enumerate(hits)
        ]

    # persistent workers (the reference) stay alive until the iterator is shut down: join them so their
    # CPU time is counted (RUSAGE_CHILDREN only includes reaped children)
    it = getattr(loader, "_iterator", None)
    if it is not None and hasattr(it, "_shutdown_workers"):
        it._shutdown_workers()
    marks["done"] = time.monotonic()
    cpu = _cpu_now() - cpu0
    if kind == "air":
        ci = ds.cache.info()
        info["cache"] = {
            "hits": ci.hits,
            "misses": ci.misses,
            "entries": ci.entries,
            "root": ci.root,
            "bytes": ci.bytes,
            "limit": ci.limit,
            "overflows": ci.overflows,
        }
        info["loader_timing"] = loader.timing.to_dict()
    out = {"marks": marks, "epochs": epochs, "cpu_s": cpu, "info": info}
    Path(spec["result_file"]).write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(child_main(json.loads(sys.argv[1])))
