"""Config values: how each kind of knob value is read (each parser returns the canonical value or
raises ValueError with the words for the message), shared by the config and the tools registry."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from harness.units import parse_size

Parser = Callable[[Any], Any]


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def size(v: Any) -> int:
    n = parse_size(v)
    if n <= 0:
        raise ValueError(f"expected a positive size like 512K, got {show(v)}")
    return n


def size_or_0(v: Any) -> int:
    try:
        return parse_size(v)
    except ValueError:
        raise ValueError(f"expected a size like 512K, or 0, got {show(v)}") from None


def posint(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"expected a positive integer, got {show(v)}")
    return v


def count(v: Any) -> int:
    """A whole number from 0: seeds and the like."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"expected a non-negative integer, got {show(v)}")
    return v


def positive(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise ValueError(f"expected a positive number, got {show(v)}")
    return float(v)


def fraction(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise ValueError(f"expected a number between 0 and 1, got {show(v)}")
    return float(v)


def share(v: Any) -> float:
    """Strictly between 0 and 1: a part of something, neither none nor all of it."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
        raise ValueError(f"expected a number between 0 and 1, both excluded, got {show(v)}")
    return float(v)


def string(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ValueError(f"expected a non-empty string, got {show(v)}")
    return v


def cache_mode(v: Any) -> str:
    if v not in ("cold", "warm"):
        raise ValueError(f'expected "cold" or "warm", got {show(v)}')
    return str(v)


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {show(v)}")
    return v


BUFFERS_RE = re.compile(r"^\s*(?:(\d+)\s*\*\s*)?queue_depth\s*$")


def buffers(v: Any) -> "Buffers":
    """buffers: an absolute count, or a multiple of queue_depth ("queue_depth", "2*queue_depth")."""
    if isinstance(v, str):
        m = BUFFERS_RE.match(v)
        if m and (m.group(1) is None or int(m.group(1)) > 0):
            return Buffers(per_queue_depth=int(m.group(1) or 1))
        raise ValueError(f'expected a positive integer, "queue_depth" or "N*queue_depth", got {show(v)}')
    return Buffers(count=posint(v))


def threads(v: Any) -> int | None:
    if v == "all":
        return None
    try:
        return posint(v)
    except ValueError:
        raise ValueError(f'expected a positive integer or "all", got {show(v)}') from None


@dataclass(frozen=True)
class Buffers:
    """Number of buffers: either `count`, or `per_queue_depth` x queue_depth."""

    count: int | None = None
    per_queue_depth: int | None = None

    def resolve(self, queue_depth: int) -> int:
        return self.count if self.count is not None else (self.per_queue_depth or 1) * queue_depth

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        return "queue_depth" if self.per_queue_depth == 1 else f"{self.per_queue_depth}*queue_depth"
