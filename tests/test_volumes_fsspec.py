"""``volumes://`` as an fsspec filesystem: real fsspec, pandas, pyarrow, datasets and torch DCP against an
embedded volume and a ``memory://``-registered one; traversal and symlink escapes refused as the store
refuses them; local writes atomic (temp name + rename)."""

from __future__ import annotations

import os
import uuid
import warnings

import fsspec
import pytest

from air_magics.errors import AirError, ConfinementError, VolumePathError
from air_magics.volumes import VolumeStore
from air_magics.volumes.fsspec_fs import VolumesFileSystem


@pytest.fixture(params=["embedded", "memory"])
def base(request, air_home):
    """A volume URL: an embedded volume, or one registered to a fresh ``memory://`` folder."""
    store = VolumeStore()
    if request.param == "embedded":
        store.create("main.demo.images")
        return "volumes://main/demo/images"
    store.register("ext.mem.v", f"memory://x-{uuid.uuid4().hex}")
    return "volumes://ext/mem/v"


def test_protocol_is_registered_through_the_entry_point():
    assert fsspec.get_filesystem_class("volumes") is VolumesFileSystem
    fs, path = fsspec.core.url_to_fs("volumes://main/demo/images/x.jpg")
    assert isinstance(fs, VolumesFileSystem) and path == "main/demo/images/x.jpg"


def test_fsspec_open_read_write_ls_info_rm(base):
    with fsspec.open(f"{base}/a/b.txt", "w") as f:
        f.write("hello")
    with fsspec.open(f"{base}/a/b.txt", "r") as f:
        assert f.read() == "hello"
    fs = fsspec.filesystem("volumes")
    name = base.split("://")[1]
    assert fs.ls(base, detail=False) == [f"{name}/a"]
    assert fs.info(f"{base}/a/b.txt")["size"] == 5 and fs.isdir(f"{base}/a") and fs.isfile(f"{base}/a/b.txt")
    fs.pipe_file(f"{base}/c.bin", b"\x00\x01")
    assert fs.cat_file(f"{base}/c.bin") == b"\x00\x01" and fs.cat_file(f"{base}/c.bin", start=1) == b"\x01"
    fs.makedirs(f"{base}/d/e", exist_ok=True)
    assert fs.isdir(f"{base}/d/e")
    fs.mv(f"{base}/c.bin", f"{base}/d/c.bin")
    assert not fs.exists(f"{base}/c.bin") and fs.cat_file(f"{base}/d/c.bin") == b"\x00\x01"
    fs.rm(f"{base}/d", recursive=True)
    assert not fs.exists(f"{base}/d")
    with pytest.raises(FileNotFoundError):
        fs.info(f"{base}/missing")
    assert "main" in fs.ls("volumes://", detail=False) or "ext" in fs.ls("volumes://", detail=False)


def test_pandas_and_pyarrow_dataset(base):
    import pandas as pd
    import pyarrow.dataset as ds
    from pyarrow.fs import FSSpecHandler, PyFileSystem

    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    df.to_parquet(f"{base}/t/part-0.parquet")
    df.to_parquet(f"{base}/t/part-1.parquet")
    assert pd.read_parquet(f"{base}/t/part-0.parquet").equals(df)
    fs = VolumesFileSystem()
    path = base.split("://")[1] + "/t"
    assert ds.dataset(path, filesystem=fs, format="parquet").to_table().num_rows == 6
    pafs = PyFileSystem(FSSpecHandler(fs))
    assert ds.dataset(path, filesystem=pafs, format="parquet").to_table().column("a").to_pylist() == [1, 2, 3] * 2


def test_datasets_load_dataset(base, tmp_path, monkeypatch):
    import pandas as pd

    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)  # a volumes:// URL never reaches the network
    pd.DataFrame({"a": [1, 2, 3]}).to_parquet(f"{base}/t/p.parquet")
    d = datasets.load_dataset("parquet", data_files=f"{base}/t/p.parquet", split="train", cache_dir=str(tmp_path))
    assert d.num_rows == 3 and sum(d["a"]) == 6


