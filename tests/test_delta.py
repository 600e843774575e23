"""Delta tables: real tables written by deltalake (delta-rs) into a real volume, read by UCDataset,
read_table and %air_volume ls, compared with deltalake's own reading of the same snapshot."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import uuid
import zlib
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, WriterProperties, write_deltalake

from air_magics.data import DataLoader, UCDataset
from air_magics.errors import DatasetError
from air_magics.tablefiles.delta import DeltaError

VOL = "/Volumes/main/dl/v"


@pytest.fixture
def vol():
    """(volume path of a table folder, its local path) in a fresh embedded volume."""
    from air_magics.volumes import VolumeStore

    store = VolumeStore()
    store.create("main.dl.v", exist_ok=True)
    return f"{VOL}/tbl", store.locate(f"{VOL}/tbl").path


def frame(lo, hi, **extra):
    ids = np.arange(lo, hi)
    return pa.table({"id": ids, "x": ids * 0.5, "s": [f"s{i % 7}" for i in ids], **extra})


def rows_of(batches):
    """Every row the batches hold, as dicts, sorted by id (tensors and lists alike)."""
    out = []
    for b in batches:
        cols = {k: (v.tolist() if hasattr(v, "tolist") else list(v)) for k, v in b.items()}
        out += [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
    return sorted(out, key=lambda r: r["id"])


def truth(root, version=None, columns=None):
    """The snapshot's rows as deltalake itself reads them, sorted by id."""
    tbl = DeltaTable(root, version=version).to_pyarrow_table(columns=columns)
    return sorted(tbl.to_pylist(), key=lambda r: r["id"])


# -- the cases: each reads back exactly the table's rows ------------------------------------
def test_overwrite_reads_only_the_new_version(vol):
    path, root = vol
    write_deltalake(root, frame(0, 100))
    write_deltalake(root, frame(1000, 1010), mode="overwrite")
    ds = UCDataset(path, batch_size=1000)
    assert ds.version == 1 and len(ds) == 10
    assert rows_of(ds) == truth(root)  # 10 rows, not 110


def test_delete_and_append(vol):
    path, root = vol
    write_deltalake(root, frame(0, 300))
    write_deltalake(root, frame(300, 400), mode="append")
    DeltaTable(root).delete("id % 3 = 0")
    write_deltalake(root, frame(400, 450), mode="append")
    ds = UCDataset(path, batch_size=64, shuffle=True, seed=1)
    assert ds.version == 3
    assert rows_of(ds) == truth(root)
    assert len(ds) == len(truth(root)) == 400 - 134 + 50  # 134 multiples of 3 below 400


def test_compaction(vol):
    path, root = vol
    for i in range(5):
        write_deltalake(root, frame(i * 50, (i + 1) * 50), mode="append")
    before = UCDataset(path, batch_size=32)
    DeltaTable(root).optimize.compact()
    after = UCDataset(path, batch_size=32)
    assert len(before.table.parts) == 5 and len(after.table.parts) == 1  # the removed small files are not read
    assert after.version == 5 and rows_of(after) == rows_of(before) == truth(root)


