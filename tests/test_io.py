"""The shared I/O primitives: atomic writes, the process file lock, retries, sizes, liveness."""

import errno
import os
import subprocess
import sys
import textwrap

import pytest

from air_magics.errors import AirError, SettingError
from air_magics.io import is_leftover, owner_pid, pid_alive, sweep_stale, temp_name
from air_magics.io.atomic import write_atomic, write_json_atomic
from air_magics.io.leftovers import NAME_MAX
from air_magics.io.locks import ProcessFileLock
from air_magics.io.retry import backoff_delay, is_transient, retry_call
from air_magics.io.units import fmt_bytes, parse_size


def test_write_atomic_replaces_stamps_and_leaves_no_temp(tmp_path):
    target = tmp_path / "deep" / "doc.json"
    write_json_atomic(target, {"a": 1})
    write_atomic(target, b"second", mtime=1_000_000_000.5)
    assert target.read_bytes() == b"second"
    assert os.stat(target).st_mtime == pytest.approx(1_000_000_000.5, abs=1e-6)
    assert sorted(p.name for p in target.parent.iterdir()) == ["doc.json"]


def test_write_atomic_replaces_a_link_instead_of_following_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "d").mkdir()
    os.symlink(victim, tmp_path / "d" / "x.txt")
    write_atomic(tmp_path / "d" / "x.txt", "new", root=str(tmp_path / "d"))
    assert victim.read_text() == "keep me" and not (tmp_path / "d" / "x.txt").is_symlink()


def test_process_file_lock_excludes_another_process(tmp_path):
    path = tmp_path / "stripe.lock"
    child = textwrap.dedent(f"""
        import sys, time
        from air_magics.io.locks import ProcessFileLock
        lock = ProcessFileLock({str(path)!r})
        lock.acquire()
        print("held", flush=True)
        sys.stdin.readline()
        lock.release()
        print("released", flush=True)
        time.sleep(0.5)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        mine = ProcessFileLock(path)
        with pytest.raises(TimeoutError, match="held by another process"):
            mine.acquire(timeout=0.1)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        mine.acquire(timeout=5)
        mine.release()
        mine.close()
    finally:
        proc.kill()
        proc.wait()


def test_retry_call_retries_transient_errors_only():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise OSError(errno.EIO, "I/O error")
        return "ok"

    assert retry_call(flaky, retries=4, backoff=0.001) == "ok" and len(calls) == 3
    calls.clear()

    def missing():
        calls.append(1)
        raise FileNotFoundError(errno.ENOENT, "gone")

    with pytest.raises(FileNotFoundError):
        retry_call(missing, retries=4, backoff=0.001)
    assert len(calls) == 1  # not transient: no retry
    calls.clear()
    with pytest.raises(OSError):
        retry_call(
            lambda: calls.append(1) or (_ for _ in ()).throw(TimeoutError()),
            retries=4,
            backoff=0.001,
            stop=lambda: True,
        )
    assert len(calls) == 1  # asked to stop: no retry
    assert is_transient(ConnectionResetError()) and not is_transient(ValueError())
    assert 0 < backoff_delay(10, 0.05) <= 3.0


def test_sizes_and_liveness():
    assert parse_size("10GiB") == 10 << 30 and parse_size("500 MB") == 500_000_000 and parse_size(None) is None
    with pytest.raises(ValueError, match="not a size"):
        parse_size("ten gigs")
    assert fmt_bytes(1536) == "1.5 KiB" and fmt_bytes(10) == "10 B"
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert pid_alive(os.getpid()) and not pid_alive(proc.pid)


@pytest.mark.parametrize("name", ["a" * 244 + ".jpg", "é" * 127 + "x", "b" * 255])
def test_a_temp_name_fits_whatever_the_final_names_length(tmp_path, name):
    """``.<name>.air-tmp-<pid>-<tid>`` of a legal long name used to pass NAME_MAX (ENAMETOOLONG)."""
    temp = temp_name(name)
    assert len(os.fsencode(temp)) <= NAME_MAX and is_leftover(temp) and owner_pid(temp) == os.getpid()
    assert temp_name(name) == temp and temp_name(name[:-1] + "z") != temp  # stable, and distinct per name
    write_atomic(tmp_path / name, b"data")  # through the temp name
    assert os.listdir(tmp_path) == [name] and (tmp_path / name).read_bytes() == b"data"


def test_a_dead_writers_long_temp_name_is_swept(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", f"from air_magics.io import temp_name; print(temp_name({'c' * 250!r}))"],
        stdout=subprocess.PIPE,
        text=True,
    )
    leftover = proc.communicate()[0].strip()
    (tmp_path / leftover).write_bytes(b"partial")
    (tmp_path / temp_name("d" * 250)).write_bytes(b"mine, in flight")  # a live writer's: kept
    assert sweep_stale(str(tmp_path)) == [leftover]
    assert [n for n in os.listdir(tmp_path)] == [temp_name("d" * 250)]


@pytest.mark.parametrize("value", ["1e400", "inf", "nan", "-inf", float("inf"), float("nan"), 1e30, -1, True, "5 zb"])
def test_a_size_that_is_not_finite_or_not_a_size_is_one_clear_error(value):
    """``1e400`` used to raise a bare OverflowError, ``float('nan')`` a bare ValueError."""
    with pytest.raises(SettingError) as exc:
        parse_size(value, "cache limit")
    msg = str(exc.value)
    assert isinstance(exc.value, AirError) and isinstance(exc.value, ValueError)
    assert f"cache limit {value!r}" in msg and "10GiB" in msg and "\n" not in msg
    assert parse_size("1E9") == parse_size("1e+9") == parse_size(1e9) == 10**9 and parse_size(0) == 0


def test_a_process_pool_is_made_again_in_a_forked_child():
    """A forked worker inherits the pool object but none of its threads: work must still run there."""
    import multiprocessing

    from air_magics.io.pools import ProcessPool

    pool = ProcessPool(2, "air-test")
    assert pool.get().submit(lambda: 41 + 1).result(timeout=10) == 42
    parent = pool.get()

    def child(q):
        q.put((pool.get() is not parent, pool.get().submit(lambda: "ran").result(timeout=10)))

    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    assert q.get(timeout=30) == (True, "ran")
    p.join(30)
    assert pool.get() is parent  # the parent keeps its own
