"""fusevol's Python engine on mfusepy: the rules of fusevol.c, for hosts without gcc or libfuse3-dev.

Started by fusevol.py as ``python -m benchmarks.harness.fusevol_py MOUNTPOINT -f -o OPTS`` with its
settings in FUSEVOL_* environment variables. It costs about 3x the C engine's CPU per request, and
on libfuse < 3.17 the kernel serialises its first lookups within one directory (the C engine
patches that flag into the handshake; mfusepy cannot).
"""

from __future__ import annotations

import ctypes
import errno
import fnmatch
import json
import os
import stat
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["Volume", "fault_hash", "main"]

_M64 = (1 << 64) - 1
_BLKSIZE = 131072  # st_blksize of every file: stdio and cp move 128 KiB per call
_AT_FDCWD, _AT_SYMLINK_NOFOLLOW = -100, 0x100
_libc = ctypes.CDLL(None, use_errno=True)


def fault_hash(data: bytes) -> int:
    """FNV-1a then the murmur3 finaliser: fusevol.c's hash64, so both engines fail the same calls."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = (h ^ byte) * 0x100000001B3 & _M64
    h = (h ^ h >> 33) * 0xFF51AFD7ED558CCD & _M64
    h = (h ^ h >> 33) * 0xC4CEB9FE1A85EC53 & _M64
    return h ^ h >> 33


def _libc_call(result: int) -> int:
    if result < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return result


def _entries(path: str) -> list[tuple[str, int, int]]:
    """readdir with each entry's type, so `find` and os.scandir need no lookup per entry."""
    out = [(".", stat.S_IFDIR, 0), ("..", stat.S_IFDIR, 0)]
    with os.scandir(path) as it:
        for e in it:
            kind = stat.S_IFLNK if e.is_symlink() else stat.S_IFDIR if e.is_dir(follow_symlinks=False) else stat.S_IFREG
            out.append((e.name, kind, 0))
    return out


