"""``TqdmListener``: each state drawn once; the last line is not printed twice (issue 18, item 12)."""

from __future__ import annotations

import io

from _seed import seeded_volume

import air_magics
from air_magics.events import CopyEvent, LoaderEvent
from air_magics.listeners import TqdmListener
from air_magics.snapshots import LoaderTimes
from air_magics.transfer import CopyProgress


def _drawn(out: str) -> list[str]:
    """The lines a terminal drew, one per state (tqdm rewrites its line after each '\\r')."""
    return [seg.rstrip() for line in out.split("\n") for seg in line.split("\r") if seg.strip()]


def _event(done: int, state: str = "running", job: str = "j") -> CopyEvent:
    return CopyEvent(job=job, state=state, progress=CopyProgress(10, done, 0, 0, 1000, done * 100, 1.0))


def test_the_final_state_is_printed_once_on_its_own_line():
    out = io.StringIO()
    bar = TqdmListener(file=out)
    for e in (_event(3), _event(7), _event(10, "done")):
        bar(e)
    drawn = _drawn(out.getvalue())
    assert [d.split("|")[2].split(" [")[0].strip() for d in drawn] == [
        "3/10",
        "7/10",
        "10/10",
    ]  # before: 0/10 first, 10/10 twice
    assert out.getvalue().endswith("\n") and out.getvalue().count("\n") == 1


def test_a_job_that_ends_in_its_first_event_prints_one_line():
    out = io.StringIO()
    TqdmListener(file=out)(_event(10, "done", job="quick"))
    assert len(_drawn(out.getvalue())) == 1 and "10/10" in out.getvalue() and out.getvalue().count("\n") == 1


def test_without_leave_the_bar_is_cleared_at_the_end():
    out = io.StringIO()
    bar = TqdmListener(file=out, leave=False)
    bar(_event(5))
    bar(_event(10, "done"))
    assert "10/10" not in out.getvalue() and "\n" not in out.getvalue()


def test_a_real_copy_ends_with_one_final_line(tmp_path):
    store = seeded_volume("main.tq.data", {f"/Volumes/main/tq/data/f{i:02d}.bin": b"x" * 64 for i in range(20)})
    out, heard = io.StringIO(), []
    air_magics.copy(
        ["/Volumes/main/tq/data"], str(tmp_path / "d"), store=store, listeners=[TqdmListener(file=out), heard.append]
    )
    drawn = _drawn(out.getvalue())
    assert len(drawn) == len(heard)  # one line per state: no empty bar first, no final line twice
    assert "20/20" in drawn[-1] and out.getvalue().endswith("\n") and out.getvalue().count("\n") == 1


def test_a_loaders_bar_carries_the_wait_share_sparkline():
    """Outside Jupyter the training chart is one line: the wait share between events as bars (0-100%)."""
    out = io.StringIO()
    bar = TqdmListener(file=out)
    # per interval: 10 of 10 s waited (100%), then 0 of 10 s, then 5 of 10 s
    for wait, compute, state in ((1, 9, "running"), (11, 9, "running"), (11, 19, "running"), (16, 24, "done")):
        bar(LoaderEvent(timing=LoaderTimes(10, float(wait), float(compute)), state=state))
    drawn = _drawn(out.getvalue())
    assert "data wait 10.0%" in drawn[0] and "▁" not in drawn[0]  # one event: no interval yet
    assert "data wait █ 55.0%" in drawn[1]
    assert "data wait █▁ 36.7%" in drawn[2]
    assert "data wait █▁▅ 40.0%" in drawn[-1]
