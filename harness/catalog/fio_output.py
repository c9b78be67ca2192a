"""fio's JSON output: its bandwidth, its own read runtime and the bytes it read (its argv is made by
its entry in harness/catalog/tools.py, like every tool's)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class FioError(Exception):
    pass


@dataclass(frozen=True)
class FioResult:
    bw_Bps: float  # jobs[0].read.bw_bytes
    runtime_s: float  # jobs[0].read.runtime (ms) / 1000
    io_bytes: int  # jobs[0].read.io_bytes
    iops: float | None = None  # jobs[0].read.iops
    depth: str = ""  # jobs[0].iodepth_level, fio's own in-flight distribution: "1:0.1 2:0.2 4:99.7" (percent)


def parse_fio_json(text: str) -> FioResult:
    """Parse `fio --output-format=json` output (tolerates fio's leading warning lines)."""
    start = text.find("{")
    if start < 0:
        raise FioError("no JSON object in fio output")
    try:
        data = json.loads(text[start:], strict=False)  # fio writes file names into strings unescaped
        job = data["jobs"][0]
        read = job["read"]
        levels = job.get("iodepth_level") or {}
        depth = " ".join(f"{k}:{float(v):g}" for k, v in levels.items() if float(v) > 0)
        return FioResult(bw_Bps=float(read["bw_bytes"]), runtime_s=float(read["runtime"]) / 1000.0,
                         io_bytes=int(read.get("io_bytes", 0)),
                         iops=float(read["iops"]) if "iops" in read else None, depth=depth)
    except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as e:
        raise FioError(f"cannot parse fio JSON: {type(e).__name__}: {e}") from None


def parse_fio_file(path: str | Path) -> FioResult:
    try:
        return parse_fio_json(Path(path).read_text(errors="replace"))
    except FileNotFoundError:
        raise FioError(f"fio wrote no output file {path}") from None
