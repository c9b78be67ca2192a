"""Byte sizes with binary K/M/G/T suffixes, and their canonical short form."""

from __future__ import annotations

import re

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(value: object) -> int:
    """Parse 4096, "4096", "64K", "2M", "1G", "1GiB" into bytes. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size like 512K, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected a non-negative size, got {value}")
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            return int(m.group(1)) * _SUFFIX[m.group(2).upper()]
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    raise ValueError(f"expected a size like 512K, got {shown}")


def format_size(n: int) -> str:
    """Shortest exact binary form: 524288 -> "512K", 1000 -> "1000"."""
    for suffix in ("T", "G", "M", "K"):
        unit = _SUFFIX[suffix]
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def about_size(n: int) -> str:
    """Exact when it is a whole number of a unit (1G, 64K), else to three figures: "793 MiB"."""
    exact = format_size(n)
    if not exact.isdigit():
        return exact
    suffix = next((s for s in ("T", "G", "M", "K") if n >= _SUFFIX[s]), None)
    if suffix is None:
        return f"{n} B"
    v = n / _SUFFIX[suffix]
    return f"{v:.3g} {suffix}iB" if v < 1000 else f"{v:.0f} {suffix}iB"


def format_rate(bps: float | None) -> str:
    """Decimal GB/s (as the article and fio print them)."""
    if bps is None or bps != bps:  # None or NaN
        return "-"
    if bps >= 1e9:
        return f"{bps / 1e9:.2f} GB/s"
    return f"{bps / 1e6:.0f} MB/s"
