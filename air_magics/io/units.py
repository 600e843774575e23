"""Sizes: parsing what people write (``10GiB``, ``500 MB``) and formatting bytes for people."""

from __future__ import annotations

import math
import re

from ..errors import SettingError

__all__ = ["parse_size", "fmt_bytes", "fmt_rate", "MAX_SIZE"]

_SIZE_RX = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE]\+?[0-9]+)?)\s*([a-zA-Z]*)\s*")

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


MAX_SIZE = (1 << 63) - 1  # 8 EiB: larger than any disk, and what SQLite and the OS can count
_FORMS = "write a finite number of bytes or a number with a unit, e.g. 500MB, 10GiB or 1e9"


def parse_size(value: int | float | str | None, what: str = "size") -> int | None:
    """``10GiB``, ``500 MB``, ``1e9`` or an int -> bytes; ``None``/``''`` -> ``None``.

    The one place sizes are checked: anything else (``inf``, ``nan``, ``1e400``, a negative
    number, more than :data:`MAX_SIZE`) is a :class:`~air_magics.errors.SettingError` (a
    ``ValueError``) naming the value and the accepted forms, never a bare ``OverflowError``."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise SettingError(f"{what} {value!r} is not a size: {_FORMS}")
    if isinstance(value, int):
        n = value
    else:
        if isinstance(value, float):
            number, scale = value, 1
        else:
            m = _SIZE_RX.fullmatch(str(value))
            unit = m.group(2).lower() if m else None
            if not m or unit not in _UNITS:
                raise SettingError(f"{what} {value!r} is not a size: {_FORMS}")
            number, scale = float(m.group(1)), _UNITS[unit]
        total = number * scale
        if not math.isfinite(total):  # inf, nan, 1e400
            raise SettingError(f"{what} {value!r} is not a finite size: {_FORMS}")
        n = int(total)
    if n < 0:
        raise SettingError(f"{what} {value!r} is negative: {_FORMS}")
    if n > MAX_SIZE:
        raise SettingError(f"{what} {value!r} is larger than any disk (at most 8 EiB): {_FORMS}")
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
