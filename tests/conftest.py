"""Shared fixtures: an isolated AIR_HOME per test, real FUSE volumes (benchmarks/harness/fusevol.py), a real
S3 server (``s3_server``: benchmarks/harness/s3server.py), and the run's one embedded Spark Connect server
(``spark_server``/``shared_spark``) plus one remote one."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # plain `pytest` puts only tests/ on the path; the volume tool lives in benchmarks/
    sys.path.insert(0, str(REPO))

from benchmarks.harness import fusevol, s3server  # noqa: E402


def pytest_configure(config):
    """The cache's free-disk reserve is 16 MiB for the whole run (this process, every server, kernel
    and worker it starts), not the 1 GiB default: a test's outcome must not hang on how full the
    host's disk is (a CI host with 0.9 GiB free refused every overflow file, and a server's cache
    evicted an idle file before the clear its test was counting). The tests of the reserve itself
    pass ``reserve=`` or set ``AIR_CACHE_RESERVE``.

    Ctrl-C reaches the tests' child processes even when pytest inherited SIGINT as ignored (a shell
    runs a background job so): the children (a Jupyter server stopped with SIGINT, a copy interrupted
    by one) would inherit the ignore and only end when killed after a timeout or run to completion."""
    import signal

    os.environ["AIR_CACHE_RESERVE"] = "16MiB"
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_SPARK_FIXTURES = frozenset({"spark_server", "shared_spark", "remote_spark"})


SHARED_SPARK = pytest.mark.xdist_group("spark")  # for a test that reaches the shared server without a fixture


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test``: ``-n 3 --dist loadgroup``) every test that uses the run's
    shared Spark servers (a Spark fixture, or :data:`SHARED_SPARK` where a kernel or a script of the
    test reaches them) runs on one worker: the run starts one embedded server (:func:`spark_server`)
    and one remote one, as a run without workers does, not one per worker (a JVM start costs 15-60 s
    of these 2 cores). Tests that start servers on stores of their own run anywhere."""
    for item in items:
        if _SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(SHARED_SPARK)
        elif "uc_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("uc"))  # one worker, one Unity Catalog JVM per run


@pytest.fixture(autouse=True)
def air_home(tmp_path, monkeypatch):
    """Every test gets its own AIR_HOME; no test sees a real /Volumes or the user's ~/.air."""
    from air_magics.volumes import detect

    home = tmp_path / "air_home"
    monkeypatch.setenv("AIR_HOME", str(home))
    monkeypatch.delenv("AIR_VOLUMES_ROOT", raising=False)
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "no-such-mount"))
    # a passed test's tmp_path is removed, and the next test of the same name on this worker gets the
    # same path again: the mount probe's answer for it (cached per settings) is not this test's
    detect.forget()
    return home


def fuse_unavailable() -> str | None:
    """Why FUSE volume tests cannot run here (no /dev/fuse, no fusermount3), or None."""
    return fusevol.unavailable()


@pytest.fixture(scope="session")
def slowfs():
    """The project's FUSE volume tool (``fusevol``: ``slowfs.mounted(backing, mnt, op_latency_ms=5, ...)``);
    skips where FUSE is unavailable."""
    reason = fuse_unavailable()
    if reason:
        pytest.skip(reason)
    return fusevol


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server (SeaweedFS ``weed mini`` on 127.0.0.1, signatures checked) for the session: once
    per xdist worker (about 2 s to start). Its ``endpoint``, ``key``, ``secret``; ``make_bucket()`` a
    fresh bucket per test; ``env()`` the ``AWS_*`` variables that reach it (set them with monkeypatch,
    or use the ``s3_env`` fixture); ``filesystem()`` an s3fs instance of the test's own."""
    server = s3server.start(tmp_path_factory.mktemp("s3server"))
    try:
        yield server
    finally:
        server.stop()


UC_BUCKET = "uc-vended"  # the bucket the run's Unity Catalog server vends the S3 server's keys for
UC_STARTERS: list[list] = []  # what each of the uc_server fixture's two starting processes got
_UC_START = (
    "import json, sys; from pathlib import Path; from air_magics.catalog import S3Bucket, ensure_server; "
    "s = ensure_server(Path(sys.argv[1]), s3_buckets=(S3Bucket(*json.loads(sys.argv[2])),)); "
    "print(json.dumps([s.pid, s.start_s]))"
)