def test_partitioned_table(vol):
    path, root = vol
    n = 60
    p = pa.array(["a b", "x=y%z", None] * (n // 3))
    q = pa.array([1, 2, 3, 4] * (n // 4))
    write_deltalake(root, frame(0, n, p=p, q=q), partition_by=["p", "q"])
    ds = UCDataset(path, batch_size=7, shuffle=True, seed=5)
    assert rows_of(ds) == truth(root)
    assert [f.name for f in ds.out_schema] == ["id", "x", "s", "p", "q"]
    only = UCDataset(path, columns=["id", "p"], filter="q = 2 AND p = 'x=y%z'", batch_size=5)
    want = [r for r in truth(root, columns=["id", "p", "q"]) if r["q"] == 2 and r["p"] == "x=y%z"]
    assert rows_of(only) == [{"id": r["id"], "p": r["p"]} for r in want] and len(only) == len(want) > 0


def engine_rows(root):
    """The rows as deltalake's DataFusion engine reads them (it honours column mapping and deletion
    vectors; ``to_pyarrow_table`` refuses deletion vectors and returns nulls under column mapping)."""
    tbl = pa.RecordBatchReader.from_stream(DeltaTable(root).scan()).read_all()
    return sorted(tbl.to_pylist(), key=lambda r: r["id"])


def test_column_mapping(vol):
    path, root = vol
    write_deltalake(root, frame(0, 40), configuration={"delta.columnMapping.mode": "name"})
    files = DeltaTable(root).file_uris()
    assert "id" not in pq.ParquetFile(files[0]).schema_arrow.names  # physical names in the file
    got = rows_of(UCDataset(path, batch_size=8))
    assert got == engine_rows(root) and [r["id"] for r in got] == list(range(40))


# -- deletion vectors: a DV written as the Delta protocol describes it (delta-rs writes none) --------
def _roaring(values):
    """A 32-bit RoaringBitmap in the portable format, array containers only."""
    buckets: dict[int, list[int]] = {}
    for v in sorted(values):
        buckets.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(buckets)
    out = struct.pack("<II", 12346, len(keys))
    out += b"".join(struct.pack("<HH", k, len(buckets[k]) - 1) for k in keys)
    off = len(out) + 4 * len(keys)
    for k in keys:
        out += struct.pack("<I", off)
        off += 2 * len(buckets[k])
    return out + b"".join(struct.pack(f"<{len(buckets[k])}H", *buckets[k]) for k in keys)


def delete_with_dv(root, deleted):
    """Commit a deletion vector over the table's single file that removes rows *deleted* (positions)."""
    log = os.path.join(root, "_delta_log")
    version = max(int(f.split(".")[0]) for f in os.listdir(log) if f.endswith(".json"))
    adds = [json.loads(line)["add"] for line in open(os.path.join(log, f"{0:020d}.json")) if '"add"' in line]
    assert len(adds) == 1
    data = struct.pack("<i", 1681511377) + struct.pack("<qI", 1, 0) + _roaring(deleted)
    name = os.path.join(root, f"deletion_vector_{uuid.uuid4()}.bin")
    with open(name, "wb") as f:
        f.write(b"\x01" + struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data)))
    dv = {"storageType": "p", "pathOrInlineDv": "file://" + name, "offset": 1, "sizeInBytes": len(data)}
    dv["cardinality"] = len(deleted)
    ts = int(time.time() * 1000)
    rm = {"path": adds[0]["path"], "deletionTimestamp": ts, "dataChange": True, "partitionValues": {}}
    with open(os.path.join(log, f"{version + 1:020d}.json"), "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": ts, "operation": "DELETE"}}) + "\n")
        f.write(json.dumps({"remove": {**rm, "size": adds[0]["size"], "extendedFileMetadata": True}}) + "\n")
        f.write(json.dumps({"add": {**adds[0], "deletionVector": dv, "modificationTime": ts}}) + "\n")


def test_deletion_vectors_drop_their_rows(vol):
    path, root = vol
    config = {"delta.enableDeletionVectors": "true"}
    write_deltalake(
        root, frame(0, 1000), configuration=config, writer_properties=WriterProperties(max_row_group_size=300)
    )
    deleted = {3, 4, 5, 299, 300, 650, 999}
    delete_with_dv(root, deleted)
    dt = DeltaTable(root)
    assert "deletionVectors" in dt.protocol().reader_features
    want = [i for i in range(1000) if i not in deleted]
    assert [r["id"] for r in engine_rows(root)] == want  # deltalake's own engine agrees on the rows
    ds = UCDataset(path, batch_size=64, shuffle=True, seed=2, window=128)
    assert len(ds) == len(want) and [r["id"] for r in rows_of(ds)] == want
    filt = UCDataset(path, filter="id < 310", batch_size=64)
    assert len(filt) == 310 - 5 and [r["id"] for r in rows_of(filt)] == [i for i in want if i < 310]
    # exact resume on another grid, and the loader's worker processes read the masks too
    it = iter(ds)
    head = rows_of([next(it) for _ in range(4)])
    state = ds.state_dict()
    again = UCDataset(path, batch_size=64, shuffle=True, seed=2, window=128)
    again.load_state_dict(state)
    rest = rows_of(DataLoader(again, batch_size=None, num_workers=2))
    assert sorted(r["id"] for r in head + rest) == want


