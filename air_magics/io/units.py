"""Numbers for people: parsing sizes people write (``10GiB``, ``500 MB``); formatting sizes (binary:
``6.0 MiB``), rates (decimal, one family everywhere: ``22.0 MB/s``, as the probe and the sidebar
show), shares (``4.9%``, rounded once) and counts (``1 shard``, ``2 shards``)."""

from __future__ import annotations

import math
import re

from ..errors import SettingError

__all__ = ["parse_size", "fmt_bytes", "fmt_rate", "share_percent", "fmt_share", "plural", "MAX_SIZE"]

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
    """A transfer rate in MB/s (10**6 bytes a second): ``22.0 MB/s``, ``0.45 MB/s``.

    One unit for every rate the product shows (copy reports and bars, checkpoint saves, the probe,
    the verdict, the sidebar), so two rates always compare at a glance."""
    mb = bytes_per_second / 1e6
    return f"{mb:,.1f} MB/s" if mb >= 1 or mb == 0 else f"{mb:.2g} MB/s"


def share_percent(share: float) -> float:
    """*share* (0..1) as the percentage every view shows, rounded once, to 0.1."""
    return round(share * 100, 1)


def fmt_share(share: float) -> str:
    """*share* (0..1) as shown everywhere: ``4.9%`` (one rounding: :func:`share_percent`)."""
    return f"{share_percent(share):.1f}%"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 shard``, ``2 shards``, ``1,204 files``: a count with its noun in the right number."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"
