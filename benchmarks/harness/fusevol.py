"""fusevol: a directory mirrored through FUSE that behaves like a remote data volume.

The project's own tool for its FUSE tests and benchmarks. BACKING is mirrored at MOUNTPOINT
(read-write, or ``read_only``) and every request that reaches the server waits like a request to
remote storage: metadata requests (getattr/lookup, readdir, open, create, mkdir, rename, unlink,
flush, fsync, ...) ``op_latency_ms``, reads ``read_latency_ms`` and writes ``write_latency_ms`` plus
their turn on one link of ``mbps`` MB/s. Requests run on many server threads, so concurrent
requests overlap as on a real volume.

Transient faults: with ``fail_rate`` P, call k of OP on PATH (OP in ``fail_ops``, PATH matching the
glob ``fail_paths``) returns EIO when hash(``fault_seed``, OP, PATH, k) < P, at most ``fail_times``
times per (OP, PATH): a client that retries gets through, and a rerun fails the same calls.

``stats=FILE`` keeps JSON counters there (``ops`` and ``faults`` per request kind, ``bytes_read``,
``bytes_written``, ``inflight``, ``peak_inflight``), rewritten every 0.25 s and at exit.

Two engines serve the same rules: ``c`` (fusevol.c on libfuse3, built with gcc on first use into
``~/.cache/air-fusevol/<hash>/``; about 3x less CPU per request, and the only one whose lookups
in one directory overlap on libfuse < 3.17) and ``python`` (fusevol_py.py on mfusepy, the
fallback where gcc or the libfuse3 headers are missing). ``engine="auto"`` picks ``c`` when it can;
the environment variable FUSEVOL_ENGINE changes that default (``FUSEVOL_ENGINE=python pytest ...``
runs the FUSE tests on the fallback).

    with mounted(backing, mnt, op_latency_ms=5, fail_rate=0.1, stats=tmp / "s.json") as server_pid:
        ...
    python -m benchmarks.harness.fusevol BACKING MNT --op-latency-ms 5   # prints the server PID
    python -m benchmarks.harness.fusevol --unmount MNT
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "FAULTABLE_OPS",
    "FuseVolError",
    "Options",
    "c_engine",
    "fstype",
    "main",
    "mounted",
    "unavailable",
    "unmount",
]

#: request kinds a fault can hit (release is not answered to anyone: the kernel ignores its errors)
FAULTABLE_OPS = (
    "getattr readdir readlink statfs open create read write flush fsync truncate mkdir rmdir unlink rename "
    "symlink chmod chown utimens"
).split()
FSTYPE = "fuse.fusevol"
_HERE = Path(__file__).resolve().parent
_REPO = _HERE.parents[1]
_MOUNT_TIMEOUT_S = 30.0


class FuseVolError(RuntimeError):
    """A volume could not be mounted (or an option is wrong); the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class Options:
    """How a volume behaves; the keyword options of :func:`mounted` and the CLI flags (``--op-latency-ms``)."""

    op_latency_ms: float = 5.0
    read_latency_ms: float = 2.0
    write_latency_ms: float | None = None  # None: the read latency
    mbps: float = 0.0  # one link shared by reads and writes, MB/s; 0 = unlimited
    read_only: bool = False
    attr_timeout: float = 1.0  # seconds the kernel caches attributes and name lookups
    entry_timeout: float = 1.0
    direct_io: bool = False  # bypass the page cache: every read() reaches the server
    fail_rate: float = 0.0
    fail_ops: str = "read,open"
    fail_paths: str = "*"
    fail_times: int = 1
    fault_seed: int = 0
    stats: str | os.PathLike[str] | None = None
    engine: str = dataclasses.field(default_factory=lambda: os.environ.get("FUSEVOL_ENGINE", "auto"))  # auto, c, python
    threads: int = 256  # server threads (libfuse's default of 10 would cap overlap)
    max_background: int = 256  # kernel's cap on async requests such as readahead (default 12)

    def __post_init__(self) -> None:
        bad = set(self.fail_ops.split(",")) - set(FAULTABLE_OPS)
        if bad:
            raise FuseVolError(
                f"fail_ops: unknown op(s) {','.join(sorted(bad))}; choose from {','.join(FAULTABLE_OPS)}"
            )
        if not 0 <= self.fail_rate <= 1:
            raise FuseVolError(f"fail_rate={self.fail_rate} is outside 0..1")
        if self.engine not in ("auto", "c", "python"):
            raise FuseVolError(f"engine={self.engine!r} is unknown; choose auto, c or python")
        if self.threads < 1 or self.fail_times < 0:
            raise FuseVolError("threads must be >= 1 and fail_times >= 0")

    def server_env(self, backing: str) -> dict[str, str]:
        """The FUSEVOL_* variables both engines read their settings from (SI units)."""
        write_ms = self.read_latency_ms if self.write_latency_ms is None else self.write_latency_ms
        values = {
            "ROOT": backing,
            "OP_LATENCY": self.op_latency_ms / 1e3,
            "READ_LATENCY": self.read_latency_ms / 1e3,
            "WRITE_LATENCY": write_ms / 1e3,
            "BANDWIDTH": self.mbps * 1e6,
            "ATTR_TIMEOUT": self.attr_timeout,
            "ENTRY_TIMEOUT": self.entry_timeout,
            "DIRECT_IO": int(self.direct_io),
            "MAX_BACKGROUND": self.max_background,
            "STATS": os.path.abspath(self.stats) if self.stats else "",
            "FAIL_RATE": self.fail_rate,
            "FAIL_OPS": self.fail_ops,
            "FAIL_PATHS": self.fail_paths,
            "FAIL_TIMES": self.fail_times,
            "FAULT_SEED": self.fault_seed,
        }
        return {f"FUSEVOL_{k}": str(v) for k, v in values.items()}

    def fuse_options(self) -> str:
        """libfuse's ``-o`` list, the same for both engines."""
        opts = ["fsname=fusevol", "subtype=fusevol", "no_rofd_flush"]  # closing a read-only fd sends no FLUSH
        opts += [f"max_threads={self.threads}", f"max_idle_threads={self.threads}"]
        return ",".join(opts + (["ro"] if self.read_only else []))