# -- time travel and resume -------------------------------------------------------------------------
def test_version_and_timestamp(vol):
    path, root = vol
    write_deltalake(root, frame(0, 20))
    time.sleep(0.02)
    write_deltalake(root, frame(100, 105), mode="overwrite")
    assert rows_of(UCDataset(path, version=0)) == truth(root, version=0)
    t0 = DeltaTable(root).history()[-1]["timestamp"]  # version 0's commit time, ms
    at = UCDataset(path, timestamp=datetime.fromtimestamp(t0 / 1000, tz=timezone.utc))
    assert at.version == 0 and len(at) == 20
    assert UCDataset(path, timestamp=datetime.now(timezone.utc).isoformat()).version == 1
    with pytest.raises(DeltaError, match="version 7"):
        UCDataset(path, version=7)
    with pytest.raises(DatasetError, match="refresh=True"):
        UCDataset(path, version=0, refresh=True)


def test_resume_across_a_version_change(vol):
    path, root = vol
    write_deltalake(root, frame(0, 100))
    ds = UCDataset(path, batch_size=10, shuffle=True, seed=3, window=32)
    it = iter(ds)
    head = rows_of([next(it) for _ in range(3)])
    state = ds.state_dict()
    assert state["delta_version"] == 0
    write_deltalake(root, frame(500, 520), mode="overwrite")  # version 1 while training was stopped

    latest = UCDataset(path, batch_size=25, shuffle=True, seed=3, window=32)
    assert latest.version == 1
    latest.load_state_dict(state)  # resumes the snapshot it was reading
    assert latest.version == 0
    assert sorted(head + rows_of(latest), key=lambda r: r["id"]) == truth(root, version=0)
    latest.set_epoch(1)  # without refresh the next epoch reads the same snapshot
    assert latest.version == 0 and len(latest) == 100

    fresh = UCDataset(path, batch_size=10, shuffle=True, seed=3, window=32, refresh=True)
    fresh.load_state_dict(state)
    assert fresh.version == 0  # mid-epoch: the saved snapshot even with refresh
    fresh.set_epoch(1)  # a new epoch opts in to the latest
    assert fresh.version == 1 and rows_of(fresh) == truth(root)
    nxt = ds.state_dict(epoch_done=True)
    fresh2 = UCDataset(path, batch_size=10, shuffle=True, seed=3, window=32, refresh=True)
    fresh2.load_state_dict(nxt)  # an epoch's start: the latest
    assert fresh2.version == 1

    with pytest.raises(DatasetError, match="pins version 1"):
        UCDataset(path, batch_size=10, shuffle=True, seed=3, window=32, version=1).load_state_dict(state)

    DeltaTable(root).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    with pytest.raises(DeltaError, match="cannot resume: .*version 0.*vacuumed"):
        UCDataset(path, batch_size=10, shuffle=True, seed=3, window=32).load_state_dict(state)
    with pytest.raises(DeltaError, match="version 0 of .* is gone"):
        UCDataset(path, version=0)


def test_snapshot_vacuumed_mid_epoch_is_refused_in_one_line(vol):
    path, root = vol
    write_deltalake(root, frame(0, 50))
    ds = UCDataset(path, batch_size=10)
    write_deltalake(root, frame(0, 5), mode="overwrite")
    DeltaTable(root).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    with pytest.raises(DeltaError, match="vacuumed"):
        list(ds)


# -- refusals ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "feature",
    ["fancyNewThing", "variantShredding-preview"],  # deltalake refuses the first itself; it loads the second, we refuse
)
def test_unknown_reader_feature_is_refused(vol, feature):
    from air_magics import tables
    from air_magics.errors import TablesError

    path, root = vol
    write_deltalake(root, frame(0, 10))
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7}
    protocol.update(readerFeatures=[feature], writerFeatures=[feature])
    with open(os.path.join(root, "_delta_log", f"{1:020d}.json"), "w") as f:
        f.write(json.dumps({"protocol": protocol}) + "\n")
    with pytest.raises(DeltaError, match=f"reader feature '{feature}'") as err:
        UCDataset(path)
    assert "\n" not in str(err.value)
    with pytest.raises(TablesError, match=f"'{feature}'"):
        tables.read_table(path)


