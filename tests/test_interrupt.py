"""Ctrl-C (a real SIGINT) during a copy, a pack and a DataLoader loop: one line saying what stopped,
what landed and how to resume, every landed file whole, and a re-run that finishes the job.

The signal is sent once some files have landed on local disk, out of a slow real FUSE volume
(benchmarks/harness/fusevol.py), so the interrupt always falls mid-operation: to this process's
main thread (IPython's ``run_cell``, the Python API), to a child's process group (a training
loop), and through a real Jupyter kernel's interrupt (what the notebook user sees). An interrupted
export is in tests/test_tables.py (it needs the Spark server)."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_tree, sha

import air_magics
from air_magics.errors import Interrupted
from air_magics.transfer import TEMP_MARK

pytestmark = pytest.mark.fuse

SRC = "/Volumes/main/raw/img/data"


def interrupt_when(ready: Callable[[], bool], timeout: float = 60.0) -> threading.Thread:
    """SIGINT to the main thread as soon as *ready()* holds (Ctrl-C in a terminal or a kernel)."""
    main = threading.main_thread().ident

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(main, signal.SIGINT)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    return th


def files_under(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, fs in os.walk(root) for f in fs]


@pytest.fixture
def slow_volume(slowfs, tmp_path, monkeypatch):
    """400 files of 4-8 KiB on a FUSE volume answering each request after 5 ms; their hashes."""
    hashes = make_tree(tmp_path / "backing" / "main" / "raw" / "img" / "data", n_dirs=16, per_dir=25)
    with slowfs.mounted(tmp_path / "backing", tmp_path / "mnt", op_latency_ms=5, read_latency_ms=5):
        monkeypatch.setenv("AIR_VOLUMES_MOUNT", str(tmp_path / "mnt"))
        yield {f"data/{k}": v for k, v in hashes.items()}


def check_landed(out: Path, hashes: dict[str, str]) -> int:
    """Every file under *out* is whole (its source's bytes) and under its final name; their number."""
    got = files_under(out)
    assert not [p for p in got if TEMP_MARK in p.name], "a temp file was left"
    for p in got:
        assert sha(p) == hashes[p.relative_to(out).as_posix()], f"{p} is not its source's bytes"
    return len(got)


def test_an_interrupted_copy_says_what_landed_and_a_rerun_finishes(slow_volume, tmp_path):
    out = tmp_path / "out"
    watcher = interrupt_when(lambda: out.exists() and len(files_under(out)) >= 20)
    with pytest.raises(KeyboardInterrupt) as err:  # scripts still stop
        air_magics.copy([SRC], str(out), workers=4)
    watcher.join()
    assert isinstance(err.value, Interrupted) and err.value.what == "copy"
    msg = str(err.value)
    m = re.fullmatch(
        rf"copy interrupted: (\d+) of 400 files landed in {re.escape(str(out))}; "
        r"re-run to copy the rest \(copied files are skipped\)",
        msg,
    )
    assert m, msg
    landed = check_landed(out, slow_volume)
    assert int(m.group(1)) == landed and 20 <= landed < 400
    again = air_magics.copy([SRC], str(out), workers=16)
    assert again.ok and again.skipped == landed and again.copied == 400 - landed
    assert check_landed(out, slow_volume) == 400


def test_the_copy_magic_shows_one_line_not_a_traceback(slow_volume, tmp_path, ip, capsys):
    out = tmp_path / "out"
    cell = f"%%air_copy --to {out} -q\n{SRC}\n"
    watcher = interrupt_when(lambda: out.exists() and len(files_under(out)) >= 20)
    result = ip.run_cell(cell)
    watcher.join()
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert type(result.error_in_exec).__name__ == "UsageError"  # the cell fails: "Run All" stops here
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert re.fullmatch(
        rf"UsageError: copy interrupted: \d+ of 400 files landed in {re.escape(str(out))}; "
        r"re-run to copy the rest \(copied files are skipped\)",
        lines[0],
    ), lines[0]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    landed = check_landed(out, slow_volume)
    report = ip.run_cell(cell).result  # re-running the cell copies the rest
    assert report.ok and report.skipped == landed and report.copied == 400 - landed


def test_an_interrupted_pack_keeps_its_shards_and_a_rerun_reuses_them(slow_volume, tmp_path, ip, capsys):
    from air_magics.shards import MANIFEST_NAME, open_packed, pack
    from air_magics.volumes import VolumeStore

    dest_dir = tmp_path / "backing" / "main" / "raw" / "img" / "packed"
    shards = lambda: sorted(p.name for p in dest_dir.glob("shard-*.idx.json") if TEMP_MARK not in p.name)  # noqa: E731
    watcher = interrupt_when(lambda: dest_dir.exists() and len(shards()) >= 1)
    result = ip.run_cell(f"%air_volume pack {SRC} /Volumes/main/raw/img/packed --shard-size 256KiB")
    watcher.join()
    shown = capsys.readouterr()
    lines = [ln for ln in (shown.out + shown.err).splitlines() if ln.strip()]
    # the text progress line(s), its outcome, then the one-line error; no traceback
    assert type(result.error_in_exec).__name__ == "UsageError", lines
    assert lines[-2].endswith("packed: interrupted") and not any("Traceback" in ln for ln in lines), lines
    assert [ln for ln in lines if "interrupted" in ln] == lines[-2:], lines
    m = re.fullmatch(
        r"UsageError: pack interrupted: (\d+) of (\d+) shards written to /Volumes/main/raw/img/packed "
        r"\(published only when all are: the manifest is written last\); re-run to pack the rest "
        r"\(written shards are reused\)",
        lines[-1],
    )
    assert m, lines[-1]
    written, total = int(m.group(1)), int(m.group(2))
    assert 1 <= written < total and not (dest_dir / MANIFEST_NAME).exists()
    assert len(shards()) == written  # each one whole: its index is written after its tar
    # the Python API: the same line, as a KeyboardInterrupt
    watcher = interrupt_when(lambda: len(shards()) >= written + 1)
    with pytest.raises(Interrupted, match=r"^pack interrupted: \d+ of \d+ shards written") as err:
        pack(SRC, "/Volumes/main/raw/img/packed", shard_size="256KiB", workers=4)
    watcher.join()
    assert err.value.what == "pack" and isinstance(err.value, KeyboardInterrupt)
    report = pack(SRC, "/Volumes/main/raw/img/packed", shard_size="256KiB")
    assert report.shards == total and report.shards_reused >= written + 1
    assert report.shards_reused + report.shards_written == total
    packed = open_packed(VolumeStore(), "/Volumes/main/raw/img/packed")
    assert packed is not None and len(packed.members) == 400


_LOADER_LOOP = """
import os, signal, sys, threading, time
from air_magics.data import DataLoader, UCVolumeDataset

loader = DataLoader(UCVolumeDataset("/Volumes/main/raw/img/data", shuffle=True, seed=1), batch_size=None, num_workers=2)
seen = []


def ctrl_c():  # what Jupyter's interrupt and a terminal's Ctrl-C do: SIGINT to the whole process group
    while len(seen) < 40:
        time.sleep(0.005)
    os.killpg(os.getpgid(0), signal.SIGINT)


threading.Thread(target=ctrl_c, daemon=True).start()
try:
    for path in loader:
        seen.append(os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path))
        time.sleep(0.01)  # the step
    print("not interrupted", file=sys.stderr)
except KeyboardInterrupt:
    pass
delivered = sum(sum(s["delivered"]) for s in loader.state_dict()["dataset"]["segments"])
rest = [os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p) for p in loader]  # the same workers
print(len(seen), delivered, len(rest), len(set(seen) | set(rest)), flush=True)
"""


def test_an_interrupted_loader_loop_keeps_its_workers_and_its_count(slow_volume, tmp_path):
    """Ctrl-C in the training loop (to the process group, as a notebook's interrupt sends it): no
    thread's traceback, the workers stay, ``state_dict()`` counts exactly what was delivered, and the
    next ``iter`` delivers the rest of the epoch, each file once."""
    import subprocess
    import sys

    env = dict(os.environ)
    run = subprocess.run(
        [sys.executable, "-c", _LOADER_LOOP],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        start_new_session=True,  # its own process group, so the SIGINT reaches only it and its workers
    )
    assert run.returncode == 0 and "Traceback" not in run.stderr and "Exception" not in run.stderr, run.stderr
    seen, delivered, rest, distinct = map(int, run.stdout.split())
    assert 40 <= seen < 400 and delivered == seen  # what the loop got, not what was prefetched
    assert seen + rest == 400 and distinct == 400  # the rest of the epoch, every file exactly once


def test_a_notebook_interrupting_a_copy_sees_one_line(slow_volume, tmp_path):
    """What the notebook user sees: a real kernel, the interrupt button (jupyter_client's
    interrupt_kernel: SIGINT to the kernel's process group) mid-``%%air_copy``: the cell fails (so
    "Run All" stops) and shows one line, no traceback."""

    from jupyter_client.manager import KernelManager

    out = tmp_path / "out"
    km = KernelManager(kernel_name="python3")  # the current environment's kernel
    km.start_kernel(env=dict(os.environ), cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()

    def interrupt_once_copying() -> None:
        deadline = time.monotonic() + 60
        while not (out.exists() and len(files_under(out)) >= 20) and time.monotonic() < deadline:
            time.sleep(0.01)
        km.interrupt_kernel()

    try:
        kc.wait_for_ready(timeout=120)
        kc.execute_interactive("%load_ext air_magics", timeout=120)
        watcher = threading.Thread(target=interrupt_once_copying, daemon=True)
        shown: list[dict] = []
        watcher.start()
        reply = kc.execute_interactive(
            f"%%air_copy --to {out} -q\n{SRC}\n", timeout=120, output_hook=lambda m: shown.append(m)
        )
        watcher.join()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "error"  # the cell failed: "Run All" stops here
    texts = [m["content"].get("text", "") for m in shown if m["msg_type"] == "stream"]
    errors = [m["content"] for m in shown if m["msg_type"] == "error"]
    assert errors == [], errors  # no traceback output
    lines = [ln for t in texts for ln in t.splitlines() if ln.strip()]
    assert len(lines) == 1 and re.fullmatch(
        rf"UsageError: copy interrupted: \d+ of 400 files landed in {re.escape(str(out))}; "
        r"re-run to copy the rest \(copied files are skipped\)",
        lines[0],
    ), lines
    check_landed(out, slow_volume)


def test_ctrl_c_anywhere_else_in_a_magic_is_one_line_too():
    """Before a copy starts (listing the sources), during a table read: no traceback either."""
    from IPython.core.error import UsageError

    from air_magics.magics._common import usage_errors

    @usage_errors
    def air_table() -> None:
        raise KeyboardInterrupt

    with pytest.raises(UsageError, match=r"^%air_table interrupted \(Ctrl-C\); re-run the cell to do it again$"):
        air_table()
