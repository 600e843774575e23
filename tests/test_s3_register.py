"""Registering a volume on object storage checks what it registers, against a real S3 server
(SeaweedFS, signatures checked): one listing before anything is stored; no credentials, a wrong secret,
no permission, an endpoint that is down and a missing bucket are each one line naming the fix, and
leave nothing registered; ``--no-check`` registers offline and says so; endpoint, profile and options
are stored, secrets never are."""

from __future__ import annotations

import json
import os

import pytest
from IPython.core.error import UsageError

from air_magics.errors import (
    AirError,
    RegistryError,
    StorageAccessError,
    StorageCredentialsError,
    StorageUnreachableError,
    VolumeNotFoundError,
)
from air_magics.volumes import VolumeStore
from benchmarks.harness.s3server import free_port

VID = "main.s3.data"


@pytest.fixture
def bucket(s3_server):
    name = s3_server.make_bucket()
    s3_server.admin.pipe({f"{name}/data/a.txt": b"alpha", f"{name}/data/sub/b.txt": b"beta"})
    return name


@pytest.fixture
def no_endpoint_env(s3_env, monkeypatch):
    """The server's key in the environment, its endpoint not: registrations name it (--endpoint)."""
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    return s3_env


def _nothing_registered() -> None:
    assert VolumeStore().registry.load() == {}


def _one_line(exc: BaseException, *words: str) -> str:
    message = str(exc)
    assert "\n" not in message, message
    for w in words:
        assert w in message, (w, message)
    return message


def test_a_good_registration_is_checked_stored_with_its_endpoint_and_listed(ip, no_endpoint_env, bucket, capsys):
    s3 = no_endpoint_env
    ip.run_line_magic("air_volume", f"register {VID} s3://{bucket}/data --endpoint {s3.endpoint}")
    out = capsys.readouterr().out
    assert f"s3://{bucket}/data" in out and s3.endpoint in out and "reachable" in out
    text = VolumeStore().registry.file.read_text()
    stored = json.loads(text)[VID]
    assert stored == {"url": f"s3://{bucket}/data", "endpoint": s3.endpoint}
    assert s3.secret not in text and s3.key not in text  # credentials come from the chain, never from us
    overview = repr(ip.run_line_magic("air_volume", ""))
    assert f"s3://{bucket}/data (endpoint {s3.endpoint})" in overview
    files = {f.path.relpath: f.size for f in VolumeStore().ls(f"/Volumes/{VID.replace('.', '/')}", recursive=True)}
    assert files == {"a.txt": 5, "sub/b.txt": 4}