def fstype(mountpoint: str | os.PathLike[str]) -> str | None:
    """The filesystem type mounted exactly at *mountpoint* (``fuse.fusevol`` for ours), or None."""
    target = os.path.realpath(mountpoint)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4]) == target:
                return fields[fields.index("-") + 1]
    return None


def unmount(mountpoint: str | os.PathLike[str], lazy: bool = False) -> bool:
    """Unmount with fusermount3 (*lazy*: detach now even if busy); True when nothing is mounted there."""
    tool = shutil.which("fusermount3") or shutil.which("fusermount")
    if tool and fstype(mountpoint):
        subprocess.run([tool, "-u", *(["-z"] if lazy else []), os.fspath(mountpoint)], capture_output=True)
    return fstype(mountpoint) is None


def _c_source() -> tuple[str, Path]:
    source = (_HERE / "fusevol.c").read_text()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "air-fusevol"
    return source, cache / hashlib.sha256(source.encode()).hexdigest()[:16] / "fusevol"


def _c_buildable() -> bool:
    return bool(shutil.which("gcc") and shutil.which("pkg-config")) and (
        subprocess.run(["pkg-config", "--exists", "fuse3"], capture_output=True).returncode == 0
    )


def c_engine() -> Path | None:
    """The C engine's binary, compiled on first use (atomically; one per source hash); None when gcc,
    pkg-config or libfuse3-dev is missing and it was not built before."""
    source, binary = _c_source()
    if binary.exists():
        return binary
    if not _c_buildable():
        return None
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True).stdout
    tmp = binary.with_name(f".fusevol-{os.getpid()}-{os.urandom(4).hex()}")  # one per concurrent build
    src = tmp.with_suffix(".c")
    try:
        binary.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(source)
    except OSError as e:
        raise FuseVolError(f"cannot build the C engine in {binary.parent}: {e.strerror}; set XDG_CACHE_HOME") from None
    try:
        r = subprocess.run(
            ["gcc", "-O2", "-Wall", "-pthread", "-o", str(tmp), str(src), *flags.split()],
            capture_output=True,
            text=True,
        )
    finally:
        src.unlink()
    if r.returncode:
        raise FuseVolError(f"building the C engine failed (gcc {r.returncode}):\n{r.stderr[-3000:]}")
    os.replace(tmp, binary)  # concurrent first uses each build; one wins, nobody sees half a file
    return binary


