"""What a storage measurement looks like: ``%air_volume probe``'s numbers and the size histogram
of ``%air_volume ls -r``, as bar panels drawn by :func:`.svg.bars_svg`.

Why here and not in the value objects: :class:`~air_magics.volumes.probe.ProbeReport` and
:class:`~air_magics.volumes.summary.ListingSummary` sit in a lower layer than the charts, so they
keep their table and text forms and the extension registers :func:`probe_html` and
:func:`listing_html` as their notebook HTML (``%load_ext`` registers them by name, importing
nothing). The text forms (``repr``: the probe's rows, the listing's ``sizes:`` line) stay the fallback.
"""

from __future__ import annotations

from typing import Any

from .spec import sig
from .svg import bars_svg

__all__ = ["probe_panels", "size_panel", "probe_html", "listing_html", "short_size"]


def short_size(n: int) -> str:
    """A bin edge as an axis label: ``0``, ``4K``, ``16M``, ``1G`` (binary units)."""
    for unit in ("", "K", "M", "G", "T"):
        if n < 1024 or unit == "T":
            return f"{n}{unit}"
        n //= 1024
    return str(n)  # pragma: no cover


def probe_panels(report: Any) -> list[dict[str, Any]]:
    """A :class:`~air_magics.volumes.probe.ProbeReport` as three bar panels: the request latency (ms),
    one stream against parallel streams (MB/s), small files per second."""
    streams = f"{report.streams} streams"
    return [
        {
            "id": "probe-latency",
            "title": "request latency",
            "unit": "ms",
            "bars": [{"label": "metadata", "value": sig(report.op_latency_s * 1000), "title": "one round trip"}],
        },
        {
            "id": "probe-read",
            "title": "read rate",
            "unit": "MB/s",
            "bars": [
                {"label": "1 stream", "value": sig(report.read_mb_s), "title": "read, 1 stream"},
                {"label": streams, "value": sig(report.parallel_read_mb_s), "title": f"read, {streams}"},
            ],
        },
        {
            "id": "probe-files",
            "title": "small files",
            "unit": "files/s",
            "bars": [{"label": "open+read", "value": sig(report.files_per_s), "title": "small files, parallel"}],
        },
    ]


def size_panel(histogram: list[tuple[int, int | None, int]]) -> dict[str, Any]:
    """A listing's :meth:`~air_magics.volumes.summary.ListingSummary.size_histogram` as a bar panel:
    files per size bin, each bar labelled by its lower edge, its title naming the whole bin."""
    from ..io.units import fmt_bytes

    def title(lo: int, hi: int | None) -> str:
        if hi is None:
            return f">= {fmt_bytes(lo)}"
        return f"< {fmt_bytes(hi)}" if lo == 0 else f"{fmt_bytes(lo)} - {fmt_bytes(hi)}"

    return {
        "id": "sizes",
        "title": "file sizes",
        "unit": "files",
        "x_label": "size (bytes, bin's lower edge)",
        "bars": [{"label": short_size(lo), "value": c, "title": title(lo, hi)} for lo, hi, c in histogram],
    }


def _row(svgs: list[str]) -> str:
    return f'<div class="air-charts" style="display:flex;flex-wrap:wrap;gap:4px">{"".join(svgs)}</div>'


def probe_html(report: Any) -> str:
    """The probe's table with its chart under it (the notebook form of ``%air_volume probe``)."""
    return report._repr_html_() + _row([bars_svg(p) for p in probe_panels(report)])


def listing_html(summary: Any) -> str:
    """The listing's table with a size histogram above it when it is recursive and holds files."""
    html = summary._repr_html_()
    if not summary.recursive or summary.delta or not summary.n_files:
        return html
    return _row([bars_svg(size_panel(summary.size_histogram()))]) + html
