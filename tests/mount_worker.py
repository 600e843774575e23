"""One side of the mount/unmount race tests (tests/test_mount_race.py), run as its own process.

    python mount_worker.py MODE POINT ROUNDS GO_FILE RESULT_FILE [READ_FD WRITE_FD]

``cycle``: ``mount()`` then ``unmount()`` ROUNDS times; records every error by its message.
``unmounter`` and ``renamer`` play ROUNDS trials in lock step over two pipes: the unmounter mounts,
says so, unmounts at once and says so; the renamer, told the link is there, waits a few
microseconds (a different number each trial, to sweep unmount's window) and renames a file of its
own onto POINT as a user's ``mv`` would. Once unmount has returned, that file must be at POINT: if
it is not, unmount deleted it (``lost``). All wait for GO_FILE, and write a JSON result.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _where(exc: BaseException) -> str:
    import traceback

    return " < ".join(f"{f.name}:{f.lineno}" for f in reversed(traceback.extract_tb(exc.__traceback__)))


def _cycle(point: str, rounds: int) -> dict:
    from air_magics.errors import VolumeExistsError
    from air_magics.volumes import mount, unmount

    errors: list[str] = []
    for _ in range(rounds):
        for step in (mount, unmount):
            try:
                step(point)
            except VolumeExistsError as exc:
                errors.append(f"{step.__name__}: VolumeExistsError: {exc}")
            except Exception as exc:  # noqa: BLE001 - the test reports every kind, and where it came from
                errors.append(f"{step.__name__}: {type(exc).__name__}: {exc} at {_where(exc)}")
    return {"errors": errors}


def _unmounter(point: str, rounds: int, rfd: int, wfd: int) -> dict:
    from air_magics.errors import VolumeExistsError
    from air_magics.volumes import mount, unmount

    errors: list[str] = []
    for _ in range(rounds):
        mount(point)
        os.write(wfd, b"m")
        try:
            unmount(point)
        except VolumeExistsError as exc:  # the renamer's file came first: a true refusal
            errors.append(f"unmount: VolumeExistsError: {exc}")
        except Exception as exc:  # noqa: BLE001 - the test reports every kind, and where it came from
            errors.append(f"unmount: {type(exc).__name__}: {exc} at {_where(exc)}")
        os.write(wfd, b"u")
        os.read(rfd, 1)  # the renamer has checked and cleared the point
    return {"errors": errors}


def _renamer(point: str, rounds: int, rfd: int, wfd: int) -> dict:
    src = os.path.join(os.path.dirname(point), f".mine-{os.getpid()}")
    lost = 0
    for i in range(rounds):
        content = f"file {i} of {os.getpid()}".encode()
        with open(src, "wb") as f:
            f.write(content)
        assert os.read(rfd, 1) == b"m"
        until = time.perf_counter() + (i % 40) * 2e-6
        while time.perf_counter() < until:
            pass
        os.rename(src, point)  # replaces the link if it is still there
        assert os.read(rfd, 1) == b"u"
        if not _mine(point, content):
            lost += 1
        if os.path.lexists(point):
            os.unlink(point)
        os.write(wfd, b"c")
    return {"lost": lost}


def _mine(point: str, content: bytes) -> bool:
    import stat

    try:
        if not stat.S_ISREG(os.lstat(point).st_mode):
            return False
        with open(point, "rb") as f:
            return f.read() == content
    except (FileNotFoundError, NotADirectoryError):
        return False


def main() -> None:
    mode, point, rounds, go, result = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    fds = [int(a) for a in sys.argv[6:8]]
    import air_magics.volumes  # noqa: F401 - import before the start line, so both sides start together

    while not os.path.exists(go):
        time.sleep(0.001)
    if mode == "cycle":
        out = _cycle(point, rounds)
    elif mode == "unmounter":
        out = _unmounter(point, rounds, *fds)
    else:
        out = _renamer(point, rounds, *fds)
    with open(result, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
