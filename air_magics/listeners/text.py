"""``TqdmListener``: text progress bars for copies (files), exports (Spark tasks), loaders (steps) and
the embedded Spark server's start (seconds waited). Each bar's clock starts when its job started
(the event says when), so its rate is the job's, not the bar's. A loader's bar carries the
training chart's text form outside Jupyter (a console, CI logs): a sparkline of the data-wait share
between its last events (0 to 100%), then the share so far."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Hashable
from typing import IO, Any

from ..events import CopyEvent, Event, ExportEvent, LoaderEvent, ServerEvent
from ..io.forksafe import ForkSafeLock
from ..io.units import fmt_bytes, fmt_rate, fmt_share

__all__ = ["TqdmListener"]

# tqdm draws a bar when it is made (0/total) and again when it is closed (the state the last
# refresh drew: the last line twice). With a delay that never elapses it draws nothing itself;
# this listener draws each state once.
_OWN_DRAWING = 1e12
_SPARK = 12  # intervals a loader's sparkline shows


class TqdmListener:
    """One tqdm bar per job on *file* (stderr), closed by the job's last event."""

    def __init__(self, file: IO[str] | None = None, *, leave: bool = True) -> None:
        self.file, self.leave = file, leave
        self._bars: dict[Hashable, Any] = {}
        self._waits: dict[Hashable, tuple[float, float, deque[float]]] = {}  # loader: last totals, shares
        self._lock = ForkSafeLock()  # the parent's flusher thread may be drawing at fork()

    def __call__(self, event: Event) -> None:
        if isinstance(event, CopyEvent):
            p = event.progress
            total, n, unit = p.files_total, p.files_done, "file"
            post = f"{fmt_bytes(p.bytes_done)} · {fmt_rate(p.bytes_per_second)} · {p.failed} failed"
        elif isinstance(event, ExportEvent):
            total, n, unit = event.progress.tasks or 0, event.progress.tasks_done or 0, "task"
            post = f"{event.progress.rows:,} rows"
        elif isinstance(event, LoaderEvent):
            total, n, unit = None, event.timing.steps, "step"
            with self._lock:
                spark = self._wait_spark(event)
            post = f"data wait {spark}{fmt_share(event.timing.wait_share)}"
        elif isinstance(event, ServerEvent):
            total, n, unit = None, int(event.elapsed), "s"
            post = event.message
        else:
            return
        key = (event.source, event.job, event.pid)
        with self._lock:
            bar = self._bars.get(key)
            if bar is None:
                from tqdm import tqdm

                if isinstance(event, ServerEvent):  # its job is the store's path: too long to show
                    desc = "Spark server"
                else:
                    desc = f"{event.source} {event.job}" if event.job else event.source
                bar = self._bars[key] = tqdm(
                    total=total,
                    desc=desc,
                    unit=unit,
                    file=self.file or sys.stderr,
                    dynamic_ncols=True,
                    leave=self.leave,
                    delay=_OWN_DRAWING,
                )
            bar.total, bar.n = total, n
            # tqdm's rate is n over the bar's own age: a bar made at a job's first event (a fast copy's
            # first event is often its last) would divide 120 files by microseconds. Age it from the job's start.
            started = _started(event)
            if started is not None:
                bar.start_t = started
            bar.set_postfix_str(post, refresh=False)
            if not event.terminal:
                bar.refresh()
                return
            if self.leave:  # the final state, once, on its own line
                bar.display(pos=0)
                bar.fp.write("\n")
            else:
                bar.clear()
            bar.close()  # draws nothing more: the delay never elapsed
            del self._bars[key]
            self._waits.pop(key, None)

    def _wait_spark(self, e: LoaderEvent) -> str:
        """The sparkline of the wait share between this loader's events (O(1) per event), or ""."""
        from ..charts.console import sparkline  # on a loader's first event: `import air_magics` stays light

        key = (e.source, e.job, e.pid)
        wait, compute = e.timing.data_wait, e.timing.compute
        last = self._waits.get(key)
        shares = last[2] if last else deque(maxlen=_SPARK)
        if last and wait + compute > last[0] + last[1]:
            shares.append((wait - last[0]) / (wait + compute - last[0] - last[1]) * 100)
        self._waits[key] = (wait, compute, shares)
        return f"{sparkline(shares, _SPARK, top=100.0)} " if shares else ""

    def __repr__(self) -> str:
        return "TqdmListener()"


def _started(event: Event) -> float | None:
    """When *event*'s job started (wall clock, as tqdm's ``time.time``), or None when unknown."""
    if isinstance(event, CopyEvent):
        return event.time - event.progress.elapsed  # the copy's own clock: the rate its report shows
    started = getattr(event, "started", 0.0)
    return started if isinstance(started, (int, float)) and started > 0 else None