@pytest.fixture(scope="session")
def uc_server(tmp_path_factory, s3_server):
    """The run's one embedded Unity Catalog server (a JVM: 20-40 s to start here, 90 s the first time
    ever, when Maven builds it), for every test that needs one; its tests run on one xdist worker
    (``xdist_group("uc")``, added by :func:`pytest_collection_modifyitems`). Started by two processes
    at once (the lock makes it one server: :data:`UC_STARTERS`), it vends the S3 server's keys for
    ``s3://uc-vended`` (:data:`UC_BUCKET`, made here). Yields the
    :class:`~air_magics.catalog.EmbeddedServer`; stopped at the end of the session, and checked gone."""
    import json
    import subprocess

    from air_magics.catalog import running, stop
    from air_magics.io.process import pid_alive

    s3_server.make_bucket(UC_BUCKET)
    state = tmp_path_factory.mktemp("uc-home") / "uc"  # $AIR_HOME/uc of an AIR_HOME a test may take
    bucket = json.dumps([UC_BUCKET, s3_server.key, s3_server.secret])
    try:
        starters = [
            subprocess.Popen([sys.executable, "-c", _UC_START, str(state), bucket], stdout=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=2400)[0] for p in starters]
        assert all(p.returncode == 0 for p in starters), outs
        server = running(state)
        assert server is not None
        UC_STARTERS[:] = [json.loads(o.strip().splitlines()[-1]) for o in outs]  # [pid, start_s] each
        yield server
    finally:
        stopped = stop(state)
    assert stopped and not pid_alive(server.pid), "stop() left the Unity Catalog server running"


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """This test reaches the S3 server through the standard AWS environment (what a user sets); the
    server. Profiles and config files of the host are out of the way."""
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return s3_server


