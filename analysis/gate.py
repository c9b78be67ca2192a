"""The regression check's power on every machine met: the kept studies of `make check-power`
(docs/ledger/<fingerprint id>/check-power/<study>/, harness/check/power.py --keep), one row a
machine x injected condition: how many real checks caught it (exit 1), by which signal, and how
many of the checks resampled from the same rounds did, against the gate's targets.

    <!-- table docs/ledger gate -->   in docs/ledger/README.md (analysis/doc_figures.py)
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.check.power import CONDITIONS, RESAMPLED, VERDICTS, caught_by

# The gate's targets (issue "gate"): an identical build flagged at most 1% of the time; 5% more CPU
# work caught at least 90%; 10% and 20%, one read at a time and O_DIRECT dropped, always.
TARGETS = {"unchanged": ("<=", 0.01), "slow5": (">=", 0.90), "slow10": (">=", 1.0), "slow20": (">=", 1.0),
           "depth1": (">=", 1.0), "buffered": (">=", 1.0)}
SIGNALS = ({"instructions"}, {"counters"}, {"pooled", "any"})  # the table's columns: by instructions / counters / wall time


class GateError(ValueError):
    """A kept study that cannot be read; the message names it."""


def _studies(ledger: Path) -> list[tuple[str, Path]]:
    if ledger.is_symlink() or not ledger.is_dir():
        raise GateError(f"{ledger}: not a directory")
    return [(machine.name, study) for machine in sorted(p for p in ledger.iterdir() if p.is_dir() and not p.is_symlink())
            for study in sorted((machine / "check-power").glob("*/")) if (study / VERDICTS).is_file()]


def _rate(caught: int, n: int) -> str:
    return f"{caught}/{n} ({caught / n:.1%})" if n else "-"


def table(ledger: Path, shown_as: str = "docs/ledger") -> str:
    """One row a machine x condition, over every kept study of that machine."""
    rows: dict[tuple[str, str], dict] = {}
    for machine, study in _studies(ledger):
        try:
            verdicts = json.loads((study / VERDICTS).read_text(encoding="utf-8"))
            resampled = json.loads((study / RESAMPLED).read_text()) if (study / RESAMPLED).is_file() else None
        except (OSError, ValueError) as e:
            raise GateError(f"{shown_as}/{machine}/check-power/{study.name}: {e}") from e
        for v in verdicts:
            row = rows.setdefault((machine, v["condition"]), {"real": [], "resampled": [], "rounds": set()})
            row["real"].append(v)
        for name, codes in ((resampled or {}).get("exit_codes") or {}).items():
            rows.setdefault((machine, name), {"real": [], "resampled": [], "rounds": set()})["resampled"] += codes
            rows[(machine, name)]["rounds"].add(resampled["rounds"])
    if not rows:
        raise GateError(f"{ledger}: no kept check-power study (make check-power keeps one)")
    out = ["| machine | condition | injected | real checks caught | by instructions / counters / wall time | "
           "resampled checks caught | target | met |", "|---|---|---|---:|---:|---:|---|---|"]
    order = list(CONDITIONS)
    for (machine, name), row in sorted(rows.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        real = row["real"]
        caught = sum(v["exit_code"] == 1 for v in real)
        by = [sum(bool(signals & caught_by(v)) for v in real) for signals in SIGNALS]
        res_caught = sum(c == 1 for c in row["resampled"])
        sense, target = TARGETS[name]
        rates = [caught / len(real)] if real else []
        rates += [res_caught / len(row["resampled"])] if row["resampled"] else []
        met = all(r <= target if sense == "<=" else r >= target for r in rates) if rates else False
        out.append(f"| `{machine}` | {name} | {CONDITIONS[name] or 'nothing (an identical build)'} | "
                   f"{_rate(caught, len(real))} | {' / '.join(map(str, by))} | "
                   f"{_rate(res_caught, len(row['resampled']))}"
                   f"{' of ' + '/'.join(map(str, sorted(row['rounds']))) + ' rounds' if row['rounds'] else ''} | "
                   f"{'at most' if sense == '<=' else 'at least'} {target:.0%} | {'yes' if met else 'NO'} |")
    return "\n".join(out) + "\n"
