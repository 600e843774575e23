"""Issue 37, item 7: the rough edges a newcomer hit on the first day, each with its test."""

from __future__ import annotations

import io
import re

from _seed import seeded_volume

import air_magics
from air_magics.events import CopyEvent
from air_magics.listeners import TqdmListener
from air_magics.transfer import CopyProgress


def _rate(text: str) -> float:
    """The files/s tqdm drew last (``60.00file/s``)."""
    return float(re.findall(r"([\d.]+)file/s", text)[-1])


def test_the_text_bar_shows_the_copys_own_rate():
    """A 120-file copy printed 2,467,237 files/s: tqdm divided by the bar's age (made at the copy's
    first event, which for a fast copy is its last), not by the copy's."""
    out = io.StringIO()
    done = CopyEvent(job="quick", state="done", progress=CopyProgress(120, 120, 0, 0, 120_000, 120_000, 2.0))
    TqdmListener(file=out)(done)
    assert 50 <= _rate(out.getvalue()) <= 60.01  # 120 files in 2 s (drawing takes a moment more)
    assert "00:02" in out.getvalue()  # the copy's elapsed time, not the bar's


def test_a_real_copys_bar_agrees_with_its_report(tmp_path):
    store = seeded_volume("main.tq.rate", {f"/Volumes/main/tq/rate/f{i:03d}.bin": b"x" * 64 for i in range(120)})
    out = io.StringIO()
    report = air_magics.copy(
        ["/Volumes/main/tq/rate"], str(tmp_path / "d"), store=store, listeners=[TqdmListener(file=out)]
    )
    assert report.copied == 120
    assert _rate(out.getvalue()) <= report.files_per_second * 1.5 + 1