def sha(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def xxh(path: str | os.PathLike[str]) -> str:
    """The xxh3-128 a checkpoint's manifest records for the file at *path* (computed here on its own)."""
    import xxhash

    return xxhash.xxh3_128(Path(path).read_bytes()).hexdigest()


def make_tree(root: Path, n_dirs: int, per_dir: int, size: int = 4096, seed: int = 0) -> dict[str, str]:
    """Write n_dirs x per_dir files of random bytes under root; returns rel path -> sha256."""
    import random

    rng = random.Random(seed)
    out = {}
    for d in range(n_dirs):
        sub = root / f"part{d // 4}" / f"d{d}"
        sub.mkdir(parents=True, exist_ok=True)
        for i in range(per_dir):
            data = rng.randbytes(size + rng.randrange(size))
            (sub / f"f{i:04d}.bin").write_bytes(data)
            out[f"part{d // 4}/d{d}/f{i:04d}.bin"] = hashlib.sha256(data).hexdigest()
    return out


@pytest.fixture(scope="module")
def _shell():
    """The process's test IPython shell with the extension loaded (once per module)."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()  # the shell may already run (another test module)
    ip.run_line_magic("load_ext", "air_magics")
    return ip


@pytest.fixture
def ip(_shell):
    """The shell with no default volume set."""
    _shell.run_line_magic("config", "AirMagics.default_volume = ''")
    return _shell


def start_remote_spark(store: Path, timeout: float = 240.0):
    """Start a separate Spark Connect server with its own *store*; ``(sc:// URL, Popen)`` once it listens.

    The remote-server tests (tables, the table dataset) reach it by URL, as a notebook reaches a
    cluster; its process group is the caller's to stop (``os.killpg(proc.pid, ...)``).
    """
    import subprocess
    import time

    from air_magics.tables import server as srv_mod

    (store / "tmp").mkdir(exist_ok=True)
    port = srv_mod.free_port()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_REMOTE", None)
    with open(store / "server.log", "wb") as log:
        proc = subprocess.Popen(
            srv_mod.server_command(port, store),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=store,
            start_new_session=True,
        )
    deadline = time.time() + timeout
    while not srv_mod.port_open(port):
        assert proc.poll() is None and time.time() < deadline, (store / "server.log").read_text()[-2000:]
        time.sleep(0.25)
    return f"sc://127.0.0.1:{port}", proc


def spark_unavailable() -> str | None:
    """Why no Spark Connect server can start here (no pyspark, no Java), or None."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("pyspark") is None:
        return "pyspark not installed (pip install '.[tables]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java 17 not found"
    return None


_START = (
    "import json; from air_magics.tables.server import ensure_server, read_record, store_dir; "
    "s = ensure_server(); print(json.dumps([s.pid, s.port, read_record(store_dir())['starter']]))"
)


@pytest.fixture(scope="session")
def spark_server(tmp_path_factory):
    """The run's one embedded Spark Connect server, for every test that needs a server but not one of
    its own (a JVM start costs 15-60 s on these machines; the suite used to start about ten).

    Its store is ``AIR_SPARK_DIR`` when set (``make test`` sets it, so the notebooks' kernels use the
    same server), else a temporary one; either way it is set for the rest of the session. Started by
    two client processes at once that then exit (test_tables checks that one server outlived both),
    stopped at the end of the session. Yields ``{"store", "servers", "starters"}``. Tests that start,
    stop or crash a server use a store of their own instead (test_tables_server)."""
    if why := spark_unavailable():
        pytest.skip(why)
    import json
    import subprocess

    from air_magics import tables
    from air_magics.tables import activity

    store = os.environ.get("AIR_SPARK_DIR") or str(tmp_path_factory.mktemp("spark"))
    saved = {k: os.environ.get(k) for k in ("AIR_SPARK_DIR", "SPARK_REMOTE")}
    os.environ["AIR_SPARK_DIR"] = store
    os.environ.pop("SPARK_REMOTE", None)
    tables.stop_server()  # a server left on this store (an earlier run) would make the starters mere users
    try:
        starters = [
            subprocess.Popen([sys.executable, "-c", _START], stdout=subprocess.PIPE, text=True) for _ in range(2)
        ]
        outs = [p.communicate(timeout=280)[0] for p in starters]
        assert all(p.returncode == 0 for p in starters), outs
        started = [json.loads(o.strip().splitlines()[-1]) for o in outs]
        # This process is a client of the server from now on, as an open notebook is: with both starters
        # gone and no lease of a live process, the supervisor stopped the server AIR_SPARK_NO_CLIENT_TIMEOUT
        # (300 s) later whenever the first users (the tables benchmark's child processes) were followed by
        # five minutes of other tests, and the next table call started another one (a flake in
        # test_tables' concurrent-starters test: pid 25890 vs 23670).
        activity.touch(Path(store))
        yield {"store": store, "servers": started, "starters": [p.pid for p in starters]}
    finally:
        os.environ["AIR_SPARK_DIR"] = store
        tables.stop_server()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def shared_spark(spark_server, monkeypatch) -> str:
    """This test's tables live on the run's shared embedded server (:func:`spark_server`); its store."""
    monkeypatch.setenv("AIR_SPARK_DIR", spark_server["store"])
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    return spark_server["store"]


@pytest.fixture(scope="session")
def remote_spark(tmp_path_factory):
    """A second, separately started Spark Connect server with its own store, reached by URL as a
    notebook reaches a cluster; shared by the tests that only use it (one that kills its server starts
    its own with :func:`start_remote_spark`)."""
    if why := spark_unavailable():
        pytest.skip(why)
    import signal

    url, proc = start_remote_spark(tmp_path_factory.mktemp("remote-spark"))
    yield url
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


@pytest.fixture
def small_fs(tmp_path):
    """``small_fs(size)``: a real filesystem of that size (tmpfs; needs root, as CI runs), unmounted afterwards."""
    import contextlib
    import gc
    import subprocess

    mounted: list[Path] = []

    def make(size: str) -> Path:
        d = tmp_path / f"small-{len(mounted)}"
        d.mkdir()
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)], capture_output=True, text=True
        )
        if r.returncode:
            pytest.skip(f"cannot mount a {size} tmpfs (needs root): {r.stderr.strip()}")
        mounted.append(d)
        return d

    yield make
    gc.collect()  # close SQLite connections of dropped caches before unmounting
    for d in mounted:
        if subprocess.run(["umount", str(d)], capture_output=True).returncode:
            with contextlib.suppress(subprocess.CalledProcessError):
                subprocess.run(["umount", "-l", str(d)], check=True)
