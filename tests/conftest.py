"""Shared fixtures: an isolated AIR_HOME per test and real slowfs FUSE volumes."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

import pytest

SLOWFS_PATH = Path(__file__).resolve().parents[2] / "shared" / "tools" / "slowfs.py"


@pytest.fixture(autouse=True)
def air_home(tmp_path, monkeypatch):
    """Every test gets its own AIR_HOME; no test sees a real /Volumes or the user's ~/.air."""
    home = tmp_path / "air_home"
    monkeypatch.setenv("AIR_HOME", str(home))
    monkeypatch.delenv("AIR_VOLUMES_ROOT", raising=False)
    monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "no-such-mount"))
    return home


def _load_slowfs():
    spec = importlib.util.spec_from_file_location("slowfs", SLOWFS_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fuse_unavailable() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing: FUSE volume tests need it (container: --device /dev/fuse --cap-add SYS_ADMIN)"
    if not SLOWFS_PATH.exists():
        return f"slowfs tool not found at {SLOWFS_PATH}"
    if not shutil.which("fusermount3"):
        return "fusermount3 missing: apt-get install fuse3 libfuse3-dev pkg-config"
    return None


@pytest.fixture(scope="session")
def slowfs():
    reason = fuse_unavailable()
    if reason:
        pytest.skip(reason)
    return _load_slowfs()


def sha(path: str | os.PathLike[str]) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


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
    port = srv_mod._free_port()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_REMOTE", None)
    with open(store / "server.log", "wb") as log:
        proc = subprocess.Popen(
            srv_mod._command(port, store),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=store,
            start_new_session=True,
        )
    deadline = time.time() + timeout
    while not srv_mod._port_open(port):
        assert proc.poll() is None and time.time() < deadline, (store / "server.log").read_text()[-2000:]
        time.sleep(0.25)
    return f"sc://127.0.0.1:{port}", proc
