"""Tables on an S3 volume (a real SeaweedFS server, signatures checked): a Delta table written by
deltalake into the bucket and a plain Parquet folder, read by ``UCDataset`` through the registered
volume (the Delta log by deltalake with the volume's endpoint and the chain's credentials, the data
files through the volume and its cache), at the latest version and at an older one, in DataLoader
workers too; and the one-line refusal when the store refuses the credentials."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from air_magics.data import DataLoader, UCDataset
from air_magics.errors import AirError
from air_magics.volumes import VolumeStore

VOLUME = "/Volumes/main/s3/tables"


def _frame(lo: int, hi: int) -> pa.Table:
    ids = np.arange(lo, hi)
    return pa.table({"id": ids, "x": ids * 0.5})


def _ids(batches) -> list[int]:
    return sorted(int(i) for b in batches for i in (b["id"].tolist() if hasattr(b["id"], "tolist") else b["id"]))


@pytest.fixture
def tables(s3_env):
    """A bucket holding ``delta/`` (version 0: ids 0-999, version 1: + 1000-1499) and ``plain/`` (two
    Parquet files, ids 0-599), registered as ``main.s3.tables``."""
    from deltalake import write_deltalake

    s3 = s3_env
    bucket = s3.make_bucket()
    opts = {
        "AWS_ENDPOINT_URL": s3.endpoint,
        "AWS_ACCESS_KEY_ID": s3.key,
        "AWS_SECRET_ACCESS_KEY": s3.secret,
        "AWS_REGION": s3.region,
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }
    uri = f"s3://{bucket}/delta"
    write_deltalake(uri, _frame(0, 1000), storage_options=opts)
    write_deltalake(uri, _frame(1000, 1500), mode="append", storage_options=opts)
    fs = s3.admin
    for k, (lo, hi) in enumerate(((0, 250), (250, 600))):
        with fs.open(f"{bucket}/plain/part-{k}.parquet", "wb") as f:
            pq.write_table(_frame(lo, hi), f)
    store = VolumeStore()
    store.register("main.s3.tables", f"s3://{bucket}")
    return store


def test_a_delta_table_on_s3_is_read_at_each_version(tables):
    latest = UCDataset(f"{VOLUME}/delta", batch_size=256)
    assert _ids(latest) == list(range(1500))
    first = UCDataset(f"{VOLUME}/delta", batch_size=256, version=0)
    assert _ids(first) == list(range(1000))


def test_a_delta_table_on_s3_through_dataloader_workers(tables):
    ds = UCDataset(f"{VOLUME}/delta", batch_size=100)
    got = _ids(DataLoader(ds, batch_size=None, num_workers=2))
    assert got == list(range(1500))


def test_a_parquet_folder_on_s3_is_read(tables):
    assert _ids(UCDataset(f"{VOLUME}/plain", batch_size=128)) == list(range(600))


def test_a_refused_credential_is_one_line(tables, s3_env, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
    with pytest.raises(AirError) as info:
        UCDataset(f"{VOLUME}/delta", batch_size=256)
    assert "\n" not in str(info.value)


def test_read_table_and_the_magic_read_tables_on_s3_without_spark(tables, ip):
    from air_magics import tables as air_tables

    frame = air_tables.read_table(f"{VOLUME}/delta", to="pandas")
    assert sorted(frame["id"].tolist()) == list(range(1500))
    old = air_tables.read_table(f"{VOLUME}/delta", to="pandas", version=0)
    assert len(old) == 1000
    plain = ip.run_line_magic("air_table", f"{VOLUME}/plain --as pandas --where 'id < 10'")
    assert sorted(plain["id"].tolist()) == list(range(10))


def test_volumes_urls_reach_an_s3_volume_for_real_clients(tables):
    """pandas and pyarrow through ``volumes://`` (the fsspec protocol) on the S3 volume: a listing,
    a Parquet read, and a write that lands in the bucket."""
    import fsspec
    import pandas as pd

    fs = fsspec.filesystem("volumes")
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls("volumes://main/s3/tables/plain", detail=False)) == [
        "part-0.parquet",
        "part-1.parquet",
    ]
    frame = pd.read_parquet("volumes://main/s3/tables/plain/part-1.parquet")
    assert frame["id"].tolist() == list(range(250, 600))
    pd.DataFrame({"a": [1, 2]}).to_csv("volumes://main/s3/tables/out/a.csv", index=False)
    assert pd.read_csv("volumes://main/s3/tables/out/a.csv")["a"].tolist() == [1, 2]
    loc = tables.locate("/Volumes/main/s3/tables/out/a.csv")
    assert loc.fs.cat_file(loc.path) == b"a\n1\n2\n"


def test_torchrun_ranks_read_one_s3_volume_each_its_share(tables, ip):
    """``%%air_torchrun`` ranks resolve the kernel's S3 volume (the registry under the same AIR_HOME,
    the credentials through the environment they inherit) and read disjoint shares that cover it."""
    cell = (
        "import torch.distributed as dist\n"
        "from air_magics.data import UCDataset\n"
        "dist.init_process_group('gloo')\n"
        "ds = UCDataset('/Volumes/main/s3/tables/delta', batch_size=100)\n"
        "mine = sorted(int(i) for b in ds for i in b['id'].tolist())\n"
        "got = [None] * dist.get_world_size()\n"
        "dist.all_gather_object(got, mine)\n"
        "dist.destroy_process_group()\n"
    )
    run = ip.run_cell_magic("air_torchrun", "--nproc-per-node 2 --return got", cell)
    shares = run.value
    assert len(shares) == 2 and all(shares) and not set(shares[0]) & set(shares[1])
    assert sorted(shares[0] + shares[1]) == list(range(1500))


def test_the_sidebars_volume_tree_lists_an_s3_volume(tables):
    """The REST API's functions (what the sidebar's tree asks): the volume is listed, and a folder of it
    pages with sizes."""
    from air_magics.server import queries

    assert "/Volumes/main/s3/tables" in str(queries.list_volumes())
    page = queries.list_folder("/Volumes/main/s3/tables/plain", limit=1)
    assert page["total"] == 2 and page["next_offset"] == 1
    first = page["entries"][0]
    assert first["name"] == "part-0.parquet" and not first["is_dir"] and first["size"] > 0
    top = queries.list_folder("/Volumes/main/s3/tables")
    assert {e["name"] for e in top["entries"] if e["is_dir"]} >= {"delta", "plain"}
