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


def _hf_cache(tmp_path, monkeypatch):
    """Hugging Face caches under the test's tmp path; offline mode off (a volumes:// URL never reaches the network)."""
    import datasets

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    return str(tmp_path / "hf-cache")


def test_datasets_load_dataset(base, tmp_path, monkeypatch):
    import pandas as pd

    datasets = pytest.importorskip("datasets")
    cache = _hf_cache(tmp_path, monkeypatch)
    pd.DataFrame({"a": [1, 2, 3]}).to_parquet(f"{base}/t/p.parquet")
    d = datasets.load_dataset("parquet", data_files=f"{base}/t/p.parquet", split="train", cache_dir=cache)
    assert d.num_rows == 3 and sum(d["a"]) == 6


def test_datasets_load_dataset_data_dir_and_glob(base, tmp_path, monkeypatch):
    """Issue 18.5: datasets read ``data_dir`` as a local path (``<cwd>/volumes:/main/...``, EmptyDatasetError)."""
    import pandas as pd

    datasets = pytest.importorskip("datasets")
    cache = _hf_cache(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    folder = f"{base}/exports/samples"
    pd.DataFrame({"a": [1, 2, 3]}).to_parquet(f"{folder}/part-00000.parquet")
    pd.DataFrame({"a": [4]}).to_parquet(f"{folder}/part-00001.parquet")
    for kw in ({"data_dir": folder}, {"data_dir": folder + "/"}, {"data_files": f"{folder}/*.parquet"}):
        d = datasets.load_dataset("parquet", split="train", cache_dir=cache, **kw)
        assert sorted(d["a"]) == [1, 2, 3, 4], kw
    d = datasets.load_dataset(
        "parquet", data_dir=folder, data_files="part-00001.parquet", split="train", cache_dir=cache
    )
    assert d["a"] == [4]  # data_files relative to a volumes:// data_dir are taken inside it
    pd.DataFrame({"a": [9]}).to_parquet(f"{base}/exports/split/test-00000-of-00001.parquet")
    pd.DataFrame({"a": [8]}).to_parquet(f"{base}/exports/split/train-00000-of-00001.parquet")
    dd = datasets.load_dataset("parquet", data_dir=f"{base}/exports/split", cache_dir=cache)
    assert dd["train"]["a"] == [8] and dd["test"]["a"] == [9]  # datasets' own split patterns apply
    assert not os.path.exists(tmp_path / "volumes:")
    with pytest.raises(FileNotFoundError, match=r"volumes://.*/exports/nope does not exist; list its folder"):
        datasets.load_dataset("parquet", data_dir=f"{base}/exports/nope", cache_dir=cache)


def test_datasets_data_dir_in_a_fresh_process(air_home, tmp_path):
    """Importing air_magics before datasets is enough: datasets is patched when it is first imported."""
    import subprocess
    import sys

    import pandas as pd

    pytest.importorskip("datasets")
    VolumeStore().create("main.me.raw")
    pd.DataFrame({"a": [1, 2]}).to_parquet("volumes://main/me/raw/exports/samples/part-0.parquet")
    code = (
        "import sys, air_magics\n"
        "assert 'datasets' not in sys.modules\n"
        "import datasets\n"
        "datasets.config.HF_HUB_OFFLINE = False\n"
        "d = datasets.load_dataset('parquet', data_dir='volumes://main/me/raw/exports/samples', split='train',"
        f" cache_dir={str(tmp_path / 'hf-cache')!r})\n"
        "print('rows', d.num_rows)\n"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "rows 2" in out.stdout, out.stderr[-2000:]


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


def test_not_found_errors_name_the_url_and_the_fix(air_home, caplog):
    """Issue 18.5: a bare ``FileNotFoundError: main/me/nosuchvol/df.parquet`` said neither where nor what to do."""
    import pandas as pd

    store = VolumeStore()
    store.create("main.me.raw")
    store.register("main.me.mem", f"memory://x-{uuid.uuid4().hex}")
    fs = VolumesFileSystem()
    missing_volume = [
        lambda: fs.cat_file("volumes://main/me/nosuchvol/df.parquet"),
        lambda: fs.open("volumes://main/me/nosuchvol/df.parquet", "rb"),
        lambda: fs.info("volumes://main/me/nosuchvol/df.parquet"),
        lambda: fs.ls("volumes://main/me/nosuchvol"),
        lambda: fs.pipe_file("volumes://main/me/nosuchvol/df.parquet", b"x"),
        lambda: fsspec.open("volumes://main/me/nosuchvol/df.parquet", "rb").open(),
    ]
    for call in missing_volume:
        with pytest.raises(FileNotFoundError) as exc:
            call()
        msg = str(exc.value)
        assert isinstance(exc.value, AirError) and "\n" not in msg
        assert msg.startswith("volumes://main/me/nosuchvol") and "'main.me.nosuchvol' does not exist" in msg
        assert "main.me.raw" in msg and "main.me.mem" in msg and "%air_volume create main.me.nosuchvol" in msg
    for vol in ("raw", "mem"):
        url, other = f"volumes://main/me/{vol}/sub/nope.parquet", f"volumes://main/me/{vol}/x"
        for meth, args in (
            ("cat_file", (url,)),
            ("open", (url, "rb")),
            ("info", (url,)),
            ("ls", (url,)),
            ("rm", (url,)),
            ("mv", (url, other)),
            ("cp_file", (url, other)),
        ):
            with pytest.raises(FileNotFoundError) as exc:
                getattr(fs, meth)(*args)
            assert isinstance(exc.value, AirError)
            assert str(exc.value) == (
                f"{url} does not exist; list its folder with fs.ls('volumes://main/me/{vol}/sub') "
                f"or `%air_volume ls /Volumes/main/me/{vol}/sub`"
            )
    # pyarrow (pd.read_parquet) swallows info()'s error and raises its own bare one: the fix is logged
    caplog.set_level("WARNING", logger="air_magics")
    for _ in range(2):
        with pytest.raises(FileNotFoundError):
            pd.read_parquet("volumes://main/me/nosuchvol2/df.parquet")
    said = [r.getMessage() for r in caplog.records if "nosuchvol2" in r.getMessage()]
    assert len(said) == 1 and "%air_volume create main.me.nosuchvol2" in said[0]


def _tree(fs, url):
    """{relative path: bytes} of every file under *url*."""
    root = fs._strip_protocol(url)
    return {p[len(root) + 1 :]: fs.cat_file(p) for p in fs.find(url)}


def test_copy_and_move_a_folder_recursively(base, air_home):
    """Issue 19.13: copy/mv of a folder with recursive=True raised IsADirectoryError and copied nothing."""
    fs = VolumesFileSystem()
    want = {"a.txt": b"a", "sub/b.txt": b"b", "sub/deep/c.txt": b"c"}
    for rel, data in want.items():
        fs.pipe_file(f"{base}/src/{rel}", data)
    fs.copy(f"{base}/src", f"{base}/copy", recursive=True)
    assert _tree(fs, f"{base}/copy") == want and _tree(fs, f"{base}/src") == want
    fs.makedirs(f"{base}/existing", exist_ok=True)
    fs.copy(f"{base}/src", f"{base}/existing", recursive=True)  # into an existing folder: under its own name
    assert _tree(fs, f"{base}/existing/src") == want
    fs.mv(f"{base}/copy", f"{base}/moved", recursive=True)
    assert _tree(fs, f"{base}/moved") == want and not fs.exists(f"{base}/copy")
    fs.makedirs(f"{base}/into", exist_ok=True)
    fs.mv(f"{base}/moved", f"{base}/into", recursive=True)
    assert _tree(fs, f"{base}/into/moved") == want and not fs.exists(f"{base}/moved")
    fs.mv(f"{base}/into/moved/a.txt", f"{base}/into")  # a file into a folder, too
    assert fs.cat_file(f"{base}/into/a.txt") == b"a"
    fs.mv(f"{base}/into/a.txt", f"{base}/new/")  # a trailing slash: into that folder, made if missing
    assert fs.cat_file(f"{base}/new/a.txt") == b"a"
    # across volumes (embedded <-> memory): copy then remove
    other = "volumes://main/demo/other" if "ext/mem" in base else "volumes://ext/mem/other"
    if "ext/mem" in base:
        VolumeStore().create("main.demo.other")
    else:
        VolumeStore().register("ext.mem.other", f"memory://o-{uuid.uuid4().hex}")
    fs.mv(f"{base}/src", f"{other}/src", recursive=True)
    assert _tree(fs, f"{other}/src") == want and not fs.exists(f"{base}/src")


def test_long_file_names(base):
    """Issue 19.12: a legal 244-character name failed (temp name ``.<name>.air-tmp-<pid>-<tid>`` > 255 bytes)."""
    fs = VolumesFileSystem()
    name = "n" * 240 + ".bin"
    assert len(name) == 244
    fs.pipe_file(f"{base}/{name}", b"piped")
    assert fs.cat_file(f"{base}/{name}") == b"piped"
    with fs.open(f"{base}/d/{name}", "wb") as f:
        f.write(b"streamed")
    fs.cp_file(f"{base}/d/{name}", f"{base}/e/{name}")
    fs.mv(f"{base}/e/{name}", f"{base}/f/{name}")
    assert fs.cat_file(f"{base}/f/{name}") == b"streamed"
    assert sorted(n.rsplit("/", 1)[-1] for n in fs.find(base)) == [name] * 3
    if base == "volumes://main/demo/images":  # nothing left beside them on disk either
        vol = VolumeStore().volume_info("main.demo.images").location
        assert sorted(n for _, _, files in os.walk(vol) for n in files) == [name] * 3
