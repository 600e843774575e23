"""cache/writebehind.py: index rows of fetched files committed behind the fetches, many per
transaction, and a flush that waits for (and hurries) what is queued."""

import threading
import time

from air_magics.cache import writebehind
from air_magics.cache.entries import Entries
from air_magics.cache.writebehind import WriteBehind


def _row(i: int) -> tuple[str, str, int, float, bool]:
    return (f"/Volumes/main/raw/w/{i:03d}.bin", f"main/raw/w/{i:03d}.bin", 10, 1.0 + i, True)


class _Spy(Entries):
    def __init__(self, root) -> None:
        super().__init__(root, 0)
        self.batches: list[int] = []

    def write_rows(self, rows):
        self.batches.append(len(rows))
        super().write_rows(rows)


def test_rows_arriving_one_by_one_are_committed_many_per_transaction(tmp_path):
    """Rows queued a millisecond apart (a cold epoch's pace) are gathered: committing on each wake
    made it one transaction per row (50 here), each a thread wake-up and a GIL hand-over."""
    entries = _Spy(tmp_path)
    writer, landed = WriteBehind(entries, str(tmp_path)), []
    for i in range(50):
        writer.put(_row(i), landed.append)
        time.sleep(0.001)
    writer.flush()
    assert landed == [None] * 50 and sum(entries.batches) == 50
    assert len(entries.batches) < 25 and max(entries.batches) > 1, entries.batches
    assert all(entries.row(_row(i)[0]) is not None for i in range(50))


def test_a_flush_commits_what_is_gathered_without_waiting_out_the_gathering(tmp_path, monkeypatch):
    """A flush (a stream's end, a check, a clear) needs the rows now: the writer stops gathering.
    With the gathering stretched to a minute, five flushes that each waited it out would take five
    minutes; they must all be back while the gathering of the first is still running."""
    monkeypatch.setattr(writebehind, "GATHER_S", 60.0)
    entries = _Spy(tmp_path)
    writer = WriteBehind(entries, str(tmp_path))
    done = threading.Event()

    def flushes() -> None:
        writer.put(_row(0), lambda e: None)
        writer.flush()  # the writer's thread starts and gathers; this hurries it
        for _ in range(5):
            writer.put(_row(1), lambda e: None)
            writer.flush()
        done.set()

    threading.Thread(target=flushes, daemon=True).start()
    assert done.wait(30), "a flush waited out the gathering"
    assert entries.row(_row(1)[0]) is not None


def test_a_row_error_reaches_every_fetch_of_its_batch(tmp_path):
    class Failing(_Spy):
        def write_rows(self, rows):
            raise OSError(28, "No space left on device")

    writer, got = WriteBehind(Failing(tmp_path), str(tmp_path)), []
    done = threading.Event()
    for i in range(3):
        writer.put(_row(i), lambda e: (got.append(e), len(got) == 3 and done.set()))
    writer.flush()
    assert done.wait(5) and all(isinstance(e, OSError) for e in got)