class Volume:
    """The mfusepy operations: each request is counted, delayed, maybe failed, then done on BACKING."""

    use_ns = True

    def __init__(self, env: dict[str, str]) -> None:
        self.root = env["FUSEVOL_ROOT"]
        self.op_latency = float(env["FUSEVOL_OP_LATENCY"])
        self.read_latency = float(env["FUSEVOL_READ_LATENCY"])
        self.write_latency = float(env["FUSEVOL_WRITE_LATENCY"])
        self.bandwidth = float(env["FUSEVOL_BANDWIDTH"])
        self.attr_timeout = float(env["FUSEVOL_ATTR_TIMEOUT"])
        self.entry_timeout = float(env["FUSEVOL_ENTRY_TIMEOUT"])
        self.direct_io = int(env["FUSEVOL_DIRECT_IO"])
        self.max_background = int(env["FUSEVOL_MAX_BACKGROUND"])
        self.stats_path = env["FUSEVOL_STATS"]
        self.fail_rate = float(env["FUSEVOL_FAIL_RATE"])
        self.fail_ops = set(env["FUSEVOL_FAIL_OPS"].split(",")) - {"release"}
        self.fail_paths = env["FUSEVOL_FAIL_PATHS"]
        self.fail_times = int(env["FUSEVOL_FAIL_TIMES"])
        self.fault_seed = int(env["FUSEVOL_FAULT_SEED"])
        self.lock = threading.Lock()
        self.ops: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.tally: dict[str, list[int]] = {}  # "op:path" -> [calls, failures]
        self.bytes_read = self.bytes_written = self.inflight = self.peak_inflight = self.changes = 0
        self.link_idle_at = 0.0
        if self.stats_path:
            threading.Thread(target=self._stats_loop, daemon=True).start()

    # ------------------------------------------------------------------ rules
    def _fault(self, op: str, path: str) -> bool:
        """Call k of (op, path) fails when draw(seed:op:path:k) < fail_rate, at most fail_times times."""
        rel = path[1:]
        if self.fail_rate <= 0 or op not in self.fail_ops or not fnmatch.fnmatchcase(rel, self.fail_paths):
            return False
        key = f"{op}:{rel}"
        with self.lock:
            t = self.tally.setdefault(key, [0, 0])
            draw = f"{self.fault_seed}:{key}:{t[0]}".encode("utf-8", "surrogateescape")
            t[0] += 1
            fail = t[1] < self.fail_times and (fault_hash(draw) >> 11) / 2**53 < self.fail_rate
            t[1] += fail
        return fail

    def _serve(self, op: str, path: str, wait: float, fn: Callable[..., Any], *args: Any) -> Any:
        """One request as remote storage serves it: count, wait, maybe fail with EIO, then fn(*args)."""
        with self.lock:
            self.ops[op] += 1
            self.inflight += 1
            self.peak_inflight = max(self.peak_inflight, self.inflight)
            self.changes += 1
        try:
            if wait > 0:
                time.sleep(wait)
            if self._fault(op, path):
                with self.lock:
                    self.faults[op] += 1
                raise OSError(errno.EIO, f"fusevol: injected {op} fault")
            return fn(*args)
        finally:
            with self.lock:
                self.inflight -= 1
                self.changes += 1

    def _transfer_wait(self, latency: float, nbytes: int) -> float:
        """Latency plus the wait for a turn on the link all reads and writes share."""
        if self.bandwidth <= 0:
            return latency
        with self.lock:
            now = time.monotonic()
            self.link_idle_at = max(now, self.link_idle_at) + nbytes / self.bandwidth
            return latency + self.link_idle_at - now

    def write_stats(self) -> None:
        """The counters as JSON, replaced atomically."""
        with self.lock:
            doc = {
                "engine": "python",
                "pid": os.getpid(),
                "ops": dict(self.ops),
                "faults": dict(self.faults),
                "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written,
                "inflight": self.inflight,
                "peak_inflight": self.peak_inflight,
            }
        tmp = f"{self.stats_path}.tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.stats_path)

    def _stats_loop(self) -> None:
        seen = -1
        while True:
            if self.changes != seen:
                seen = self.changes
                self.write_stats()
            time.sleep(0.25)

    def _handle(self, fi: Any, fd: int) -> int:
        fi.fh, fi.direct_io = fd, self.direct_io
        return 0

    # ------------------------------------------------------------------ operations
    def init_with_config(self, conn: Any, config: Any) -> None:
        conn.want |= conn.capable & 1 << 18  # FUSE_CAP_PARALLEL_DIROPS: honoured from libfuse 3.17 on
        if self.max_background:
            conn.max_background = self.max_background
            conn.congestion_threshold = max(1, self.max_background * 3 // 4)
        config.attr_timeout, config.entry_timeout, config.negative_timeout = self.attr_timeout, self.entry_timeout, 0

    def getattr(self, path: str, fh: Any = None) -> os.stat_result:
        return self._serve("getattr", path, self.op_latency, os.lstat, self.root + path)

    def readdir(self, path: str, fh: Any) -> list[tuple[str, int, int]]:
        return self._serve("readdir", path, self.op_latency, _entries, self.root + path)

    def readlink(self, path: str) -> str:
        return self._serve("readlink", path, self.op_latency, os.readlink, self.root + path)

    def statfs(self, path: str) -> dict[str, int]:
        sv = self._serve("statfs", path, self.op_latency, os.statvfs, self.root + path)
        names = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail")
        return {k: getattr(sv, k) for k in (*names, "f_flag", "f_namemax")}

    def open(self, path: str, fi: Any) -> int:
        fd = self._serve("open", path, self.op_latency, os.open, self.root + path, fi.flags & ~os.O_DIRECT)
        return self._handle(fi, fd)

    def create(self, path: str, mode: int, fi: Any) -> int:
        flags = (fi.flags | os.O_CREAT) & ~os.O_DIRECT
        return self._handle(fi, self._serve("create", path, self.op_latency, os.open, self.root + path, flags, mode))

    def read(self, path: str, fh: int, address: int, size: int, offset: int) -> int:
        buf = (ctypes.c_char * size).from_address(address)
        n = self._serve("read", path, self._transfer_wait(self.read_latency, size), os.preadv, fh, [buf], offset)
        with self.lock:
            self.bytes_read += n
        return n

    def write(self, path: str, fh: int, address: int, size: int, offset: int) -> int:
        buf = (ctypes.c_char * size).from_address(address)
        n = self._serve("write", path, self._transfer_wait(self.write_latency, size), os.pwrite, fh, buf, offset)
        with self.lock:
            self.bytes_written += n
        return n

    def flush(self, path: str, fi: Any) -> int:  # the close() of a written file: a remote store commits here
        return self._serve("flush", path, self.op_latency, lambda: 0)

    def fsync(self, path: str, datasync: int, fi: Any) -> None:
        self._serve("fsync", path, self.op_latency, os.fdatasync if datasync else os.fsync, fi.fh)

    def release(self, path: str, fi: Any) -> None:  # not waited for by the kernel: no latency, no fault
        with self.lock:
            self.ops["release"] += 1
        os.close(fi.fh)

    def truncate(self, path: str, length: int, fh: Any = None) -> None:
        self._serve("truncate", path, self.op_latency, os.truncate, self.root + path, length)

    def mkdir(self, path: str, mode: int) -> None:
        self._serve("mkdir", path, self.op_latency, os.mkdir, self.root + path, mode)

    def rmdir(self, path: str) -> None:
        self._serve("rmdir", path, self.op_latency, os.rmdir, self.root + path)

    def unlink(self, path: str) -> None:
        self._serve("unlink", path, self.op_latency, os.unlink, self.root + path)

    def rename(self, old: str, new: str, flags: int) -> None:
        """renameat2, keeping RENAME_NOREPLACE/EXCHANGE (os.rename has no flags)."""
        a, b = os.fsencode(self.root + old), os.fsencode(self.root + new)
        self._serve(
            "rename", old, self.op_latency, lambda: _libc_call(_libc.renameat2(_AT_FDCWD, a, _AT_FDCWD, b, flags))
        )

    def symlink(self, path: str, target: str) -> None:
        self._serve("symlink", path, self.op_latency, os.symlink, target, self.root + path)

    def chmod(self, path: str, mode: int) -> None:
        self._serve("chmod", path, self.op_latency, os.chmod, self.root + path, mode)

    def chown(self, path: str, uid: int, gid: int) -> None:
        self._serve("chown", path, self.op_latency, os.lchown, self.root + path, uid, gid)

    def utimens(self, path: str, times: Any) -> None:
        """utimensat with the kernel's timespec[2] as is (UTIME_NOW / UTIME_OMIT survive)."""
        full = os.fsencode(self.root + path)
        call = _libc.utimensat
        self._serve(
            "utimens", path, self.op_latency, lambda: _libc_call(call(_AT_FDCWD, full, times, _AT_SYMLINK_NOFOLLOW))
        )


def _fuse_class(mfusepy: Any) -> type:
    """mfusepy.FUSE with raw callbacks where its own would copy or lose data: getattr fills struct stat
    (with our st_blksize), read/write hand the kernel's buffer to preadv/pwrite, rename keeps its flags
    and utimens its UTIME_* values."""
    stat_size = ctypes.sizeof(mfusepy.c_stat)

    class FUSE(mfusepy.FUSE):
        def _path(self, path: bytes | None) -> str:
            return "" if path is None else path.decode(self.encoding, self.errors)

        def fgetattr(self, path: bytes | None, buf: Any, fip: Any) -> int:
            s = self.operations.getattr(self._path(path))
            ctypes.memset(buf, 0, stat_size)
            st = buf.contents
            st.st_mode, st.st_nlink, st.st_size, st.st_rdev = s.st_mode, s.st_nlink, s.st_size, s.st_rdev
            st.st_uid, st.st_gid, st.st_ino, st.st_blocks = s.st_uid, s.st_gid, s.st_ino, s.st_blocks
            st.st_blksize = _BLKSIZE
            for field, ns in (
                ("st_atimespec", s.st_atime_ns),
                ("st_mtimespec", s.st_mtime_ns),
                ("st_ctimespec", s.st_ctime_ns),
            ):
                ts = getattr(st, field)
                ts.tv_sec, ts.tv_nsec = divmod(ns, 1_000_000_000)
            return 0

        def read(self, path: bytes | None, buf: Any, size: int, offset: int, fip: Any) -> int:
            address = ctypes.addressof(buf.contents)
            return self.operations.read(self._path(path), fip.contents.fh, address, size, offset)

        def write(self, path: bytes | None, buf: Any, size: int, offset: int, fip: Any) -> int:
            address = ctypes.addressof(buf.contents)
            return self.operations.write(self._path(path), fip.contents.fh, address, size, offset)

        def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
            return self.operations.rename(self._path(old), self._path(new), flags)

        def utimens_fuse_3(self, path: bytes | None, buf: Any, fip: Any) -> int:
            return self.operations.utimens(self._path(path), buf)

    return FUSE


def _fuse_kwargs(opts: str) -> dict[str, object]:
    """``-o a=1,b`` as mfusepy keywords: {'a': '1', 'b': True}."""
    out: dict[str, object] = {}
    for item in filter(None, opts.split(",")):
        key, _, value = item.partition("=")
        out[key] = value if _ else True
    return out


def main(argv: list[str]) -> int:
    """Serve MOUNTPOINT (argv: MOUNTPOINT -f -o OPTS) until it is unmounted; fuse_main's status."""
    mountpoint, opts = argv[0], argv[argv.index("-o") + 1] if "-o" in argv else ""
    os.environ["FUSE_LIBRARY_NAME"] = "fuse3"  # mfusepy would prefer an installed libfuse2
    import mfusepy

    os.umask(0)  # the kernel already applied the caller's umask to create and mkdir modes
    volume = Volume(dict(os.environ))
    status = 0
    try:
        _fuse_class(mfusepy)(volume, mountpoint, raw_fi=True, foreground=True, **_fuse_kwargs(opts))
    except RuntimeError as e:  # fuse_main's nonzero status (libfuse 3.14 returns 8 after SIGTERM)
        status = int(e.args[0]) if e.args and isinstance(e.args[0], int) else 1
    if volume.stats_path:
        volume.write_stats()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
