"""The copy benchmark's markdown report: one table per latency, target lines, the best worker count."""

from __future__ import annotations

import argparse
import statistics

from benchmarks.harness.mounts import requests
from benchmarks.harness.report import table, target
from benchmarks.harness.runner import med

__all__ = ["report"]


def _label(m: str, a: argparse.Namespace, default: str) -> str:
    fixed = {
        "cp": "serial `cp -r`",
        "recipe": "recipe `find \\| xargs -P 256 cp --parents`",
        "pool": f"plain `ThreadPoolExecutor({a.pool_workers})`",
        "rerun": f"air_magics re-run, unchanged dest (workers={a.default_workers})",
    }
    if m in fixed:
        return fixed[m]
    return f"air_magics workers={m.split('-')[1]}" + (" (default)" if m == default else "")


def _targets(rs: list, msec: dict[str, float], default: str, best: tuple[str, float] | None) -> list[str]:
    t = []
    if "recipe" in msec:
        x = msec["recipe"] / msec[default]
        t.append(target("air_magics (default) vs recipe", f"{x:.2f}x", ">= 2x", x >= 2))
    if "pool" in msec:
        x = msec["pool"] / msec[default]
        t.append(target("air_magics (default) vs plain pool", f"{x:.2f}x", ">= 1.3x", x >= 1.3))
    lost = sum(r.lost for r in rs if r.method.startswith("air-") or r.method == "rerun")
    t.append(target("air_magics files lost, all runs", str(lost), "0", lost == 0))
    if "rerun" in msec:
        x = msec[default] / msec["rerun"]
        t.append(target("unchanged re-run vs first copy", f"{x:.1f}x", ">= 10x", x >= 10))
    if best:
        t.append(f"fastest air_magics workers: {best[0].split('-')[1]} ({best[1]:.2f} s)")
    return [f"- {s}" for s in t]


def report(results: list, a: argparse.Namespace, files: int) -> str:
    out = []
    lat_list = sorted({r.latency_ms for r in results})
    best: dict[float, tuple[str, float]] = {}
    default = f"air-{a.default_workers}"
    for lat in lat_list:
        rs = [r for r in results if r.latency_ms == lat]
        names = list(dict.fromkeys(r.method for r in rs))
        secs = {m: [r.seconds for r in rs if r.method == m] for m in names}
        msec = {m: med(v) for m, v in secs.items()}
        air_names = [m for m in names if m.startswith("air-")]
        if air_names:
            b = min(air_names, key=lambda m: msec[m])
            best[lat] = (b, msec[b])
        read = lat if a.read_latency_ms is None else a.read_latency_ms
        out.append(
            f"\n### op latency {lat:g} ms, read/write latency {read:g} ms "
            f"({files} files x {a.size_kib} KiB, {a.folders} folders, {a.reps} reps)\n"
        )
        rows = []
        for m in names:
            v = secs[m]
            mine = [r for r in rs if r.method == m]
            plan_s = [r.details["plan_seconds"] for r in mine if "plan_seconds" in r.details]
            label = _label(m, a, default)
            xr = f"{msec['recipe'] / msec[m]:.2f}x" if "recipe" in msec else "-"
            xp = f"{msec['pool'] / msec[m]:.2f}x" if "pool" in msec else "-"
            if m == "rerun" and default in msec:
                xr = xp = "-"
                label += f": **{msec[default] / msec[m]:.1f}x faster than its first copy**"
            rows.append(
                [
                    label,
                    f"{msec[m]:.2f} ({min(v):.2f}-{max(v):.2f})",
                    f"{files / msec[m]:,.0f}",
                    "/".join(str(r.lost) for r in mine),
                    f"{med([requests(r.requests) / files for r in mine]):.1f}",
                    f"{med(plan_s):.2f}" if plan_s else "-",
                    xr,
                    xp,
                ]
            )
        out.append(
            table(
                [
                    "method",
                    "median s (min-max)",
                    "files/s",
                    "files lost (per rep)",
                    "requests/file",
                    "of which listing, s",
                    "x recipe",
                    "x pool",
                ],
                rows,
            )
        )
        if default in msec:
            out.append("")
            out += _targets(rs, msec, default, best.get(lat))
    out += _best_workers(results, lat_list, best)
    hashed = [r for r in results if r.verify["hashed"]]
    out.append(
        f"\nVerification: every destination walked after its run (file count, every expected path with size "
        f"{a.size_kib * 1024} B, no extra or temp files): {sum(r.verify['extra'] for r in results)} extra files, "
        f"{sum(r.verify['wrong_size'] for r in results)} wrong sizes in {len(results)} runs; SHA-256 of every "
        f"file against the source in {len(hashed)} runs: {sum(r.verify['bad_hash'] for r in hashed)} mismatches."
    )
    return "\n".join(out)


def _best_workers(results: list, lat_list: list[float], best: dict[float, tuple[str, float]]) -> list[str]:
    """Median time of each worker count relative to the fastest per latency, geometric mean over latencies."""
    air_all = sorted({r.method for r in results if r.method.startswith("air-")}, key=lambda m: int(m.split("-")[1]))
    if not best or len(air_all) < 2:
        return []
    score = {}
    for m in air_all:
        rel = [
            med([r.seconds for r in results if r.latency_ms == lat and r.method == m]) / best[lat][1]
            for lat in lat_list
        ]
        score[m] = statistics.geometric_mean(rel)
    b = min(score, key=score.get)
    return [
        "\nWorkers, median time relative to the fastest per latency (geometric mean over latencies): "
        + ", ".join(f"{m.split('-')[1]}: {score[m]:.2f}" for m in air_all)
        + f". Best: **{b.split('-')[1]}**."
    ]
