"""The S3 test harness itself (benchmarks/harness/s3server.py, delayproxy.py): a real server that checks
signatures, serves s3fs, goes away when stopped; a proxy that adds latency and counts requests."""

from __future__ import annotations

import os
import time

import pytest

from benchmarks.harness import s3server
from benchmarks.harness.delayproxy import DelayProxy


def test_wrong_secret_is_refused(s3_server):
    bucket = s3_server.make_bucket()
    bad = s3fs_with(s3_server, secret="not-the-secret")
    with pytest.raises(PermissionError) as info:
        bad.ls(bucket)
    assert "SignatureDoesNotMatch" in repr(info.value.__cause__)


def s3fs_with(server, **override):
    import s3fs

    opts = server.storage_options()
    opts.update(override)
    return s3fs.S3FileSystem(skip_instance_cache=True, **opts)


def test_put_get_list_through_s3fs(s3_server):
    bucket = s3_server.make_bucket()
    fs = s3_server.filesystem()
    data = {f"{bucket}/d/f{i}.bin": os.urandom(1000 + i) for i in range(5)}
    fs.pipe(data)
    listed = fs.find(f"{bucket}/d", detail=True)
    assert sorted(listed) == sorted(data)
    assert {k: v["size"] for k, v in listed.items()} == {k: len(v) for k, v in data.items()}
    assert fs.cat(list(data)) == data
    assert fs.cat_file(f"{bucket}/d/f3.bin", start=10, end=20) == data[f"{bucket}/d/f3.bin"][10:20]


def test_each_test_gets_a_fresh_bucket(s3_server):
    a, b = s3_server.make_bucket(), s3_server.make_bucket()
    assert a != b
    assert s3_server.filesystem().ls(a) == []


def test_the_proxy_adds_latency_and_counts_requests(s3_server):
    bucket = s3_server.make_bucket()
    s3_server.filesystem().pipe(f"{bucket}/x", b"hello")
    delay_ms = 50

    def one_get(endpoint: str) -> float:
        fs = s3fs_with(s3_server, endpoint_url=endpoint)
        fs.cat_file(f"{bucket}/x", start=0)  # (connection and signing set up)
        t0 = time.perf_counter()
        assert fs.cat_file(f"{bucket}/x", start=0) == b"hello"
        return time.perf_counter() - t0

    with DelayProxy(("127.0.0.1", s3_server.port), delay_ms=delay_ms) as proxy:
        slow = one_get(proxy.endpoint)
        counts = proxy.counts()
    # a round trip crosses the proxy twice: at least 2 x the delay added (no upper bound: machines are noisy)
    assert slow >= 2 * delay_ms / 1000
    assert counts.get("GET") == 2 and "HEAD" not in counts, counts
    assert proxy.unparsed == 0


def test_the_proxy_counts_uploads_and_keeps_bytes_intact(s3_server):
    bucket = s3_server.make_bucket()
    payload = os.urandom(300_000)
    with DelayProxy(("127.0.0.1", s3_server.port)) as proxy:
        fs = s3fs_with(s3_server, endpoint_url=proxy.endpoint)
        fs.pipe(f"{bucket}/big", payload)
        assert fs.cat_file(f"{bucket}/big") == payload
        counts = proxy.counts()
    assert counts.get("PUT") == 1, counts
    assert proxy.unparsed == 0


def test_a_stopped_server_is_gone(tmp_path):
    server = s3server.start(tmp_path / "s3")
    fs = server.filesystem(config_kwargs={"connect_timeout": 1, "retries": {"max_attempts": 1}})
    bucket = server.make_bucket()
    fs.pipe(f"{bucket}/a", b"1")
    pid = server.pid
    server.stop()
    assert not server.alive()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    from botocore.exceptions import EndpointConnectionError

    fs.invalidate_cache()
    with pytest.raises(EndpointConnectionError):
        fs.ls(bucket)