def _python_engine_missing() -> str | None:
    import ctypes.util

    if importlib.util.find_spec("mfusepy") is None:
        return (
            "the python engine needs mfusepy: pip install mfusepy (or apt-get install -y gcc pkg-config libfuse3-dev)"
        )
    if not ctypes.util.find_library("fuse3"):
        return "libfuse3 is missing: apt-get install -y fuse3"
    return None


def unavailable(engine: str = "auto") -> str | None:
    """Why a volume cannot be mounted here with *engine*, or None when it can."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing: modprobe fuse, or give the container --device /dev/fuse --cap-add SYS_ADMIN"
    if not shutil.which("fusermount3"):
        return "fusermount3 is missing: apt-get install -y fuse3"
    c_ok = _c_source()[1].exists() or _c_buildable()
    if engine == "c" and not c_ok:
        return "the C engine needs gcc and the libfuse3 headers: apt-get install -y gcc pkg-config libfuse3-dev"
    if engine == "python" or (engine == "auto" and not c_ok):
        return _python_engine_missing()
    return None


def _server_command(mountpoint: str, opts: Options) -> list[str]:
    """The command that serves the volume in the foreground, with the engine *opts* ask for."""
    if why := unavailable(opts.engine):
        raise FuseVolError(why)
    binary = c_engine() if opts.engine in ("auto", "c") else None
    fuse_args = [mountpoint, "-f", "-o", opts.fuse_options()]
    if binary:
        return [str(binary), *fuse_args]
    return [sys.executable, "-m", "benchmarks.harness.fusevol_py", *fuse_args]


def _start(backing: str | os.PathLike[str], mountpoint: str | os.PathLike[str], opts: Options) -> subprocess.Popen:
    """Start a detached server; return it once the mount is live (FuseVolError if it never is)."""
    backing_dir, mnt = os.path.realpath(backing), os.path.realpath(mountpoint)
    if not os.path.isdir(backing_dir):
        raise FuseVolError(f"backing directory {backing} does not exist; create it first")
    if os.path.commonpath([backing_dir, mnt]) in (backing_dir, mnt):
        raise FuseVolError(f"backing {backing} and mount point {mountpoint} must not contain each other")
    try:
        os.makedirs(mnt, exist_ok=True)
    except OSError as e:
        raise FuseVolError(f"cannot create mount point {mountpoint}: {e.strerror}") from None
    if fstype(mnt):
        raise FuseVolError(f"{mountpoint} is already a mount point; unmount it first (--unmount {mountpoint})")
    cmd = _server_command(mnt, opts)
    env = dict(os.environ, **opts.server_env(backing_dir))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + _MOUNT_TIMEOUT_S
        while fstype(mnt) != FSTYPE:
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is None:
                    proc.kill()
                    unmount(mnt, lazy=True)
                log.seek(0)
                out = log.read().decode(errors="replace")[-3000:].strip()
                raise FuseVolError(f"the server did not mount {mountpoint} (exit code {proc.wait()}): {out}")
            time.sleep(0.02)
    return proc


def _stop(mountpoint: str | os.PathLike[str], proc: subprocess.Popen) -> None:
    """Unmount (lazily if still busy) and reap the server.

    A lazily detached mount keeps its server alive while any file on it stays open, so the server is
    then asked to stop (SIGTERM: it writes its stats and exits; open files get ENOTCONN), and killed
    if it still hangs."""
    clean = unmount(mountpoint)
    if not clean:
        unmount(mountpoint, lazy=True)
    for timeout, stop in ((10.0 if clean else 1.0, proc.terminate), (5.0, proc.kill)):
        try:
            proc.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            stop()
    proc.wait()


@contextlib.contextmanager
def mounted(backing: str | os.PathLike[str], mountpoint: str | os.PathLike[str], **options: object) -> Iterator[int]:
    """Mount *backing* at *mountpoint* for a with-block and yield the server's PID; always unmount.

    *options* are :class:`Options` fields (``op_latency_ms=5, read_only=True, fail_rate=0.1, ...``).
    Raises FuseVolError when the volume cannot be mounted.
    """
    try:
        opts = Options(**options)  # type: ignore[arg-type]
    except TypeError as e:
        raise FuseVolError(f"{e}; valid options: {', '.join(f.name for f in dataclasses.fields(Options))}") from None
    proc = _start(backing, mountpoint, opts)
    try:
        yield proc.pid
    finally:
        _stop(mountpoint, proc)


_HELP = {
    "op_latency_ms": "wait per metadata request: lookup/getattr, readdir, open, create, mkdir, rename, unlink, flush, fsync, ...",
    "read_latency_ms": "wait per read request",
    "write_latency_ms": "wait per write request (default: the read latency)",
    "mbps": "one link of MBPS x 10^6 bytes/s shared by all reads and writes (0: unlimited)",
    "read_only": "mount read-only: writes fail with EROFS",
    "attr_timeout": "seconds the kernel caches attributes",
    "entry_timeout": "seconds the kernel caches name lookups",
    "direct_io": "bypass the page cache: every read() reaches the server",
    "fail_rate": "probability (0..1) that a matching call fails with EIO",
    "fail_ops": f"comma-separated ops that may fail, of: {','.join(FAULTABLE_OPS)}",
    "fail_paths": "fnmatch glob of mount-relative paths that may fail ('*' also matches '/')",
    "fail_times": "most failures per (op, path), so a retry gets through",
    "fault_seed": "seed of the fault draws",
    "stats": "JSON counters file, rewritten every 0.25 s and at exit (default: none)",
    "engine": "auto (c when it can be built), c or python (mfusepy)",
    "threads": "server threads",
    "max_background": "the kernel's limit on asynchronous requests such as readahead",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.harness.fusevol",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("backing", nargs="?", help="directory to mirror")
    p.add_argument("mountpoint", nargs="?", help="where to mount it (created if missing)")
    p.add_argument("--unmount", metavar="MNT", help="unmount a volume and exit")
    p.add_argument("--foreground", action="store_true", help="serve in this process until unmounted")
    defaults = Options()
    for f in dataclasses.fields(Options):
        flag, default = "--" + f.name.replace("_", "-"), getattr(defaults, f.name)
        if f.type == "bool":
            p.add_argument(flag, action="store_true", help=_HELP[f.name])
        else:
            kind = {"float": float, "int": int, "float | None": float}.get(str(f.type), str)
            p.add_argument(
                flag,
                type=kind,
                default=default,
                help=_HELP[f.name] + ("" if default is None else f" (default {default})"),
            )
    return p


def main(argv: list[str] | None = None) -> int:
    """The command line: mount detached (print the server PID), serve in the foreground, or unmount."""
    a = _parser().parse_args(argv)
    try:
        if a.unmount:
            if unmount(a.unmount) or unmount(a.unmount, lazy=True):
                return 0
            raise FuseVolError(f"{a.unmount} is still mounted")
        if not a.backing or not a.mountpoint:
            raise FuseVolError("BACKING and MOUNTPOINT are required (or --unmount MNT)")
        opts = Options(**{f.name: getattr(a, f.name) for f in dataclasses.fields(Options)})
        if a.foreground:
            cmd = _server_command(os.path.realpath(a.mountpoint), opts)
            os.makedirs(a.mountpoint, exist_ok=True)
            env = dict(os.environ, **opts.server_env(os.path.realpath(a.backing)))
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO), env.get("PYTHONPATH")) if p)
            os.execvpe(cmd[0], cmd, env)
        print(_start(a.backing, a.mountpoint, opts).pid)
    except FuseVolError as e:
        print(f"fusevol: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
