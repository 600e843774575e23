"""Sizes: parsing what people write (``10GiB``, ``500 MB``) and formatting bytes for people."""

from __future__ import annotations

__all__ = ["parse_size", "fmt_bytes", "fmt_rate"]

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1 << 30,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1 << 40,
}


def parse_size(value: int | float | str | None, what: str = "size") -> int | None:
    """``10GiB``, ``500 MB``, ``1e9`` or an int -> bytes; ``None``/``''`` -> ``None``."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        n = int(value)
    else:
        import re

        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(value))
        unit = m.group(2).lower() if m else None
        if not m or unit not in _UNITS:
            raise ValueError(f"{what} {value!r} is not a size: write e.g. 500MB, 10GiB or a number of bytes")
        n = int(float(m.group(1)) * _UNITS[unit])
    if n < 0:
        raise ValueError(f"{what} {value!r} is negative")
    return n


def fmt_bytes(n: float) -> str:
    """Human-readable binary size: ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def fmt_rate(bytes_per_second: float) -> str:
    """A transfer rate in the units sizes are shown in (``8.3 MiB/s`` beside ``6.0 MiB``), so the two compare."""
    return f"{fmt_bytes(bytes_per_second)}/s"
