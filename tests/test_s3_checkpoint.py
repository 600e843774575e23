"""Checkpoints on a volume registered to ``s3://`` on a real S3 server (SeaweedFS, signatures checked),
every request counted by a proxy in front of it: each file written once under its final name (no
CopyObject, no delete during a save), the step published by ``_COMMITTED`` written last, at most two
requests per object a save leaves, no HEAD on a restore; a save SIGKILLed while it uploads (or once its data
is there) leaves the previous step loadable and ``latest`` naming it; pruning deletes the
marker first; a refused credential is the one-line ``StorageAccessError``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from air_magics.errors import AirError, StorageAccessError
from air_magics.volumes import VolumeStore
from benchmarks.harness.delayproxy import DelayProxy

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "/Volumes/main/s3/ck/run"


@pytest.fixture
def proxy(s3_server):
    with DelayProxy(("127.0.0.1", s3_server.port)) as p:
        yield p


@pytest.fixture
def bucket(s3_env, proxy, monkeypatch):
    """``main.s3.ck`` registered to a fresh bucket, reached through the counting proxy."""
    name = s3_env.make_bucket()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    VolumeStore().register("main.s3.ck", f"s3://{name}/ck")
    return name


def _model(seed: int, width: int = 256) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)])


def _same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _keys(s3_server, bucket: str, under: str) -> list[str]:
    """The objects whose keys start with ``ck/run/<under>``, as the rest of their keys (one listing)."""
    base = f"{bucket}/ck/run"
    found = s3_server.admin.find(base, prefix=under, detail=True)
    return sorted(k[len(base) + 1 + len(under) :] for k, i in found.items() if i["type"] != "directory")


def test_save_and_restore_roundtrip_with_few_requests_and_no_copies(s3_server, bucket, proxy):
    from air_magics.data import CheckpointManager

    mgr = CheckpointManager(FOLDER, keep=3, show=False)
    for step in (1, 2):
        model = _model(step, width=512)
        proxy.reset()
        mgr.save(step, model=model)
        mgr.wait()  # (its pruning too: part of the save's requests)
        ops = dict(proxy.operations)
        left = _keys(s3_server, bucket, f"step_{step}/")
        names = {k.rsplit("/", 1)[-1] for k in left}
        assert {".metadata", "_COMMITTED"} <= names and ".checksums.json" not in names  # (the marker has them)
        objects = len(left) + 1  # the step's files and `latest`
        assert sum(ops.values()) <= 2 * objects, ops
        for op in ("CopyObject", "DeleteObject", "DeleteObjects", "HeadObject", "HeadBucket"):
            assert op not in ops, ops
        puts = [p for op, p in proxy.op_log if op == "PutObject"]
        assert len(puts) == len(set(puts)) == objects  # each object once, under its final name
        assert not [p for p in puts if ".pending" in p]
        assert puts[-2].endswith(f"/step_{step}/_COMMITTED") and puts[-1].endswith("/run/latest")
    assert mgr.steps() == [1, 2] and mgr.latest() == 2
    assert s3_server.admin.cat_file(f"{bucket}/ck/run/latest").decode().strip() == "step_2"

    fresh = _model(0, width=512)
    proxy.reset()
    assert CheckpointManager(FOLDER, show=False).restore(model=fresh) == 2
    assert _same(fresh, _model(2, width=512))
    ops = dict(proxy.operations)
    assert "HeadObject" not in ops and "HeadBucket" not in ops, ops
    assert set(ops) <= {"GetObject", "ListObjectsV2"}, ops
    fresh = _model(0, width=512)
    assert CheckpointManager(FOLDER, show=False).restore(model=fresh, step=1) == 1
    assert _same(fresh, _model(1, width=512))


def test_large_files_go_up_in_parallel_parts_and_come_back_in_ranges(s3_server, bucket, proxy):
    from air_magics.data import CheckpointManager

    model = torch.nn.Linear(4096, 4096)  # one 64 MiB tensor: one file of 4 parts
    mgr = CheckpointManager(FOLDER, show=False)
    proxy.reset()
    mgr.save(1, model=model)
    mgr.wait()
    ops = dict(proxy.operations)
    assert ops.get("CreateMultipartUpload") == ops.get("CompleteMultipartUpload") == 1, ops
    assert ops.get("UploadPart", 0) >= 4 and "CopyObject" not in ops
    proxy.reset()
    back = torch.nn.Linear(4096, 4096)
    torch.nn.init.zeros_(back.weight)
    assert mgr.restore(model=back) == 1
    assert torch.equal(back.weight, model.weight) and torch.equal(back.bias, model.bias)
    big = [p for op, p in proxy.op_log if op == "GetObject" and p.endswith(".distcp")]
    assert len(big) >= 4 and "HeadObject" not in proxy.operations  # ranged GETs of the one large file


def test_writer_and_reader_roundtrip(s3_server, bucket, proxy):
    import torch.distributed.checkpoint as dcp

    from air_magics.data import UCVolumeReader, UCVolumeWriter

    state = {"w": torch.arange(1 << 20, dtype=torch.float32), "b": torch.ones(7), "n": 3}
    proxy.reset()
    dcp.save(state, storage_writer=UCVolumeWriter(f"{FOLDER}/plain"))
    ops = dict(proxy.operations)
    assert "CopyObject" not in ops and "DeleteObjects" not in ops and "DeleteObject" not in ops, ops
    metadata_put = [i for i, (op, p) in enumerate(proxy.op_log) if op == "PutObject" and p.endswith("/.metadata")]
    assert metadata_put == [max(i for i, (op, _) in enumerate(proxy.op_log) if op == "PutObject")]  # .metadata last
    back = {"w": torch.zeros(1 << 20), "b": torch.zeros(7), "n": 0}
    reader = UCVolumeReader(f"{FOLDER}/plain")
    dcp.load(back, storage_reader=reader)
    assert torch.equal(back["w"], state["w"]) and torch.equal(back["b"], state["b"]) and back["n"] == 3
    assert reader.verify()  # every file against its checksum
    with pytest.raises(BaseException) as info:  # (torch wraps the writer's error in a BaseException)
        dcp.save(state, storage_writer=UCVolumeWriter(f"{FOLDER}/plain"))
    assert "already holds a checkpoint" in str(getattr(info.value, "failures", info.value))
    # a changed byte on the store is a corrupt file, named
    name = next(k for k in _keys(s3_server, bucket, "plain/") if k.endswith(".distcp"))
    key = f"{bucket}/ck/run/plain/{name}"
    data = bytearray(s3_server.admin.cat_file(key))
    data[-1] ^= 0xFF
    s3_server.admin.pipe_file(key, bytes(data))
    with pytest.raises(AirError, match=name):
        UCVolumeReader(f"{FOLDER}/plain").verify()


_KILLED_SAVE = textwrap.dedent(
    """
    import sys, torch
    sys.path.insert(0, {root!r})
    from air_magics.data import CheckpointManager
    torch.manual_seed(2)
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)])
    print("saving", flush=True)
    CheckpointManager({folder!r}, show=False).save(2, model=model)
    print("saved", flush=True)
    """
)


def _wait_for(proxy: DelayProxy, suffix: str, proc: subprocess.Popen) -> None:
    """Until the proxy has carried a PUT of an object whose path ends with *suffix* (or the process ended)."""
    while proc.poll() is None:
        with proxy.lock:
            if any(op in ("PutObject", "UploadPart") and p.endswith(suffix) for op, p in proxy.op_log):
                return
        time.sleep(0.005)
    pytest.fail(f"the saving process ended before a PUT of *{suffix}: {proc.communicate()}")


# killed while its data goes up, or once every data file is there and its last files are in flight
@pytest.mark.parametrize("kill_at", [".distcp", "/.metadata"])
def test_a_save_killed_midway_leaves_the_previous_step_loadable(s3_server, s3_env, bucket, proxy, kill_at):
    from air_magics.data import CheckpointManager

    first = _model(1)
    mgr = CheckpointManager(FOLDER, show=False)
    mgr.save(1, model=first)
    mgr.wait()
    # the child goes through a slow proxy (50 ms each way): each request in flight long enough to be killed in
    # (the marker is sent only after the responses to the last files came back, 100 ms after they were seen)
    with DelayProxy(("127.0.0.1", s3_server.port), delay_ms=50) as slow:
        env = {**os.environ, "AWS_ENDPOINT_URL": slow.endpoint}
        proc = subprocess.Popen(
            [sys.executable, "-c", _KILLED_SAVE.format(root=str(ROOT), folder=FOLDER)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for(slow, kill_at, proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == -signal.SIGKILL
    if kill_at != ".distcp":
        assert len(_keys(s3_server, bucket, "step_2/")) >= 8, "the killed save had written its data files"
    assert "_COMMITTED" not in [k.rsplit("/", 1)[-1] for k in _keys(s3_server, bucket, "step_2/")]
    assert s3_server.admin.cat_file(f"{bucket}/ck/run/latest").decode().strip() == "step_1"
    mgr = CheckpointManager(FOLDER, show=False)
    assert mgr.latest() == 1 and mgr.steps() == [1]
    back = _model(0)
    assert mgr.restore(model=back) == 1 and _same(back, first)
    with pytest.raises(AirError, match="missing or incomplete"):
        mgr.load({"x": torch.zeros(1)}, step=2)
    # a later save of the same step clears the leftover and commits
    second = _model(3)
    mgr.save(2, model=second)
    mgr.wait()
    assert mgr.steps() == [1, 2] and mgr.latest() == 2
    back = _model(0)
    assert mgr.restore(model=back) == 2 and _same(back, second)


def test_cleanup_removes_an_uncommitted_step(s3_server, bucket):
    from air_magics.data import CheckpointManager

    mgr = CheckpointManager(FOLDER, show=False)
    mgr.save(1, model=_model(1))
    mgr.wait()
    s3_server.admin.pipe(f"{bucket}/ck/run/step_7/__0_0.distcp", b"half a save")
    assert mgr.steps() == [1]
    assert mgr.cleanup(older_than=3600) == []  # just written: it may be another process's save in progress
    assert mgr.cleanup() == ["step_7"]
    assert _keys(s3_server, bucket, "step_7/") == [] and mgr.steps() == [1]


def test_pruning_keeps_n_and_deletes_the_marker_first(s3_server, bucket, proxy, monkeypatch):
    from air_magics.checkpoints import pruning
    from air_magics.data import CheckpointManager

    mgr = CheckpointManager(FOLDER, keep=2, show=False)
    for step in (1, 2, 3):
        mgr.save(step, model=_model(step))
        mgr.wait()
    assert mgr.steps() == [2, 3] and _keys(s3_server, bucket, "step_1/") == []
    proxy.reset()
    mgr.save(4, model=_model(4))
    mgr.wait()
    assert proxy.operations["DeleteObjects"] == 2 and "DeleteObject" not in proxy.operations  # marker, then the rest
    assert proxy.operations["ListObjectsV2"] == 2  # the step's folder, the pruning's scan (its files: no more)
    assert mgr.steps() == [3, 4] and _keys(s3_server, bucket, "step_2/") == []

    seen: list[list[str]] = []

    def stop_after_uncommit(name: str) -> None:  # where a kill lands between the two deletes
        seen.append(_keys(s3_server, bucket, f"{name}/"))
        raise RuntimeError("killed")

    monkeypatch.setattr(pruning, "_PRUNE_HOOK", stop_after_uncommit)
    mgr.save(5, model=_model(5))
    mgr.wait()
    assert seen and seen[0] and "_COMMITTED" not in [k.rsplit("/", 1)[-1] for k in seen[0]]
    assert mgr.steps() == [4, 5]  # the half-pruned step is not listed
    monkeypatch.setattr(pruning, "_PRUNE_HOOK", None)
    assert mgr.cleanup() == ["step_3"] and _keys(s3_server, bucket, "step_3/") == []
    back = _model(0)
    assert mgr.restore(model=back) == 5 and _same(back, _model(5))


def test_a_refused_credential_is_one_line(s3_server, bucket, monkeypatch):
    from air_magics.data import CheckpointManager

    mgr = CheckpointManager(FOLDER, show=False)
    mgr.save(1, model=_model(1))
    mgr.wait()
    for k, v in s3_server.list_only_env().items():  # may list the bucket, not read or write it
        if k != "AWS_ENDPOINT_URL":
            monkeypatch.setenv(k, v)
    refused = CheckpointManager(FOLDER, show=False)
    for call in (lambda: refused.save(2, model=_model(2)), lambda: refused.restore(model=_model(0), step=1)):
        with pytest.raises(StorageAccessError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and isinstance(info.value, PermissionError), message
        assert "s3://" in message and "AWS_ACCESS_KEY_ID" in message, message
