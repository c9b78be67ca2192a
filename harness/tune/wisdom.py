"""uring_b3sum's wisdom: the choices `ringsum tune --install` measured, one record a line, keyed by
what a choice depends on (hashers/wisdom.c reads them; FFTW keeps wisdom for its plans the same way):

    cpu=25/1/1 simd=8 device=vda work=cold-file measured=2026-11-27T12:00:00Z by=tune-20261127T120000Z options=--queue-depth 16

cpu: /proc/cpuinfo's family/model/stepping; simd: the SIMD degree BLAKE3 runs at in that build;
device: the block device under the file; work: a cold file, a cached file or a tree (many files).
A record holds only the knobs its kind of work decides (the knob table's "wisdom" column) whose value
differs from uring_b3sum's own default; empty options say the defaults measured best. A new record
replaces the one of the same key and work; nothing else is touched. Sweeps never read the file
(URING_B3SUM_WISDOM=/dev/null): what a config says is what runs.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.catalog.knobs import KnobTable, load_knobs
from harness.pipeline.plan import knob_word
from harness import stats
from harness.tune.settings import RETIRED_WORKS, WORKS

ENV = "URING_B3SUM_WISDOM"
HEADER = ("# uring_b3sum's wisdom: choices measured on this machine (ringsum tune --install); one record a line,\n"
          "# keyed by CPU, SIMD degree, device and kind of work. `ringsum wisdom show` lists, `forget` drops them.\n")


class WisdomError(Exception):
    """A wisdom file or a tune that cannot be read or written; the message names it."""


@dataclass(frozen=True)
class Record:
    key: str  # "cpu=25/1/1 simd=8 device=vda"
    work: str  # one of WORKS
    measured: str  # UTC, ISO 8601
    by: str  # the tune directory's name
    options: tuple[str, ...]  # long options and values, as uring_b3sum takes them

    def line(self) -> str:
        return (f"{self.key} work={self.work} measured={self.measured} by={self.by} "
                f"options={' '.join(self.options)}").rstrip()

    @property
    def machine(self) -> str:
        """The key without the device: "cpu=25/1/1 simd=8"."""
        return " ".join(w for w in self.key.split() if not w.startswith("device="))


def wisdom_path() -> Path:
    """Where uring_b3sum reads its wisdom: $URING_B3SUM_WISDOM, else the user's config directory."""
    named = os.environ.get(ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ringsum" / "wisdom"


def parse_line(line: str, where: str) -> Record:
    head, sep, options = line.partition(" options=")
    fields = dict(w.split("=", 1) for w in head.split() if "=" in w)
    missing = [k for k in ("cpu", "simd", "device", "work", "measured") if k not in fields]
    if not sep or missing or fields["work"] not in WORKS + RETIRED_WORKS:
        raise WisdomError(f"{where}: not a wisdom record (cpu= simd= device= work= measured= ... options=)")
    return Record(f"cpu={fields['cpu']} simd={fields['simd']} device={fields['device']}", fields["work"],
                  fields["measured"], fields.get("by", ""), tuple(options.split()))


def read_records(path: Path) -> list[Record]:
    """The records of a wisdom file, in order; none when it does not exist."""
    if path.is_symlink():
        raise WisdomError(f"{path}: a symlink; wisdom is not read or written through one")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as e:
        raise WisdomError(f"{path}: {e}") from None
    return [parse_line(line, f"{path}:{i}") for i, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.startswith("#")]


def write_records(path: Path, records: list[Record]) -> None:
    """The whole file, replaced at once (a reader sees the old one or the new one)."""
    if path.is_symlink() or path.parent.is_symlink():
        raise WisdomError(f"{path}: a symlink on the way; wisdom is not written through one")
    if path.exists() and not path.is_file():
        raise WisdomError(f"{path}: not a regular file (wisdom is off where {ENV}={os.devnull}); nothing written")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".new")
        tmp.unlink(missing_ok=True)
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(HEADER + "".join(r.line() + "\n" for r in records))
        os.replace(tmp, path)
    except OSError as e:
        raise WisdomError(f"{path}: {e.strerror or e}") from None


def key_of(program: Path, path: Path) -> str:
    """What uring_b3sum keys a record for `path` by (uring_b3sum --wisdom-key)."""
    try:
        out = subprocess.run([str(program), "--wisdom-key", "--", str(path)], capture_output=True, text=True,
                             timeout=30, env={**os.environ, ENV: os.devnull, "URING_B3SUM_OPTIONS": os.devnull})
    except OSError as e:
        raise WisdomError(f"{program}: {e.strerror or e}") from None
    if out.returncode != 0 or not out.stdout.startswith("cpu="):
        raise WisdomError(f"{program} --wisdom-key: {(out.stderr or out.stdout).strip() or f'exit {out.returncode}'}")
    return out.stdout.strip()


def work_of(cache: str, is_tree: bool) -> str:
    """The kind of work a tune measured: a record of it is applied to that kind alone."""
    return f"{'cold' if cache == 'cold' else 'cached'}-{'tree' if is_tree else 'file'}"


