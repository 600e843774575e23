"""``probe``: what a folder's storage can deliver, measured in seconds, before a training run waits on it.

Four numbers a loader's speed follows from: the latency of one metadata request (a ``stat`` of a file
not seen before: one round trip), the read rate of one stream, the read rate of :data:`STREAMS`
parallel streams, and how many small files per second parallel open+read+close gets through.
The probe lists at most :data:`MAX_FILES` files, reads at most a few hundred MiB, stays within its
time budget (each phase stops at its share of it) and writes nothing there (its rates go to the
status document ``probe-<volume>``, which the checkpoint time line compares saves with). It works on a volume path
(resolved by :class:`~air_magics.volumes.store.VolumeStore`, so a real mount, the embedded root or
a registered fsspec URL) and on a plain local folder.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any

from ..errors import ProbeError, VolumeNotFoundError
from ..io.confined import open_read
from ..io.pools import job_pool, threads
from ..io.units import fmt_bytes
from ..status import write_status
from .location import Location
from .path import VolumePath, is_volume_text
from .store import VolumeStore

__all__ = ["probe", "ProbeReport", "probe_advice", "STREAMS", "MAX_FILES"]

STREAMS = threads("stream")  # parallel streams of the parallel phases: what a loader's prefetch threads keep in flight
MAX_FILES = 512  # files listed (and stat'ed) at most
_LATENCY_SAMPLES = 24  # serial stats timed for the op latency
_ONE_STREAM_BYTES = 64 << 20
_PARALLEL_BYTES = 256 << 20
_CHUNK = 1 << 20
_SMALL_FILE = 1 << 20  # files below this are "small": their round trips outweigh their bytes
_SLOW_OP_S = 0.002  # a metadata round trip above this is remote storage, not a local disk
_CACHED_S = 50e-6  # a stat faster than this was answered from the kernel's cache


@dataclass(frozen=True)
class ProbeReport:
    """What ``probe`` measured on ``path``: ``op_latency_s`` (one metadata round trip, median),
    ``read_mb_s`` (one stream, 10^6 bytes/s), ``parallel_read_mb_s`` (``streams`` streams: up to
    :data:`STREAMS`, one per large file), ``files_per_s`` (small files opened and read by
    :data:`STREAMS` streams), ``advice`` (one sentence), and the
    sample: ``files`` listed, ``bytes_read``, ``median_file_bytes``, ``seconds`` the probe took."""

    path: str
    op_latency_s: float
    read_mb_s: float
    parallel_read_mb_s: float
    files_per_s: float
    advice: str
    files: int
    bytes_read: int
    median_file_bytes: int
    streams: int = STREAMS
    seconds: float = 0.0

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("op latency", f"{self.op_latency_s * 1000:.{1 if self.op_latency_s >= 0.001 else 3}f} ms"),
            ("read, 1 stream", f"{self.read_mb_s:.1f} MB/s"),
            (f"read, {self.streams} streams", f"{self.parallel_read_mb_s:.1f} MB/s"),
            (f"small files, {STREAMS} streams", f"{self.files_per_s:,.0f} files/s"),
        ]

    def _head(self) -> str:
        return (
            f"probe {self.path}: {self.files:,} files (median {fmt_bytes(self.median_file_bytes)}), "
            f"{fmt_bytes(self.bytes_read)} read in {self.seconds:.1f} s"
        )

    def __str__(self) -> str:
        lines = [self._head()] + [f"  {k:<26}{v:>14}" for k, v in self.rows()] + [f"advice: {self.advice}"]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td>{escape(k)}</td><td style='text-align:right'>{escape(v)}</td></tr>" for k, v in self.rows()
        )
        return f"<p>{escape(self._head())}</p><table>{body}</table><p>advice: {escape(self.advice)}</p>"


def probe(
    path: str | os.PathLike[str] | VolumePath, *, budget_s: float = 20.0, store: VolumeStore | None = None
) -> ProbeReport:
    """Measure the storage under *path* (a volume path or a local folder, or one file) in at most
    *budget_s* seconds; reads a sample of its files, writes nothing to it."""
    t0 = time.perf_counter()
    budget_s = max(float(budget_s), 0.5)
    label, backend, source = _resolve(path, store)
    files = backend.scan(MAX_FILES, t0 + budget_s * 0.15)
    if not files:
        raise ProbeError(f"{label} holds no files to probe; pass a folder with files in it (e.g. its parent)")
    sizes, latency = _sizes(backend, files, t0 + budget_s * 0.3)
    big = sorted(sizes, key=sizes.__getitem__, reverse=True)

    def share(part: float) -> float:  # this phase's deadline: its part of the time left
        now = time.perf_counter()
        return now + max(0.0, t0 + budget_s - now) * part

    large = [f for f in big if sizes[f] * 8 >= sizes[big[0]]]  # the rates of bytes, not of round trips
    one_files, one_bytes, one_s = _read_phase(backend, large, 1, share(1 / 3), _ONE_STREAM_BYTES, _ONE_STREAM_BYTES)
    k = min(one_files, len(large) - 1)  # files not read yet first; each file by one stream at a time:
    streams = min(STREAMS, len(large))  # two streams on one file would share its pages, not the storage's
    rotated, per_stream = large[k:] + large[:k], _PARALLEL_BYTES // streams
    _, par_bytes, par_s = _read_phase(backend, rotated, streams, share(1 / 2), _PARALLEL_BYTES, per_stream)
    # files/s: the smallest files, each read whole up to _SMALL_FILE (the start of a large one)
    small_files, small_bytes, small_s = _read_phase(
        backend, big[::-1], STREAMS, share(1.0), _PARALLEL_BYTES, _SMALL_FILE
    )
    median_size = int(statistics.median(sizes.values()))
    read_mb_s = one_bytes / one_s / 1e6 if one_s > 0 else 0.0
    par_mb_s = par_bytes / par_s / 1e6 if par_s > 0 else 0.0
    files_per_s = small_files / small_s if small_s > 0 else 0.0
    report = ProbeReport(
        path=label,
        op_latency_s=latency,
        read_mb_s=read_mb_s,
        parallel_read_mb_s=par_mb_s,
        files_per_s=files_per_s,
        advice=probe_advice(latency, read_mb_s, par_mb_s, streams, files_per_s, median_size, source),
        files=len(sizes),
        bytes_read=one_bytes + par_bytes + small_bytes,
        median_file_bytes=median_size,
        streams=streams,
        seconds=time.perf_counter() - t0,
    )
    if is_volume_text(label):  # the volume's measured rate, for views that compare a save's MB/s with it
        write_status(f"probe-{VolumePath.parse(label).volume_id}", {"path": label, **_rates(report)})
    return report


def _rates(r: ProbeReport) -> dict[str, Any]:
    return {"read_mb_s": r.read_mb_s, "parallel_read_mb_s": r.parallel_read_mb_s, "streams": r.streams}


def probe_advice(
    latency: float, one: float, par: float, streams: int, files_per_s: float, median: int, source: str | None
) -> str:
    """The one-sentence advice of a probe that measured these numbers (seconds, MB/s, files/s, bytes):
    local-disk speed (nothing to do), small files behind a round trip (the ``pack`` command for
    *source*), a shared link parallel reads cannot widen (cache or a faster volume), or large files
    that parallel reads speed up (keep many in flight)."""
    if latency < _SLOW_OP_S:
        return (
            f"local-disk speed ({latency * 1000:.3f} ms per request, {par:.0f} MB/s): "
            f"reading from here will not hold training back"
        )
    if median < _SMALL_FILE:
        from .summary import pack_suggestion

        cmd = pack_suggestion(source) if source else "`%air_volume pack SRC DEST` (a copy on a volume)"
        return (
            f"each request waits {latency * 1000:.1f} ms and files are small (median {fmt_bytes(median)}), so a "
            f"loader gets about {files_per_s:,.0f} files/s: pack the folder into shards with {cmd}"
        )
    if streams > 1 and par < one * 1.5:
        return (
            f"parallel reads get no more than one stream ({par:.1f} vs {one:.1f} MB/s): the link is the limit, "
            f"so packing and more streams will not help; cache the data locally or use a faster volume"
        )
    return (
        f"files are large and {streams} streams read {par:.1f} MB/s ({one:.1f} with one): "
        f"keep many reads in flight (the loader's prefetch and num_workers)"
    )


def _resolve(path: Any, store: VolumeStore | None) -> tuple[str, _Backend, str | None]:
    """(label, backend, the volume path for pack advice or None); missing paths raise VolumeNotFoundError."""
    text = str(path)
    if isinstance(path, VolumePath) or is_volume_text(text):
        vp = VolumePath.parse(text)
        loc = (store or VolumeStore()).locate(vp)  # a missing volume: its own error, naming the fix
        fix = f"check it with `%air_volume ls {vp.parent}`" if vp.parts else "create it with `%air_volume create`"
        backend = _backend(loc, str(vp), fix)
        return str(vp), backend, str(vp) if backend.is_dir else None
    full = os.path.abspath(os.path.expanduser(text))
    root = full if os.path.isdir(full) else os.path.dirname(full)
    return full, _backend(Location(full, root=root), full, "check the folder name"), None


def _backend(loc: Location, label: str, fix: str) -> _Backend:
    backend: _Backend = _Local(loc) if loc.is_local else _Fs(loc)
    if not backend.exists():
        raise VolumeNotFoundError(f"{label!r} does not exist; {fix}")
    return backend


class _Backend:
    """Listing, stat and read of one location; the local and fsspec forms below."""

    is_dir: bool

    def exists(self) -> bool: ...  # pragma: no cover

    def scan(self, max_files: int, deadline: float) -> list[str]: ...  # pragma: no cover

    def size(self, path: str) -> int: ...  # pragma: no cover

    def read(self, path: str, max_bytes: int, deadline: float) -> int: ...  # pragma: no cover

    def open_latency(self, path: str) -> float:
        """Seconds one open takes (its close not counted); 0 where opening makes no request."""
        return 0.0


class _Local(_Backend):
    def __init__(self, loc: Location) -> None:
        self.path, self.root = loc.path, loc.root

    def exists(self) -> bool:
        self.is_dir = os.path.isdir(self.path)
        return self.is_dir or os.path.isfile(self.path)

    def scan(self, max_files: int, deadline: float) -> list[str]:
        if not self.is_dir:
            return [self.path]
        files: list[str] = []
        dirs = [self.path]
        while dirs and len(files) < max_files and (not files or time.perf_counter() < deadline):
            try:
                with os.scandir(dirs.pop(0)) as it:
                    for e in it:  # d_type only: no stat per entry, links and special files skipped
                        if e.is_file(follow_symlinks=False):
                            files.append(e.path)
                            if len(files) >= max_files:
                                break
                        elif e.is_dir(follow_symlinks=False):
                            dirs.append(e.path)
            except OSError:
                continue  # an unreadable subfolder: probe the rest
        return files

    def size(self, path: str) -> int:
        return os.stat(path, follow_symlinks=False).st_size

    def open_latency(self, path: str) -> float:
        t = time.perf_counter()
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            return 0.0
        took = time.perf_counter() - t
        os.close(fd)
        return took

    def read(self, path: str, max_bytes: int, deadline: float) -> int:
        fd, _ = open_read(path, self.root)
        n = 0
        try:
            while n < max_bytes:
                got = len(os.read(fd, _CHUNK))
                n += got
                if got < _CHUNK or time.perf_counter() > deadline:
                    break
        finally:
            os.close(fd)
        return n


class _Fs(_Backend):
    def __init__(self, loc: Location) -> None:
        self.fs, self.path = loc.fs, loc.path

    def exists(self) -> bool:
        self.fs.invalidate_cache()  # a cached listing would answer the timed stats without a round trip
        if not self.fs.exists(self.path):
            return False
        self.is_dir = self.fs.isdir(self.path)
        return True

    def scan(self, max_files: int, deadline: float) -> list[str]:
        if not self.is_dir:
            return [self.path]
        files: list[str] = []
        dirs = [self.path]
        while dirs and len(files) < max_files and (not files or time.perf_counter() < deadline):
            for info in self.fs.ls(dirs.pop(0), detail=True):
                if info.get("type") == "directory":
                    dirs.append(info["name"])
                elif len(files) < max_files:
                    files.append(info["name"])
        self.fs.invalidate_cache()
        return files

    def size(self, path: str) -> int:
        return int(self.fs.info(path).get("size") or 0)

    def read(self, path: str, max_bytes: int, deadline: float) -> int:
        n = 0
        with self.fs.open(path, "rb", block_size=_CHUNK) as f:
            while n < max_bytes:
                got = len(f.read(_CHUNK))
                n += got
                if got < _CHUNK or time.perf_counter() > deadline:
                    break
        return n


def _sizes(backend: _Backend, files: list[str], deadline: float) -> tuple[dict[str, int], float]:
    """Sizes of *files* and the op latency: the first ones stat'ed one at a time and timed (a stat of
    a file not seen before is one round trip), the rest in parallel until *deadline*. Files that
    vanished meanwhile are left out. Stats answered from a cache (under :data:`_CACHED_S`) do not
    measure the storage: then opens are timed instead, which the kernel never answers itself."""
    sizes: dict[str, int] = {}
    latencies: list[float] = []
    for f in files[:_LATENCY_SAMPLES]:
        if latencies and time.perf_counter() > deadline:
            break
        t = time.perf_counter()
        try:
            sizes[f] = backend.size(f)
        except OSError:
            continue
        latencies.append(time.perf_counter() - t)
    if not latencies:
        raise ProbeError(f"none of the files under {os.path.dirname(files[0])!r} could be read; check its permissions")
    latency = statistics.median(latencies)
    if latency < _CACHED_S:
        opens = []
        for f in list(sizes)[:_LATENCY_SAMPLES]:
            opens.append(backend.open_latency(f))
            if time.perf_counter() > deadline:
                break
        latency = statistics.median(opens)

    def one(f: str) -> int | None:
        if time.perf_counter() > deadline:
            return None
        try:
            return backend.size(f)
        except OSError:
            return None

    rest = [f for f in files if f not in sizes]
    with job_pool("stream", "air-probe", STREAMS) as pool:
        sizes.update((f, s) for f, s in zip(rest, pool.map(one, rest), strict=True) if s is not None)
    return sizes, latency


def _read_phase(
    backend: _Backend, files: list[str], streams: int, deadline: float, max_bytes: int, per_file: int
) -> tuple[int, int, float]:
    """Read *files* (up to *per_file* bytes each) with *streams* threads until *deadline* or *max_bytes*
    in all: (files, bytes, seconds)."""
    lock = threading.Lock()
    todo = iter(files)
    done = [0, 0]

    def work() -> None:
        while time.perf_counter() < deadline:
            with lock:
                if done[1] >= max_bytes:
                    return
                f = next(todo, None)
            if f is None:
                return
            try:
                n = backend.read(f, per_file, deadline)
            except OSError:
                continue  # vanished or unreadable meanwhile: not a measurement
            with lock:
                done[0] += 1
                done[1] += n

    t = time.perf_counter()
    _run(work, min(streams, len(files)))
    return done[0], done[1], time.perf_counter() - t


def _run(work: Callable[[], None], n: int) -> None:
    if n <= 1:
        work()
        return
    threads = [threading.Thread(target=work, daemon=True, name=f"air-probe-{i}") for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