def test_missing_deltalake_is_refused(vol):
    """deltalake made unimportable in a fresh interpreter: the Delta folder is refused, never read as Parquet."""
    path, root = vol
    write_deltalake(root, frame(0, 10))
    write_deltalake(root, frame(0, 5), mode="overwrite")
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'deltalake' or name.startswith('deltalake.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from air_magics.data import UCDataset\n"
        "try:\n"
        "    UCDataset(sys.argv[1])\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "    sys.exit(3)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.startswith("DeltaError") and "air_magics[delta]" in r.stdout


def test_plain_parquet_is_unchanged(vol):
    path, root = vol
    os.makedirs(root)
    for i in range(3):
        pq.write_table(frame(i * 100, (i + 1) * 100), os.path.join(root, f"part-{i}.parquet"), row_group_size=40)
    ds = UCDataset(path, batch_size=33, shuffle=True, seed=4)
    assert ds.version is None and ds.table.delta is None
    assert all(p.view is None for p in ds.table.parts) and len(ds.units) == 9
    want = sorted(pq.read_table(root).to_pylist(), key=lambda r: r["id"])
    assert rows_of(ds) == want
    assert ds.state_dict()["delta_version"] is None
    with pytest.raises(DatasetError, match="plain Parquet"):
        UCDataset(path, version=0)


# -- the other readers of a folder --------------------------------------------------------------------
def test_volume_ls_shows_the_table_not_its_files(vol, ip):
    path, root = vol
    write_deltalake(root, frame(0, 100))
    write_deltalake(root, frame(0, 10), mode="overwrite")
    shown = ip.run_line_magic("air_volume", f"ls {path}")
    assert repr(shown).startswith(f"{path}: Delta table, version 1, 1 file, 10 rows")
    assert "part-" not in repr(shown) and "Delta table, version 1" in shown._repr_html_()
    plain = ip.run_line_magic("air_volume", f"ls {VOL}")
    assert "Delta table" not in repr(plain) and "tbl/" in repr(plain)


def test_read_table_of_a_folder_needs_no_spark(vol):
    from air_magics import tables
    from air_magics.errors import TablesError, TableTooLargeError

    path, root = vol
    write_deltalake(root, frame(0, 100, q=pa.array([1, 2] * 50)), partition_by=["q"])
    write_deltalake(root, frame(100, 130, q=pa.array([1, 2] * 15)), mode="overwrite", partition_by=["q"])
    got = tables.read_table(path, to="arrow")
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == truth(root)
    old = tables.read_table(path, version=0, columns=["id", "q"], where="q = 2 AND id < 10", to="pandas")
    assert sorted(old["id"].tolist()) == [1, 3, 5, 7, 9] and list(old.columns) == ["id", "q"]
    assert len(tables.read_table(path, limit=7, to="numpy")) == 7
    summary = tables.describe_table(path)
    assert summary.rows == 30 and ("q", "int64") in summary.columns and len(summary.preview) == 5
    with pytest.raises(TableTooLargeError, match="over the limit"):
        tables.read_table(path, max_bytes=100)
    with pytest.raises(TablesError, match="Delta table folder"):
        tables.read_table("main.dl.t", version=0)


def test_export_refuses_to_replace_a_delta_table(vol):
    from air_magics import tables
    from air_magics.errors import ExportTargetError

    path, root = vol
    write_deltalake(root, frame(0, 10))
    with pytest.raises(ExportTargetError, match="is a Delta table"):  # refused before any Spark server starts
        tables.export_table("main.dl.src", path, mode="overwrite")
    assert DeltaTable(root).version() == 0


def test_air_table_magic_reads_a_delta_folder(vol, ip):
    path, root = vol
    write_deltalake(root, frame(0, 50))
    write_deltalake(root, frame(100, 120), mode="overwrite")
    df = ip.run_line_magic("air_table", f"{path} --as pandas --columns id,s --where 'id < 105'")
    assert sorted(df["id"].tolist()) == [100, 101, 102, 103, 104] and list(df.columns) == ["id", "s"]
    summary = ip.run_line_magic("air_table", path)
    assert summary.rows == 20 and summary.name == path


def test_persistent_workers_follow_a_refreshed_version(vol):
    """The loader's workers outlive the epoch; set_epoch in this process moves them to the new version."""
    path, root = vol
    write_deltalake(root, frame(0, 60))
    ds = UCDataset(path, batch_size=8, refresh=True)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    assert [r["id"] for r in rows_of(loader)] == list(range(60))
    write_deltalake(root, frame(200, 230), mode="overwrite")
    loader.set_epoch(1)
    assert ds.version == 1 and rows_of(loader) == truth(root)