def _resolved(default: Any, knobs: dict[str, Any]) -> Any:
    """A buffer count's default, "2*queue_depth", for these knobs' depth."""
    if isinstance(default, str) and default.endswith("queue_depth"):
        return int(default.partition("*")[0] if "*" in default else 1) * int(knobs["queue_depth"])
    return default


def record_options(knobs: dict[str, Any], work: str, variant: str, table: KnobTable) -> tuple[str, ...]:
    """The knobs a record of this work may hold, where they differ from the variant's own default (a
    flag the variant has on by default cannot be turned off by an option, so it is not recorded)."""
    out: list[str] = []
    for k in table:
        if work not in k.wisdom or k.name not in knobs:
            continue
        default, value = _resolved(dict(k.variant_defaults).get(variant, k.default), knobs), knobs[k.name]
        if k.is_flag and value and not default:
            out.append(k.option)
        elif not k.is_flag and value != default:
            out += [k.option, knob_word(k, value)]
    return tuple(out)


# A tune's pick is recorded only where its time over the defaults', paired per final round, has its
# interval below 1, over rounds enough for that interval to cover this much: a record must never
# make its own kind of work slower (on add026ac3c38 a cached tree's tune picked 32 deep and 32
# buffers, 1.25 x the defaults' time after: docs/wisdom/README.md).
MIN_COVERAGE = 0.9


def _below_one(versus: dict[str, Any]) -> bool:
    """The interval of the pick's time over the defaults' lies below 1 (NaN: it does not)."""
    high = versus.get("high")
    return high is not None and high == high and high < 1


def beats_defaults(versus: dict[str, Any] | None) -> bool:
    """Whether the pick was faster than the defaults: the interval of its time over theirs below 1.
    A tune from before the final stage ran the defaults (None) is taken as it was."""
    if versus is None:
        return True
    return _below_one(versus) and (versus.get("confidence") or 0) >= MIN_COVERAGE


def not_faster_because(versus: dict[str, Any]) -> str:
    """Why a pick's race against the defaults did not show it faster: its interval reaches 1, or its
    rounds were too few for an interval of MIN_COVERAGE."""
    if _below_one(versus):
        return (f"{versus.get('n')} rounds give an interval of {versus.get('confidence') or 0:.1%}, under the "
                f"{MIN_COVERAGE:.0%} a record needs")
    return "its interval reaches 1"


def why_defaults(tune_dir: Path) -> str:
    """Why a finished tune's record holds the defaults, when the race against them is the reason."""
    try:
        versus = json.loads((tune_dir / "tune.json").read_text(encoding="utf-8")).get("best_default_vs_defaults")
    except (OSError, ValueError):
        return ""
    if beats_defaults(versus):
        return ""
    return (f" (its pick took {stats.Estimate(**versus).text(2)} x the defaults' time in the final stage: "
            f"not clearly faster: {not_faster_because(versus)})")


def install(tune_dir: Path, path: Path | None = None, bin_dir: Path | None = None) -> Record:
    """A finished tune's best uring_b3sum setting as the record of its kind of work, replacing the one of
    the same key and work."""
    try:
        tune = json.loads((tune_dir / "tune.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise WisdomError(f"{tune_dir}/tune.json: {getattr(e, 'strerror', None) or e}") from None
    best = tune.get("best_default_knobs")
    if not tune.get("best_default"):
        raise WisdomError(f"{tune_dir}: the tune ranked no uring_b3sum setting: nothing to install")
    if best is None or not tune.get("wisdom_key"):
        raise WisdomError(f"{tune_dir}/tune.json predates wisdom (no wisdom_key): run the tune again")
    work = tune["work"]
    options = (record_options(best, work, tune["best_default_variant"], load_knobs(bin_dir))
               if beats_defaults(tune.get("best_default_vs_defaults")) else ())
    record = Record(tune["wisdom_key"], work, tune["finished_at"], tune_dir.name, options)
    where = path or wisdom_path()
    kept = [r for r in read_records(where) if (r.key, r.work) != (record.key, record.work)]
    write_records(where, kept + [record])
    return record


def forget(path: Path | None = None, work: str | None = None, machine: str | None = None) -> list[Record]:
    """Drop the records (of one kind of work, of one machine: "cpu=.. simd=.."); return those dropped."""
    where = path or wisdom_path()
    records = read_records(where)
    gone = [r for r in records if (work is None or r.work == work) and (machine is None or r.machine == machine)]
    if gone:
        write_records(where, [r for r in records if r not in gone])
    return gone


def show(path: Path | None = None, machine: str | None = None) -> list[str]:
    """The records for a person, marking those of this machine."""
    where = path or wisdom_path()
    records = read_records(where)
    lines = [f"wisdom: {where} ({len(records)} record{'s' if len(records) != 1 else ''}; "
             f"uring_b3sum --verbose says which it uses)"]
    for r in records:
        here = "  (this machine)" if machine and r.machine == machine else ""
        if r.work in RETIRED_WORKS:
            here += f"  (not used: from before cold and cached trees were told apart; forget --work {r.work})"
        lines.append(f"  {r.work:<11} {r.key}  measured {r.measured} by {r.by or '?'}: "
                     f"{' '.join(r.options) or 'the defaults'}{here}")
    return lines
