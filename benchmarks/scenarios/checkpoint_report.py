"""The checkpoint benchmark's records and report: one measurement's result, medians per size, the markdown."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from benchmarks.harness.report import fmt, ratio, table, verdict
from benchmarks.harness.runner import med

__all__ = ["LABELS", "METHODS", "Result", "report", "summarize"]

METHODS = ("threads8", "plain", "ref", "air", "mgr")
LABELS = {
    "threads8": "ceiling: 8 plain threads, one file each, `write`/`readinto` on the mount",
    "plain": "torch `FileSystemWriter`/`Reader` on the mount",
    "ref": "reference `databricks.air.data`",
    "air": "air_magics `UCVolumeWriter`/`Reader`",
    "air-warm": "air_magics through a warm cache, `direct=False` (load only)",
    "mgr": "air_magics `CheckpointManager`",
}
NAN = float("nan")


@dataclass
class Result:
    size_mb: float
    rep: int
    method: str
    ok: bool = False
    error: str = ""
    bytes: int = 0
    save_s: float = NAN
    load_s: float = NAN
    warm_s: float = NAN
    async_blocked_s: float = NAN
    async_total_s: float = NAN
    staged_blocked_s: float = NAN  # CheckpointManager, background staging: call + wait_staged after 1 s of compute
    staged_call_s: float = NAN  # ... of which the call
    staged_again_blocked_s: float = NAN  # the same for the next staged save (the stager's buffers reused)
    phases: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    busy_before: float = 0.0
    wall_s: float = NAN
    child_cpu_s: float = NAN
    server_cpu_s: float = NAN
    peak_rss_mib: float = NAN
    foreign_cores: float = NAN
    disturbed: str = ""
    others: list = field(
        default_factory=list
    )  # other benchmark scripts alive meanwhile (maybe idle: see foreign_cores)
    attempt: int = 1


def _row(good: list[Result], n: int) -> dict:
    mb = (good[0].bytes if good else 0) / 1e6
    row = {"n": n, "failed": n - len(good), "mb": mb}
    for key in (
        "save_s",
        "load_s",
        "warm_s",
        "async_blocked_s",
        "async_total_s",
        "staged_blocked_s",
        "staged_again_blocked_s",
    ):
        xs = [getattr(r, key) for r in good]
        row[key] = med(xs)
        row[key + "_range"] = (min(xs, default=NAN), max(xs, default=NAN))
    row["save"] = mb / row["save_s"] if good else NAN
    row["load"] = mb / row["load_s"] if good else NAN
    row["warm"] = mb / row["warm_s"] if good and row["warm_s"] == row["warm_s"] else NAN
    row["blocked_frac"] = row["async_blocked_s"] / row["save_s"] if good else NAN
    for ph in ("save", "load", "warm", "async"):
        row[f"{ph}_cpu"] = med([r.phases.get(ph, {}).get("cpu_s", NAN) for r in good])
        row[f"{ph}_ops"] = {
            op: med([r.phases.get(ph, {}).get("ops", {}).get(op, 0) for r in good])
            for op in sorted({op for r in good for op in r.phases.get(ph, {}).get("ops", {})})
        }
        row[f"{ph}_wbytes"] = med([r.phases.get(ph, {}).get("bytes_written", NAN) for r in good])
        row[f"{ph}_rbytes"] = med([r.phases.get(ph, {}).get("bytes_read", NAN) for r in good])
    row["files"] = good[0].info.get("save_files", {}) if good else {}
    row["server_cpu"] = med([r.server_cpu_s for r in good])
    row["rss"] = med([r.peak_rss_mib for r in good])
    row["tensors"] = good[0].info.get("tensors") if good else None
    return row


def summarize(results: list[Result], sizes: list[float], methods: list[str]) -> dict:
    """Per size and method: medians of seconds and the MB/s they give (size / median seconds)."""
    out: dict = {}
    for size in sizes:
        rows = {}
        for m in methods:
            rs = [r for r in results if r.size_mb == size and r.method == m]
            if rs:
                rows[m] = _row([r for r in rs if r.ok], len(rs))
        out[size] = rows
    return out


def _main_table(rows: dict, order: list[str]) -> str:
    p, r, c = rows.get("plain"), rows.get("ref"), rows.get("threads8")
    lines = []
    for m in order:
        v = rows[m]
        fail = f" ({v['failed']}/{v['n']} runs FAILED)" if v["failed"] else ""
        lines.append(
            [
                f"{LABELS[m]}{fail}",
                fmt(v["save"], ".1f"),
                fmt(v["load"], ".1f"),
                f"{fmt(v['async_blocked_s'])} ({fmt(v['async_total_s'], '.1f')})",
                f"{fmt(v['blocked_frac'] * 100, '.0f')}%",
                ratio(v["save"], c["save"]) if c else "-",
                ratio(v["load"], c["load"]) if c else "-",
                ratio(v["save"], p["save"]) if p else "-",
                ratio(v["save"], r["save"]) if r else "-",
                ratio(v["load"], p["load"]) if p else "-",
                ratio(v["load"], r["load"]) if r else "-",
            ]
        )
        if m == "air" and v["warm"] == v["warm"]:
            lines.append(
                [
                    LABELS["air-warm"],
                    "-",
                    fmt(v["warm"], ".1f"),
                    "-",
                    "-",
                    "-",
                    ratio(v["warm"], c["load"]) if c else "-",
                    "-",
                    "-",
                    ratio(v["warm"], p["load"]) if p else "-",
                    ratio(v["warm"], r["load"]) if r else "-",
                ]
            )
    return table(
        [
            "method",
            "save MB/s",
            "load MB/s",
            "async blocked s (of total s)",
            "blocked / sync save",
            "save x 8 threads",
            "load x 8 threads",
            "save x plain",
            "save x ref",
            "load x plain",
            "load x ref",
        ],
        lines,
    )


def _detail_table(rows: dict, order: list[str]) -> str:
    def rng(v, k):
        lo, hi = v[k + "_range"]
        return f"{fmt(v[k])} ({fmt(lo)}-{fmt(hi)})"

    def fuse(v, ph, op, nb):
        ops = v[f"{ph}_ops"]
        n = ops.get(op, 0)
        other = sum(x for o, x in ops.items() if o not in (op, "release", "read", "write"))
        avg = v[f"{ph}_{nb}"] / n / 1024 if n else NAN
        return f"{n:,.0f} ({fmt(avg, ',.0f')}), {other:,.0f}"

    lines = []
    for m in order:
        v, f = rows[m], rows[m]["files"]
        lines.append(
            [
                LABELS[m],
                rng(v, "save_s"),
                rng(v, "load_s") + (f"; warm {rng(v, 'warm_s')}" if v["warm_s"] == v["warm_s"] else ""),
                rng(v, "async_blocked_s"),
                rng(v, "async_total_s"),
                f"{fmt(v['save_cpu'], '.1f')} / {fmt(v['load_cpu'], '.1f')} / {fmt(v['async_cpu'], '.1f')}",
                f"{f.get('files', '-')} ({fmt(f.get('largest', NAN) / 1e6, '.0f')})",
                fuse(v, "save", "write", "wbytes"),
                fuse(v, "load", "read", "rbytes"),
                fmt(v["rss"], ",.0f"),
            ]
        )
    return table(
        [
            "method",
            "save s",
            "load s",
            "async blocked s",
            "async total s",
            "CPU s save / load / async",
            "files on volume (largest MB)",
            "FUSE save: writes (avg KiB), other",
            "FUSE load: reads (avg KiB), other",
            "peak RSS MiB",
        ],
        lines,
    )


def _targets(rows: dict) -> list[str]:
    air, p, r, c = rows["air"], rows.get("plain"), rows.get("ref"), rows.get("threads8")
    out = ["\nTargets (air_magics `UCVolumeWriter`/`Reader`):\n"]
    if c:
        for name, mine in (("UCVolumeWriter", air), ("CheckpointManager", rows.get("mgr"))):
            if mine:
                x, y = mine["save"] / c["save"], mine["load"] / c["load"]
                out.append(
                    f"- {name} save >= 0.9x of 8 plain parallel writers: {mine['save']:.1f} vs {c['save']:.1f} MB/s = "
                    f"{x:.2f}x: {verdict(x >= 0.9)}; restore >= 0.8x of 8 plain readers: {mine['load']:.1f} vs "
                    f"{c['load']:.1f} MB/s = {y:.2f}x: {verdict(y >= 0.8)}"
                )
    if p:
        x = air["save"] / p["save"]
        out.append(
            f"- save >= plain writer on the mount: {air['save']:.1f} vs {p['save']:.1f} MB/s = {x:.2f}x: {verdict(x >= 1)}"
        )
    if r:
        x = air["save"] / r["save"]
        out.append(
            f"- save >= 5x the reference: {air['save']:.1f} vs {r['save']:.1f} MB/s = {x:.2f}x: {verdict(x >= 5)}"
        )
        x = air["load"] / r["load"]
        out.append(
            f"- load >= 3x the reference: {air['load']:.1f} vs {r['load']:.1f} MB/s = {x:.2f}x: {verdict(x >= 3)}"
        )
    x = air["blocked_frac"]
    out.append(
        f"- async blocked <= 20% of a synchronous save: {air['async_blocked_s']:.2f} s of {air['save_s']:.2f} s = "
        f"{x:.0%}: {verdict(x <= 0.2)}"
    )
    if "mgr" in rows:
        g = rows["mgr"]
        out.append(
            f"- (CheckpointManager: blocked {g['async_blocked_s']:.2f} s of a {g['save_s']:.2f} s synchronous "
            f"save = {g['blocked_frac']:.0%})"
        )
        if g["staged_blocked_s"] == g["staged_blocked_s"]:
            x = g["staged_blocked_s"] / g["save_s"]
            out.append(
                f"- background staging blocks <= 5% of a synchronous save (the call + `wait_staged()` after 1 s of "
                f"compute, CheckpointManager): {g['staged_blocked_s']:.3f} s of {g['save_s']:.2f} s = {x:.1%}: "
                f"{verdict(x <= 0.05)}"
            )
        if g["staged_again_blocked_s"] == g["staged_again_blocked_s"]:
            x = g["staged_again_blocked_s"] / g["save_s"]
            out.append(
                f"- the next background-staged save (the stager's buffers reused): {g['staged_again_blocked_s']:.3f} s "
                f"of {g['save_s']:.2f} s = {x:.1%}: {verdict(x <= 0.05)}"
            )
    return out


def report(results: list[Result], sizes: list[float], methods: list[str], a: argparse.Namespace) -> str:
    L = []
    for size, rows in summarize(results, sizes, methods).items():
        if not rows:
            continue
        mb = next((r["mb"] for r in rows.values() if r["mb"]), size)
        ntens = next((r["tensors"] for r in rows.values() if r["tensors"]), "?")
        L.append(
            f"\n### {size:g} MB state ({mb:.1f} MB in {ntens} float32 tensors), op latency {a.latency_ms:g} ms, "
            f"read/write latency {a.rw_latency_ms:g} ms, {a.reps} interleaved rep(s), medians\n"
        )
        order = [m for m in METHODS if m in rows]
        L.append(_main_table(rows, order))
        L.append(
            "\nDetail (median seconds, min-max over reps; CPU = user + system seconds of the measured process "
            "in that step, fusevol server not included; FUSE = requests the step sent to fusevol):\n"
        )
        L.append(_detail_table(rows, order))
        if "air" in rows:
            L += _targets(rows)
    bad = [r for r in results if not r.ok]
    L.append(
        f"\nVerification: {sum(r.ok for r in results)} of {len(results)} measurements ok; every load and every "
        f"checkpoint on the volume compared bit for bit with the saved state"
        + (
            "; FAILED: " + "; ".join(f"{r.method} {r.size_mb:g} MB rep {r.rep + 1}: {r.error[:200]}" for r in bad)
            if bad
            else ""
        )
        + "."
    )
    dist = [r for r in results if r.disturbed]
    if dist:
        L.append(
            "Kept although disturbed (retries used up): "
            + "; ".join(f"{r.method} {r.size_mb:g} MB rep {r.rep + 1} ({r.disturbed})" for r in dist)
        )
    return "\n".join(L)