def test_torch_dcp_fsspec_round_trip(base):
    torch = pytest.importorskip("torch")
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader, FsspecWriter

    sd = {"w": torch.arange(6.0), "b": torch.ones(2, 3)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # single-process DCP warns that no process group exists
        dcp.save(sd, storage_writer=FsspecWriter(f"{base}/ckpt"))
        out = {"w": torch.zeros(6), "b": torch.zeros(2, 3)}
        dcp.load(out, storage_reader=FsspecReader(f"{base}/ckpt"))
    assert torch.equal(out["w"], sd["w"]) and torch.equal(out["b"], sd["b"])
    assert ".metadata" in [n.rsplit("/", 1)[-1] for n in fsspec.filesystem("volumes").ls(f"{base}/ckpt", detail=False)]


@pytest.mark.parametrize(
    "url", ["volumes://main/demo/images/../../x", "volumes://main/demo/images/a/../b", "volumes://main/demo"]
)
def test_traversal_refused(base, url):
    fs = VolumesFileSystem()
    with pytest.raises(VolumePathError, match="volume"):
        fs.open(url, "wb")
    with pytest.raises((VolumePathError, FileNotFoundError)):
        fs.cat_file(url)


def test_symlink_out_of_the_volume_refused(air_home, tmp_path):
    vol = VolumeStore().create("main.demo.images").location
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "s.txt").write_text("secret")
    os.symlink(secret, os.path.join(vol, "link"))
    os.symlink(secret / "s.txt", os.path.join(vol, "f.txt"))
    fs = VolumesFileSystem()
    for url in ("volumes://main/demo/images/link/s.txt", "volumes://main/demo/images/f.txt"):
        with pytest.raises(AirError, match="outside") as exc:
            fs.cat_file(url)
        assert isinstance(exc.value, (VolumePathError, ConfinementError))
    with pytest.raises(AirError, match="outside"):
        fs.pipe_file("volumes://main/demo/images/link/new.txt", b"x")
    assert sorted(os.listdir(secret)) == ["s.txt"] and (secret / "s.txt").read_text() == "secret"


def test_local_write_is_atomic(air_home):
    vol = VolumeStore().create("main.demo.images").location
    fs = VolumesFileSystem()
    fs.pipe_file("volumes://main/demo/images/m.json", b"old")
    f = fs.open("volumes://main/demo/images/m.json", "wb")
    f.write(b"new, half written")
    f.flush()
    assert open(os.path.join(vol, "m.json"), "rb").read() == b"old"  # readers see the old file until close
    assert any(".air-tmp-" in n for n in os.listdir(vol))
    assert fs.ls("volumes://main/demo/images", detail=False) == ["main/demo/images/m.json"]  # temp never listed
    f.close()
    assert open(os.path.join(vol, "m.json"), "rb").read() == b"new, half written"
    with pytest.raises(RuntimeError), fs.open("volumes://main/demo/images/m.json", "wb") as g:
        g.write(b"broken")
        raise RuntimeError("writer failed")
    assert open(os.path.join(vol, "m.json"), "rb").read() == b"new, half written"
    assert os.listdir(vol) == ["m.json"]  # the failed write left no temp file
    with (
        pytest.raises(FileExistsError, match="already exists"),
        fs.open("volumes://main/demo/images/m.json", "xb") as g,
    ):
        g.write(b"x")
    assert os.listdir(vol) == ["m.json"]
    with fs.open("volumes://main/demo/images/m.json", "ab") as g:  # an append is in place (no rename possible)
        g.write(b"!")
    assert fs.cat_file("volumes://main/demo/images/m.json") == b"new, half written!"


def test_missing_volume_and_volume_root_refused(air_home):
    fs = VolumesFileSystem()
    with pytest.raises(FileNotFoundError, match="air_volume create"):
        fs.pipe_file("volumes://no/such/vol/x", b"x")
    VolumeStore().create("main.demo.images")
    with pytest.raises(VolumePathError, match="volume root"):
        fs.rm("volumes://main/demo/images", recursive=True)
