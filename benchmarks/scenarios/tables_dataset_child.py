"""One table-dataset measurement in a fresh process: ``python -m benchmarks.scenarios.tables_dataset_child METHOD TABLE``.

Methods, each reading the same embedded-store table (its warehouse Parquet files) into batches of
1,024 rows with the same output (numeric columns as tensors, strings as lists), one process, no
workers:

  ucdataset   air_magics.data.UCDataset(TABLE, batch_size=1024)
  hf          datasets.load_dataset("parquet", data_files=...) .with_format("torch") + torch DataLoader
  pyarrow     pyarrow.dataset.dataset(files).to_batches(batch_size=1024), converted per batch

Prints one JSON line (modules are imported before the clock starts): seconds to the first batch, seconds for the whole epoch, rows, peak RSS
(``ru_maxrss``), bytes the process wrote to storage (``/proc/self/io`` ``write_bytes``) and the size
of the Hugging Face cache folder afterwards.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings

__all__ = ["measure"]


def _written() -> int:
    try:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("write_bytes"))
    except (OSError, StopIteration):
        return -1


def _du(path: str) -> int:
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    return total


def _files(table: str) -> list[str]:
    from air_magics.tablefiles.resolve import is_data_file, warehouse_folder

    d = warehouse_folder(table)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if is_data_file(f))


def _batches(method: str, table: str):
    if method == "ucdataset":
        from air_magics.data import UCDataset

        yield from UCDataset(table, batch_size=1024)
    elif method == "hf":
        import datasets
        import torch

        ds = datasets.load_dataset("parquet", data_files=_files(table), split="train").with_format("torch")
        yield from torch.utils.data.DataLoader(ds, batch_size=1024)
    elif method == "pyarrow":
        import pyarrow as pa
        import pyarrow.dataset as pads
        import torch

        for b in pads.dataset(_files(table), format="parquet").to_batches(batch_size=1024):
            yield {
                name: torch.from_numpy(col.to_numpy())
                if pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
                else col.to_pylist()
                for name, col in zip(b.schema.names, b.columns, strict=True)
            }
    else:
        raise SystemExit(f"unknown method {method!r}")


def _imports(method: str) -> None:
    """Import what the method uses before the clock starts: the measure is the data path, not imports."""
    import importlib

    for mod in ("torch", "numpy", "pyarrow", "pyarrow.parquet", "pyarrow.dataset"):
        importlib.import_module(mod)
    importlib.import_module({"ucdataset": "air_magics.datasets.table_dataset", "hf": "datasets"}.get(method, "pyarrow"))


def measure(method: str, table: str) -> dict:
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")  # the zero-copy baseline
    _imports(method)
    w0 = _written()
    t0 = time.perf_counter()
    it = _batches(method, table)
    first = next(it)
    t_first = time.perf_counter() - t0
    rows = len(first["id"])
    for b in it:
        rows += len(b["id"])
    secs = time.perf_counter() - t0
    return {
        "first_s": t_first,
        "seconds": secs,
        "rows": rows,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "written_mb": max(0, _written() - w0) / 2**20,
        "hf_cache_mb": _du(os.environ.get("HF_DATASETS_CACHE", "/nonexistent")) / 2**20,
    }


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], sys.argv[2])))
