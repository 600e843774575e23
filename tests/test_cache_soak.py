"""Soak (issue 36): one cache at half the data, four workloads at once (raw ``path``, raw ``bytes``,
packed ``path``, packed ``bytes``), one SIGKILLed and restarted every few seconds in turn; then
``check()`` finds nothing, a last epoch of each yields every file with its bytes, and the sampled
disk use never went over the limit + 5%."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from air_magics.cache import FileCache
from air_magics.cache.overflow import dead_folders
from air_magics.data import UCVolumeDataset
from air_magics.shards import pack
from air_magics.volumes import VolumeStore

N, SIZE = 2600, 4096
LIMIT = N * SIZE // 2  # half the data (of one of its two forms: the raw folder and the packed one)
# each process hands out at most 64 hits per look-up + a prefetch of 8 ahead of its reader: a window
# file kept 80 hand-outs (overflow_files // 8) is never deleted under it; three of the four
# workloads use the windows (packed bytes are read from the volume into memory past the cache), so
# the windows take a quarter of the limit: ~317 files, the three processes' 3 x ~90
KW = f"limit={LIMIT}, pin_seconds=0.5, overflow_files=640, overflow_bytes={LIMIT // 4}"
FOLDER, PACKED = "/Volumes/main/raw/soak/d", "/Volumes/main/raw/soak/packed"
WORKLOADS = {  # name -> (folder, output)
    "raw-path": (FOLDER, "path"),
    "raw-bytes": (FOLDER, "bytes"),
    "packed-path": (PACKED, "path"),
    "packed-bytes": (PACKED, "bytes"),
}

_WORKER = """
import sys
from air_magics.cache import FileCache
from air_magics.data import UCVolumeDataset
root, folder, output, mark = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cache = FileCache(root, {kw})
ds = UCVolumeDataset(folder, cache=cache, output=output, prefetch=8, shuffle=True, seed=len(mark))
epoch = 0
while True:
    ds.set_epoch(epoch)
    n = 0
    for item in ds:
        data = open(item, "rb").read() if output == "path" else bytes(item)
        assert data == data[:4] * ({size} // 4), "wrong bytes"
        n += 1
        if n % 200 == 0:
            with open(mark, "a") as m:
                m.write(".")  # progress the test waits for before it kills this process
    assert n == {n}, n
    epoch += 1
    print(epoch, flush=True)
"""


def _content(i: int) -> bytes:
    return i.to_bytes(4, "big") * (SIZE // 4)


def _used(root: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.startswith("index.sqlite"):
                continue
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                pass
    return total


def _mark(root: Path, name: str) -> Path:
    return root.parent / f"{name}.mark"


def _start(script: Path, root: Path, name: str) -> subprocess.Popen:
    folder, output = WORKLOADS[name]
    _mark(root, name).write_text("")
    return subprocess.Popen(
        [sys.executable, str(script), str(root), folder, output, str(_mark(root, name))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_four_workloads_under_kills_stay_within_the_limit_and_exact(tmp_path):
    s = VolumeStore()
    s.create("main.raw.soak")
    for i in range(N):
        with s.open(f"{FOLDER}/f{i:04d}.bin", "wb") as f:
            f.write(_content(i))
    pack(FOLDER, PACKED, shard_size="64KiB")  # 16 members a shard
    root = tmp_path / "cache"
    script = tmp_path / "worker.py"
    script.write_text(_WORKER.format(kw=KW, size=SIZE, n=N))
    FileCache(root, limit=LIMIT).info()
    peak, stop = [0], threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], _used(root))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    procs = {name: _start(script, root, name) for name in WORKLOADS}
    order, kills = list(WORKLOADS), 0
    try:
        end = time.monotonic() + 60
        while kills < 6 and time.monotonic() < end:
            time.sleep(0.2)
            for name, p in procs.items():
                assert p.poll() is None, f"{name} worker failed: {p.stderr.read()[-2000:]}"
            victim = order[kills % len(order)]
            if len(_mark(root, victim).read_text()) >= 2:  # 400 items since it (re)started: kill it mid-epoch
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                procs[victim] = _start(script, root, victim)
                kills += 1
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGKILL)
            p.wait()
    assert kills >= 4, f"only {kills} kills in a minute: every workload must have been killed once"
    cache = FileCache(root, limit=LIMIT, pin_seconds=0.5, overflow_files=640, overflow_bytes=LIMIT // 4)
    cache.check(repair=True)  # what the last kills left (temps, dead folders)
    report = cache.check()
    assert not report.findings, str(report)
    assert dead_folders(root / "overflow") == []  # no dead process's folder or lock left
    for name, (folder, output) in WORKLOADS.items():
        ds = UCVolumeDataset(folder, cache=cache, output=output, prefetch=8)
        got = {}
        for i, item in enumerate(ds):
            got[i] = open(item, "rb").read() if output == "path" else bytes(item)
        assert len(got) == N and all(got[i] == _content(i) for i in range(N)), name
    stop.set()  # (the last epochs, in this process, were sampled too)
    sampler.join()
    info = cache.info()
    print(f"soak: {kills} kills, peak {peak[0] / LIMIT:.3f}x the limit, {info.overflows} overflows, {info.hits} hits")
    assert info.overflows > 0 and peak[0] > LIMIT // 2  # the cache filled up and files went past it
    assert peak[0] <= LIMIT * 1.05, f"peak {peak[0]} bytes under the cache root, limit {LIMIT}"
