"""The live cache view: hit rate, traffic, size vs. limit, evictions, the loader's data-wait share and its verdict,
and the latest loader's training chart (:mod:`air_magics.charts`; one series per rank when ranks run).

It renders the status documents (``cache`` and ``loader-<pid>``) that every process using the
cache or a DataLoader writes, so it shows work done in DataLoader worker processes too, and the
JupyterLab sidebar reads the very same documents.
"""

from __future__ import annotations

import threading
import time
from html import escape
from typing import Any

from ..charts import chart_html, training_line, training_spec
from ..datasets.verdict import MIN_STEPS, kind_of
from ..io.units import fmt_bytes, fmt_share
from ..status import current_loaders, latest_loader, read_status

__all__ = ["CacheView", "cache_html", "cache_text", "advice", "latest_loader"]


def rank_rows(ranks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """A row per rank of a launch (``%%air_torchrun``): its data wait, steps, steps/s and verdict;
    none for a single process."""
    if len(ranks) < 2:
        return []
    rows = []
    for d in ranks:
        busy = (d.get("data_wait_s") or 0.0) + (d.get("compute_s") or 0.0)
        rate = f", {d.get('steps', 0) / busy:,.1f} steps/s" if busy > 0 else ""
        line = (
            f"{fmt_share(d.get('wait_share', 0))} data wait over {d.get('steps', 0):,} steps{rate} "
            f"(epoch {d.get('epoch', 0)})"
        )
        if d.get("verdict_kind"):
            line += f", {d['verdict_kind']}"
        rows.append((f"rank {d.get('rank', 0)} of {d.get('world', len(ranks))}", line))
    return rows


def _rows(cache: dict[str, Any] | None, loader: dict[str, Any] | None) -> list[tuple[str, str]]:
    if not cache:
        return [("cache", "no activity yet: iterate a UCVolumeDataset or call FileCache().get(...)")]
    limit = cache.get("limit")
    rows = [
        (
            "hit rate",
            f"{cache.get('hit_rate', 0):.1%} ({cache.get('hits', 0):,} hits, {cache.get('misses', 0):,} misses)",
        ),
        ("served from cache", fmt_bytes(cache.get("bytes_hit", 0))),
        ("fetched from volumes", fmt_bytes(cache.get("bytes_fetched", 0))),
        (
            "size",
            f"{fmt_bytes(cache.get('bytes', 0))} in {cache.get('entries', 0):,} files"
            + (
                f" of {fmt_bytes(limit)} limit"
                if limit
                else f" (no limit; free-disk reserve {fmt_bytes(cache.get('reserve', 0))})"
            ),
        ),
        ("evictions", f"{cache.get('evictions', 0):,}"),
    ]
    if cache.get("revalidated"):  # a new process checks once what the cache holds against the volume
        rows.append(
            (
                "revalidated",
                f"{cache['revalidated']:,} files against the volume in "
                f"{cache.get('revalidation_seconds') or 0:.2f} s (new process)",
            )
        )
    if loader:
        rows.append(
            (
                "data wait",
                f"{fmt_share(loader.get('wait_share', 0))} of loop time over {loader.get('steps', 0):,} steps "
                f"(epoch {loader.get('epoch', 0)}, {loader.get('num_workers', 0)} workers)",
            )
        )
    rows += [("what it means", line) for line in advice(cache, loader)]
    return rows


def advice(cache: dict[str, Any], loader: dict[str, Any] | None) -> list[str]:
    """Plain-language reading of the numbers: why hits are low, whether data loading is the bottleneck."""
    out = []
    hits, misses, evictions = cache.get("hits", 0), cache.get("misses", 0), cache.get("evictions", 0)
    limit = cache.get("limit")
    overflows = cache.get("overflows", 0)
    if overflows:
        out.append(
            f"{overflows:,} files did not fit in the cache limit ({fmt_bytes(limit)}) and were streamed past it: "
            f"the cache keeps a stable part of the data resident, so later epochs hit on that part only; raise "
            f"the limit (%config AirMagics.cache_limit, AIR_CACHE_LIMIT) to the data set's size for all hits"
        )
    elif evictions and hits < misses:
        size = f"its limit ({fmt_bytes(limit)})" if limit else "the disk's free space less the reserve"
        out.append(
            f"hits are low because the data does not fit: {size} is smaller than what the loop reads, so "
            f"files are evicted and fetched again every epoch; raise it (%config AirMagics.cache_limit, "
            f"AIR_CACHE_LIMIT) to at least the data set's size, or pack the folder (%air_volume pack)"
        )
    elif misses and not hits:
        out.append(
            "every file so far was a miss: the first epoch fetches each file once; later epochs are served "
            "from local disk"
        )
    if loader and loader.get("verdict"):  # the loader's own verdict (from the 10th step on): the cause and the fix
        out.append(loader["verdict"])
    elif loader and loader.get("steps", 0):  # before it: the kind the verdict's one rule gives (warming-up)
        kind = loader.get("verdict_kind") or kind_of(loader.get("wait_share", 0), loader.get("steps", 0))
        if kind == "warming-up":
            out.append(f"warming up: the verdict on the input pipeline comes after {MIN_STEPS} steps")
        else:
            out.append(f"{kind}, waiting {fmt_share(loader.get('wait_share', 0))} of the time")
    return out


def _loaders(
    loader: dict[str, Any] | None, ranks: list[dict[str, Any]] | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The loader and rank documents given, the current ones for those not given (one read)."""
    if loader is None or ranks is None:
        latest, current = current_loaders()
        loader = latest if loader is None else loader
        ranks = current if ranks is None else ranks
    return loader, ranks


def cache_text(
    cache: dict[str, Any] | None = None,
    loader: dict[str, Any] | None = None,
    ranks: list[dict[str, Any]] | None = None,
) -> str:
    """The view as text; *ranks*: each rank's loader of a launch (default: the current ones)."""
    cache = read_status("cache") if cache is None else cache
    loader, ranks = _loaders(loader, ranks)
    text = "\n".join(f"{k:>22}: {v}" for k, v in _rows(cache, loader) + rank_rows(ranks))
    spec = training_spec(ranks)
    return text + (f"\n{training_line(spec)}" if spec else "")


def cache_html(
    cache: dict[str, Any] | None = None,
    loader: dict[str, Any] | None = None,
    ranks: list[dict[str, Any]] | None = None,
) -> str:
    """The view as HTML; *ranks* as in :func:`cache_text`."""
    cache = read_status("cache") if cache is None else cache
    loader, ranks = _loaders(loader, ranks)
    rows = "".join(
        f"<tr><td style='padding-right:1em'>{escape(k)}</td><td>{escape(v)}</td></tr>"
        for k, v in _rows(cache, loader) + rank_rows(ranks)
    )
    where = escape(cache.get("root", "")) if cache else ""
    return f"<div><b>air_magics cache</b> <code>{where}</code><table>{rows}</table></div>"


class CacheView:
    """An ipywidgets panel that re-renders the status documents every ``interval`` seconds.

    A daemon thread polls; it stops after ``max_seconds`` or on :meth:`stop` (also when the widget
    is closed), so a forgotten view never polls forever.
    """

    def __init__(self, interval: float = 0.5, max_seconds: float = 3600.0) -> None:
        import ipywidgets as w

        self.hit_rate = w.FloatProgress(value=0, min=0, max=1, description="hit rate", bar_style="success")
        self.fill = w.FloatProgress(value=0, min=0, max=1, description="size/limit", bar_style="info")
        self.table = w.HTML()
        self.chart = w.HTML()  # the latest loader's training chart (each rank's series when ranks run)
        self.box = w.VBox([w.HBox([self.hit_rate, self.fill]), self.table, self.chart])
        self.interval, self.max_seconds = interval, max_seconds
        self._stop = threading.Event()
        self.refresh()
        self._thread = threading.Thread(target=self._poll, name="air-cache-view", daemon=True)
        self._thread.start()

    def refresh(self) -> None:
        cache, (loader, ranks) = read_status("cache"), current_loaders()
        self.table.value = cache_html(cache or {}, loader, ranks)
        spec = training_spec(ranks)
        chart = chart_html(spec) if spec else ""
        if chart != self.chart.value:
            self.chart.value = chart
        if cache:
            self.hit_rate.value = float(cache.get("hit_rate", 0))
            limit = cache.get("limit") or 0
            self.fill.value = min(1.0, cache.get("bytes", 0) / limit) if limit else 0.0
            self.fill.description = "size/limit" if limit else "no limit"

    def _poll(self) -> None:
        t_end = time.monotonic() + self.max_seconds
        while not self._stop.wait(self.interval) and time.monotonic() < t_end:
            if getattr(self.box, "comm", True) is None:  # the widget was closed
                break
            try:
                self.refresh()
            except Exception:  # a half-visible document or a closed comm must not kill the kernel
                continue

    def stop(self) -> None:
        self._stop.set()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.box)
