"""The live checkpoint view: recent saves of one folder with their state and their time line, and the
committed steps."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from html import escape
from typing import Any

from ..checkpoints.commit import save_state
from ..io.units import fmt_bytes, fmt_rate

__all__ = [
    "CheckpointView",
    "CheckpointTimeline",
    "checkpoint_view",
    "checkpoint_timeline",
    "checkpoints_html",
    "checkpoints_text",
]

_COLORS = {
    "staging": "#1565c0",
    "uploading": "#6a1b9a",
    "committed": "#2e7d32",
    "failed": "#c62828",
    "pruned": "#757575",
}


def _save_rows(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    committed = set(doc["steps"] or []) if "steps" in doc else None
    for s in reversed(doc.get("saves", [])):
        detail = []
        if s.get("bytes"):
            detail.append(fmt_bytes(s["bytes"]))
        if s.get("rank_bytes"):  # a save of several ranks: what each wrote
            per = " / ".join(fmt_bytes(b) for b in s["rank_bytes"])
            detail.append(f"from {len(s['rank_bytes'])} ranks ({per})")
        if s.get("seconds"):
            detail.append(f"{s['seconds']:.2f} s")
        if s.get("mb_per_s"):
            detail.append(fmt_rate(s["mb_per_s"] * 1e6))
        if s.get("blocked_s") is not None:
            detail.append(f"loop blocked {s['blocked_s']:.2f} s")
        if s.get("staging_s") is not None:
            detail.append(f"staged in the background in {s['staging_s']:.2f} s")
        if s.get("waited_s"):
            detail.append(
                f"waited {s['waited_s']:.2f} s for the previous save: saves are issued faster than they finish"
            )
        if s.get("error"):
            detail.append(s["error"])
        rows.append((f"step {s.get('step')}", save_state(s, committed), ", ".join(detail)))
    return rows


def checkpoints_text(doc: dict[str, Any]) -> str:
    lines = [
        f"checkpoints in {doc['directory']}: latest {doc.get('latest')}, committed steps {doc.get('steps') or 'none'}"
    ]
    if doc.get("pending"):
        lines.append(f"  incomplete (ignored): {', '.join(doc['pending'])}")
    lines += [f"  {a:<12} {b:<10} {c}" for a, b, c in _save_rows(doc)]
    return "\n".join(lines)


def checkpoints_html(doc: dict[str, Any], loaders: Sequence[dict[str, Any]] = ()) -> str:
    """The folder's committed steps and recent saves as a table, under the saves' time line (phases
    over wall-clock time, *loaders*' step rate above it: :mod:`air_magics.charts.saves`)."""
    from ..charts.saves import save_timeline, timeline_html, volume_rate

    chart = timeline_html(save_timeline(doc, loaders, volume=volume_rate(doc.get("directory"))))
    rows = "".join(
        f"<tr><td>{escape(a)}</td><td style='color:{_COLORS.get(b, 'inherit')}'><b>{escape(b)}</b></td>"
        f"<td>{escape(c)}</td></tr>"
        for a, b, c in _save_rows(doc)
    )
    pending = (
        f"<p>incomplete (ignored): <code>{escape(', '.join(doc['pending']))}</code></p>" if doc.get("pending") else ""
    )
    return (
        f"<div><b>checkpoints</b> <code>{escape(doc['directory'])}</code>: latest <b>{escape(str(doc.get('latest')))}</b>, "
        f"committed {escape(str(doc.get('steps') or 'none'))}{chart}<table>{rows}</table>{pending}</div>"
    )


class CheckpointView:
    """An HTML widget re-rendered from :func:`air_magics.checkpoints.commit.checkpoint_status` while saves run."""

    def __init__(self, directory: str, interval: float = 0.5, max_seconds: float = 3600.0) -> None:
        import ipywidgets as w

        self.directory = directory
        self.html = w.HTML()
        self.interval, self.max_seconds = interval, max_seconds
        self._stop = threading.Event()
        self.refresh()
        threading.Thread(target=self._poll, name="air-checkpoint-view", daemon=True).start()

    def refresh(self) -> None:
        from ..checkpoints.commit import checkpoint_status
        from ..status import current_loaders

        self.html.value = checkpoints_html(checkpoint_status(self.directory), current_loaders()[1])

    def _poll(self) -> None:
        t_end = time.monotonic() + self.max_seconds
        while not self._stop.wait(self.interval) and time.monotonic() < t_end:
            if getattr(self.html, "comm", True) is None:
                break
            try:
                self.refresh()
            except Exception:
                continue

    def stop(self) -> None:
        self._stop.set()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.html)


def checkpoint_view(directory: str, *, display_now: bool = False) -> CheckpointView:
    view = CheckpointView(directory)
    if display_now:
        from IPython.display import display

        display(view)
    return view


class CheckpointTimeline:
    """The saves of *directory* as a time line (phases over wall-clock time, under the step rate of a
    loader that ran meanwhile) at the moment it is shown: rich output saved with the notebook, the
    save rows as its text form. Marked as a live view of timings (tools comparing outputs skip it)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, str], dict[str, Any]]:
        from ..charts.saves import save_timeline, timeline_html, volume_rate
        from ..checkpoints.commit import checkpoint_status
        from ..status import current_loaders

        doc = checkpoint_status(self.directory)
        spec = save_timeline(doc, current_loaders()[1], volume=volume_rate(self.directory))
        html = timeline_html(spec) or "<div>no saves recorded yet</div>"
        return {"text/html": html, "text/plain": checkpoints_text(doc)}, {"air_magics": {"live_view": "checkpoints"}}

    def __repr__(self) -> str:
        from ..checkpoints.commit import checkpoint_status

        return checkpoints_text(checkpoint_status(self.directory))


def checkpoint_timeline(directory: str) -> CheckpointTimeline:
    """The time line of the saves under *directory* (a ``CheckpointManager``'s folder), for display."""
    return CheckpointTimeline(str(directory))