@pytest.mark.parametrize("how", ["python", "magic"])
def test_no_credentials(how, ip, no_endpoint_env, bucket, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    if how == "python":
        with pytest.raises(StorageCredentialsError) as info:
            VolumeStore().register(VID, f"s3://{bucket}/data", endpoint=no_endpoint_env.endpoint)
        assert isinstance(info.value, AirError) and isinstance(info.value, PermissionError)
    else:
        with pytest.raises(UsageError) as info:
            ip.run_line_magic("air_volume", f"register {VID} s3://{bucket}/data --endpoint {no_endpoint_env.endpoint}")
    _one_line(info.value, f"s3://{bucket}/data", "AWS_ACCESS_KEY_ID", "--profile", "nothing was registered")
    _nothing_registered()


def test_wrong_secret(no_endpoint_env, bucket, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(StorageAccessError) as info:
        VolumeStore().register(VID, f"s3://{bucket}/data", endpoint=no_endpoint_env.endpoint)
    assert isinstance(info.value, PermissionError)
    _one_line(info.value, "SignatureDoesNotMatch", no_endpoint_env.endpoint, "AWS_SECRET_ACCESS_KEY", "nothing was")
    _nothing_registered()


def test_no_permission_to_list(no_endpoint_env, bucket, monkeypatch):
    for k, v in no_endpoint_env.no_list_env().items():
        if k != "AWS_ENDPOINT_URL":
            monkeypatch.setenv(k, v)
    with pytest.raises(StorageAccessError) as info:
        VolumeStore().register(VID, f"s3://{bucket}/data", endpoint=no_endpoint_env.endpoint)
    _one_line(info.value, f"s3://{bucket}/data", "list", "nothing was registered")
    _nothing_registered()


def test_endpoint_unreachable(no_endpoint_env, bucket):
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(StorageUnreachableError) as info:
        VolumeStore().register(VID, f"s3://{bucket}/data", endpoint=closed)
    assert isinstance(info.value, ConnectionError)
    _one_line(info.value, closed, "--endpoint", "--no-check", "nothing was registered")
    _nothing_registered()


def test_endpoint_unreachable_through_the_environment(s3_env, bucket, monkeypatch):
    closed = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", closed)
    with pytest.raises(StorageUnreachableError) as info:
        VolumeStore().register(VID, f"s3://{bucket}/data")
    _one_line(info.value, f"{closed} (from AWS_ENDPOINT_URL)")
    _nothing_registered()


def test_no_such_bucket(no_endpoint_env):
    with pytest.raises(VolumeNotFoundError) as info:
        VolumeStore().register(VID, "s3://no-such-bucket-here/data", endpoint=no_endpoint_env.endpoint)
    assert isinstance(info.value, FileNotFoundError)
    _one_line(info.value, "'no-such-bucket-here' does not exist", "nothing was registered")
    _nothing_registered()


def test_no_check_registers_offline_and_says_so(ip, no_endpoint_env, capsys):
    closed = f"http://127.0.0.1:{free_port()}"
    ip.run_line_magic("air_volume", f"register {VID} s3://anything/data --endpoint {closed} --no-check")
    assert "not checked (--no-check)" in capsys.readouterr().out
    assert VolumeStore().registry.load() == {VID: "s3://anything/data"}


def test_options_are_stored_nested_and_secrets_refused(ip, no_endpoint_env, bucket):
    s3 = no_endpoint_env
    ip.run_line_magic(
        "air_volume",
        f"register {VID} s3://{bucket}/data --endpoint {s3.endpoint} --option config_kwargs.max_pool_connections=16 "
        f"--option client_kwargs.region_name=us-east-1",
    )
    entry = VolumeStore().registry.entry(VID)
    assert entry.options == {
        "config_kwargs": {"max_pool_connections": 16},
        "client_kwargs": {"region_name": "us-east-1"},
    }
    loc = VolumeStore().locate(f"/Volumes/{VID.replace('.', '/')}/a.txt")
    assert loc.fs.cat_file(loc.path) == b"alpha"
    VolumeStore().unregister(VID)
    for bad in ("secret=x", "client_kwargs.aws_secret_access_key=x", "token=abc"):
        with pytest.raises(UsageError, match="secret"):
            ip.run_line_magic("air_volume", f"register {VID} s3://{bucket}/data --option {bad} --no-check")
    with pytest.raises(RegistryError, match="never stored"):
        VolumeStore().register(VID, f"s3://{bucket}/data", options={"key": s3.key}, check=False)
    _nothing_registered()
    with pytest.raises(UsageError, match="--endpoint only applies to `register`"):
        ip.run_line_magic("air_volume", "ls /Volumes --endpoint http://x")


def test_a_profile_signs_and_only_its_name_is_stored(no_endpoint_env, bucket, monkeypatch, tmp_path):
    s3 = no_endpoint_env
    creds = tmp_path / "credentials"
    creds.write_text(f"[airtest]\naws_access_key_id = {s3.key}\naws_secret_access_key = {s3.secret}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    store = VolumeStore()
    info = store.register(VID, f"s3://{bucket}/data", endpoint=s3.endpoint, profile="airtest")
    assert info.endpoint == s3.endpoint
    assert json.loads(store.registry.file.read_text())[VID]["profile"] == "airtest"
    assert s3.secret not in store.registry.file.read_text()
    loc = store.locate(f"/Volumes/{VID.replace('.', '/')}/sub/b.txt")
    assert loc.fs.cat_file(loc.path) == b"beta"
    with pytest.raises(StorageCredentialsError):
        store.register("main.s3.other", f"s3://{bucket}/data", endpoint=s3.endpoint, profile="no-such-profile")
    assert set(store.registry.load()) == {VID}


def test_an_old_registry_of_plain_urls_still_reads(no_endpoint_env, bucket):
    store = VolumeStore()
    store.registry.file.parent.mkdir(parents=True, exist_ok=True)
    store.registry.file.write_text(json.dumps({VID: f"memory://old-{os.getpid()}"}))
    assert store.volume_info(VID).location == f"memory://old-{os.getpid()}"
    assert store.volume_info(VID).endpoint is None
