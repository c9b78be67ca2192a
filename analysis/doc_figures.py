"""Measured figures in the docs, generated from the run directories kept under docs/: a figure
and the machine it was measured on never drift apart (issue 26).

    python -m analysis.doc_figures [--check] [FILES ...]    (default: README.md, docs/**/*.md)

Three markers, each rewritten in place between its opening and closing comment:

    <!-- fig RUN_DIR QUERY -->0.806 [0.751, 0.867]<!-- /fig -->
    <!-- machine RUN_DIR -->AMD EPYC, ...<!-- /machine -->
    <!-- table RUN_DIR NAME -->
    ...
    <!-- /table -->

RUN_DIR is relative to the repository root and must be a real directory under docs/ (no
symlink on the way). QUERY is shell-quoted words; LABEL is a command's label as in summary.json
(`"uring_b3sum defaults @ram"` under a machine condition), TARGET a LABEL or the word `limit`:

    headline [CONDITION]        the decision of the run's headline, in words
    rounds                      rounds of the headline
    executions                  timed executions in runs.csv
    duration                    wall time of the whole run (meta.json), e.g. "8 min 28 s"
    time TARGET                 median wall time, "0.562 s" (`limit`: the speed limit)
    rate TARGET                 bytes over median wall time, "2.16 GB/s"
    files_per_s LABEL           files hashed per second by median, "22,600"
    ratio LABEL TARGET [DIGITS] paired time ratio, median [interval], "1.10 [0.98, 1.14]"
    wins LABEL OTHER            rounds LABEL took less time than OTHER, "11 of 11"
    vs_b3sum [CONDITION]        the headline's ratio to the fastest b3sum, with its verdict and that b3sum
    share LABEL                 median share of the ring's bytes hashed on every core, "91%"
    limit_set_by [CONDITION]    the reader setting the speed limit most often, "dd bs=2M in 4 of 8 rounds"
    robust                      the robust pick across machine conditions, with its worst ratio

`limit` is the headline's speed limit, `limit@COND` a machine condition's (time, rate); as a ratio's
reference, the command's own condition's. Ratios are stats.RATIO_CONVENTION's. Tables (NAME):
`paired` (analysis/paired_table.py, per condition), `tuned` (its --tuned: a row a condition),
`conditions` (each condition's best, the robust pick), `ranking` (by median); for docs/ledger, `ledger`
(a row a machine x kind of work) and `gate` (the check's power). `--check` exits 1 naming stale regions.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path

import pandas as pd

from analysis import gate, ledger, paired_table
from analysis.chart_data import size_text as _size_text
from harness.judge.load import RunDirError, load_run
from harness import stats

REPO_ROOT = Path(__file__).resolve().parent.parent
# One marker: its kind, its arguments, and the value the generator owns (fig and machine on one line).
MARKER = re.compile(r"<!-- (?P<kind>fig|machine|table) (?P<args>[^\n]*?) -->(?P<value>.*?)<!-- /(?P=kind) -->", re.S)
LIMIT = "limit"
DOCUMENTS = ("summary.json", "meta.json", "runs.csv")  # what a figure may read of a kept run


class FigureError(ValueError):
    """A marker that cannot be filled; the message says why, the caller adds file and line."""


@dataclass
class KeptRun:
    """A run directory kept under docs/: summary.json and meta.json read at once, runs.csv when needed."""

    path: Path
    summary: dict
    meta: dict

    @cached_property
    def executions(self) -> pd.DataFrame:
        """Every timed execution of runs.csv."""
        return load_run(self.path).runs

    @cached_property
    def rounds_table(self) -> pd.DataFrame:
        """Successful executions only, as every ratio of the harness counts them (NA: no hash)."""
        runs = self.executions
        return runs[(runs["exit_code"] == 0) & runs["hash_ok"].fillna(True).astype(bool)]

    def wall(self, label: str) -> pd.Series:
        """Median wall time per round of one command (the rounds index the pairing)."""
        rows = self.rounds_table[self.rounds_table["label"] == label]
        if not len(rows):
            raise FigureError(f"no command {label!r} in {self.path}/runs.csv{self._labels_hint()}")
        return rows.groupby("round")["wall_s"].median().astype("float64")

    def command(self, label: str) -> dict:
        for command in self.summary.get("commands", []):
            if command["label"] == label:
                return command
        raise FigureError(f"no command {label!r} in {self.path}/summary.json{self._labels_hint()}")

    def headline(self, condition: str | None = None) -> dict:
        if condition is None:
            return self.summary["headline"]
        for headline in self.summary.get("headlines", []):
            if headline.get("condition") == condition:
                return headline
        raise FigureError(f"no condition {condition!r} in {self.path}/summary.json "
                          f"(it has: {', '.join(self.summary['conditions']['names'])})")

    def speed_limit(self, condition: str | None = None) -> dict:
        limit = self.headline(condition).get("speed_limit")
        if not limit:
            raise FigureError(f"{self.path} has no speed limit (no plain reader ran)")
        return limit

    def _labels_hint(self) -> str:
        return f" (it has: {', '.join(sorted(c['label'] for c in self.summary.get('commands', [])))})"


@dataclass
class Generator:
    """Fills markers of the files under one repository root, reading each kept run once."""

    root: Path
    runs: dict[str, KeptRun] = field(default_factory=dict)

    def run(self, run_dir: str) -> KeptRun:
        if run_dir not in self.runs:
            path = self._checked(run_dir)
            try:
                summary, meta = (json.loads((path / name).read_text(encoding="utf-8")) for name in DOCUMENTS[:2])
            except (OSError, ValueError) as e:
                raise FigureError(f"run directory {run_dir}: {e}") from e
            self.runs[run_dir] = KeptRun(path, summary, meta)
        return self.runs[run_dir]

    def _checked(self, run_dir: str, documents: tuple[str, ...] = DOCUMENTS) -> Path:
        """Only real directories and files under docs/: a symlink could make a doc quote any file's numbers."""
        path = self.root / run_dir
        for step in [*(path / name for name in documents), path, *path.parents]:
            if step == self.root:
                break
            if step.is_symlink():
                raise FigureError(f"run directory {run_dir}: {step.relative_to(self.root)} is a symlink")
        if not path.resolve().is_relative_to((self.root / "docs").resolve()):
            raise FigureError(f"run directory {run_dir}: not under docs/")
        if documents and not (path / "summary.json").is_file():
            raise FigureError(f"run directory {run_dir}: no summary.json (not a kept run)")
        return path

    def fill(self, kind: str, args: str) -> str:
        words = _words(args)
        if not words:
            raise FigureError(f"{kind} marker without a run directory")
        if kind == "table" and len(words) == 2 and words[1] in LEDGER_TABLES:  # a directory of machines' runs
            return "\n" + LEDGER_TABLES[words[1]](self._checked(words[0], ()), words[0]).rstrip("\n") + "\n"
        run = self.run(words[0])
        if kind == "machine":
            if len(words) != 1:
                raise FigureError(f"machine marker takes only the run directory, got {args!r}")
            return machine_line(words[0], run)
        if kind == "table":
            if len(words) != 2 or words[1] not in TABLES:
                raise FigureError(f"table marker wants RUN_DIR NAME, NAME one of {', '.join(TABLES)}: {args!r}")
            return "\n" + TABLES[words[1]](words[0], run).rstrip("\n") + "\n"
        return figure(run, words[1:])

    def rewrite(self, text: str, file: Path) -> tuple[str, list[str]]:
        """The text with every marker filled, and the regions whose value changed ('file:line: marker')."""
        stale = []

        def replace(match: re.Match) -> str:
            line = text.count("\n", 0, match.start()) + 1
            try:
                if match["kind"] != "table" and "\n" in match["value"]:
                    raise FigureError(f"{match['kind']} marker not closed on its own line")
                value = self.fill(match["kind"], match["args"])
            except (FigureError, RunDirError, ledger.LedgerError, gate.GateError) as e:
                raise FigureError(f"{file}:{line}: {e}") from None
            except (KeyError, TypeError) as e:  # a summary.json of another shape than the schema's
                raise FigureError(f"{file}:{line}: {match['args'].split()[0]}: summary.json has no {e}") from None
            if value != match["value"]:
                stale.append(f"{file}:{line}: out of date: <!-- {match['kind']} {match['args']} -->")
            return f"<!-- {match['kind']} {match['args']} -->{value}<!-- /{match['kind']} -->"

        return MARKER.sub(replace, text), stale


def _words(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError as e:
        raise FigureError(f"bad query {args!r}: {e}") from None


# --- figures ---

def size_text(n: int) -> str:
    """1073741824 -> '1 GiB'."""
    text = _size_text(n)
    return text if " " in text else text[:-3] + " " + text[-3:]


def _seconds(value: float) -> str:
    return f"{value:.3f} s"


def _rate(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.2f} GB/s"


def _split_limit(target: str) -> tuple[bool, str | None]:
    """('limit' or 'limit@COND') -> (True, COND or None); a label -> (False, None)."""
    if target == LIMIT or target.startswith(LIMIT + "@"):
        return True, target.partition("@")[2] or None
    return False, None


def _median_of(run: KeptRun, label: str, column: str) -> float:
    """The median of one runs.csv column over a command's successful executions."""
    run.wall(label)  # raises, naming the commands there are, when it has none
    values = run.rounds_table.loc[run.rounds_table["label"] == label, column]
    if values.isna().all():
        raise FigureError(f"no {column} for {label!r} in {run.path}/runs.csv")
    return float(values.median())


def _ratio(run: KeptRun, label: str, reference: str, digits: int) -> str:
    if _split_limit(label)[0]:
        raise FigureError("ratio: the first term is a command's label, the reference may be `limit`")
    is_limit, condition = _split_limit(reference)
    if is_limit:
        if condition:
            raise FigureError("ratio to the limit: the command's own condition's limit is used; write `limit`")
        return _estimate(run.command(label).get("vs_limit"), digits)
    return stats.paired_ratio(*_paired(run, label, reference)).text(digits)


def _paired(run: KeptRun, label: str, other: str) -> tuple[pd.Series, pd.Series]:
    both = pd.concat([run.wall(label).rename("a"), run.wall(other).rename("b")], axis=1)
    return both["a"], both["b"]


def _wins(run: KeptRun, label: str, other: str) -> str:
    a, b = _paired(run, label, other)
    common = a.notna() & b.notna()
    return f"{int((a[common] < b[common]).sum())} of {int(common.sum())}"


def _duration(run: KeptRun) -> str:
    times = [run.meta.get(k) for k in ("started_at", "finished_at")]
    if not all(times):
        raise FigureError(f"{run.path}/meta.json has no start and finish time")
    started, finished = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in times)
    minutes, seconds = divmod(round((finished - started).total_seconds()), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def _robust(run: KeptRun) -> str:
    pick = run.summary["conditions"].get("robust_pick")
    if not pick:
        raise FigureError(f"{run.path} has no robust pick (one machine condition)")
    name = pick["configuration"]
    cells = [c for c in pick["cells"] if c["configuration"] == name]
    held = sum(1 for c in cells if c["tie_with_best"])
    worst = stats.Estimate(**pick["worst_vs_best"])
    return (f"{name}: at worst {worst.text(3)} x the time of the condition's best "
            f"({pick['worst_condition']}); tied with or the best in {held} of {len(cells)} conditions")


def _limit_set_by(run: KeptRun, condition: str | None) -> str:
    limit = run.speed_limit(condition)
    return f"{limit['set_by']} in {limit['set_by_rounds']} of {limit['interval_s']['n']} rounds"


def _headline(run: KeptRun, condition: str | None) -> str:
    decision = run.headline(condition).get("decision")
    if not decision:
        raise FigureError(f"{run.path}: the headline has no decision (a run from before decisions)")
    return decision["text"]


def _time(run: KeptRun, target: str) -> str:
    is_limit, condition = _split_limit(target)
    return _seconds(run.speed_limit(condition)["limit_s"] if is_limit else run.command(target)["median_s"])


def _rate_of(run: KeptRun, target: str) -> str:
    is_limit, condition = _split_limit(target)
    if is_limit:
        return _rate(run.speed_limit(condition)["limit_Bps"])
    return _rate(_median_of(run, target, "bytes") / run.command(target)["median_s"])


def _files_per_s(run: KeptRun, label: str) -> str:
    per_s = _median_of(run, label, "files") / run.command(label)["median_s"]
    return f"{float(f'{per_s:.3g}'):,.0f}"


def _share(run: KeptRun, label: str) -> str:
    if "effective_parallel_share" not in run.rounds_table:
        raise FigureError(f"no effective_parallel_share in {run.path}/runs.csv")
    share = _median_of(run, label, "effective_parallel_share")
    return f"{share:.0%}" if share < 0.995 or share == 1 else f"{share:.1%}"


def _digits(words: list[str]) -> int:
    if not words or (len(words) == 1 and words[0].isdigit()):
        return int(words[0]) if words else 2
    raise FigureError(f"ratio: unexpected {' '.join(words)!r} (an optional number of digits)")


def _vs_b3sum(run: KeptRun, condition: str | None) -> str:
    """The headline's own comparison with the fastest b3sum, at the run's confidence, as its verdict says."""
    versus = run.headline(condition).get("vs_b3sum") or {}
    if not versus.get("ratio"):
        raise FigureError(f"no b3sum in the headline of {run.path}")
    return f"{_estimate(versus['ratio'])} ({versus['outcome']}, against {versus['label']})"


# name -> (how many words it takes at least and at most, what it computes)
FIGURES = {
    "headline": (0, 1, lambda run, w: _headline(run, w[0] if w else None)),
    "rounds": (0, 0, lambda run, w: str(run.headline()["rounds"])),
    "executions": (0, 0, lambda run, w: f"{len(run.executions):,}"),
    "duration": (0, 0, lambda run, w: _duration(run)),
    "time": (1, 1, lambda run, w: _time(run, w[0])),
    "rate": (1, 1, lambda run, w: _rate_of(run, w[0])),
    "files_per_s": (1, 1, lambda run, w: _files_per_s(run, w[0])),
    "ratio": (2, 3, lambda run, w: _ratio(run, w[0], w[1], _digits(w[2:]))),
    "vs_b3sum": (0, 1, lambda run, w: _vs_b3sum(run, w[0] if w else None)),
    "wins": (2, 2, lambda run, w: _wins(run, w[0], w[1])),
    "share": (1, 1, lambda run, w: _share(run, w[0])),
    "limit_set_by": (0, 1, lambda run, w: _limit_set_by(run, w[0] if w else None)),
    "robust": (0, 0, lambda run, w: _robust(run)),
}


def figure(run: KeptRun, query: list[str]) -> str:
    if not query:
        raise FigureError(f"fig marker without a query (one of: {', '.join(FIGURES)})")
    name, words = query[0], query[1:]
    if name not in FIGURES:
        raise FigureError(f"unknown figure {name!r} (one of: {', '.join(FIGURES)})")
    least, most, compute = FIGURES[name]
    if not least <= len(words) <= most:
        count = str(least) if least == most else f"{least} to {most}"
        raise FigureError(f"{name} takes {count} words after it, got {len(words)}: {shlex.join(query)}")
    return compute(run, words)


# --- the machine line and the tables ---

def machine_line(run_dir: str, run: KeptRun) -> str:
    fp = run.meta.get("fingerprint") or {}
    headline = run.summary["headline"]
    l2 = fp.get("l2_cache_bytes")
    disk = f"{fp.get('fs_type', '?')} on {fp.get('source', '?')} ({fp.get('device_driver') or 'unknown driver'})"
    what = (f"{headline['files']:,} files, {size_text(headline['file_size'])} in all" if headline.get("files", 1) > 1
            else f"a {size_text(headline['file_size'])} file")
    where = f", {headline['condition']}" if len(run.summary["conditions"]["names"]) > 1 else ""
    limit = headline.get("speed_limit")
    read = (f"its fastest plain read of {what} ({headline['cache']}{where}) {_rate(limit['limit_Bps'])}"
            if limit else f"no plain read in this run ({what}, {headline['cache']})")
    return (f"`{run_dir}` ({str(run.meta.get('started_at', '?'))[:10]}): {fp.get('cpu_model', '?')}, "
            f"BLAKE3 SIMD {str(fp.get('blake3_simd', '?')).upper()}, "
            f"{f'L2 {l2 >> 10} KiB per core' if l2 else 'L2 not recorded'}, {fp.get('cores', '?')} cores; {disk}, "
            f"{read}; fingerprint `{fp.get('fingerprint_id', '?')}`")


def _conditions_table(run_dir: str, run: KeptRun) -> str:
    lines = [f"- **robust pick**: {_robust(run)}", "",
             "| condition | speed limit | best hasher | × limit | × b3sum |", "| --- | ---: | --- | ---: | --- |"]
    for headline in run.summary["headlines"]:
        limit = headline.get("speed_limit")
        limit_text = f"{_seconds(limit['limit_s'])} = {_rate(limit['limit_Bps'])}" if limit else "-"
        b3sum = headline.get("vs_b3sum")
        b3sum_text = f"{_estimate(b3sum['ratio'])} ({b3sum['outcome']})" if b3sum else "-"
        use = (headline.get("use") or "-").removesuffix(f" @{headline['condition']}")
        lines.append(f"| {headline['condition']} | {limit_text} | {use} | {_estimate(headline.get('vs_limit'))} | "
                     f"{b3sum_text} |")
    return "\n".join(lines)


def _ranking_table(run_dir: str, run: KeptRun) -> str:
    lines = ["| command | median | GB/s | × limit |", "| --- | ---: | ---: | ---: |"]
    for command in sorted((c for c in run.summary["commands"] if c.get("median_s") is not None),
                          key=lambda c: c["median_s"]):
        lines.append(f"| {command['label']} | {_seconds(command['median_s'])} | "
                     f"{_rate_of(run, command['label']).removesuffix(' GB/s')} | {_estimate(command.get('vs_limit'))} |")
    return "\n".join(lines)


def _estimate(values: dict | None, digits: int = 2) -> str:
    return stats.Estimate(**values).text(digits) if values and values.get("median") is not None else "-"


LEDGER_TABLES = {"ledger": ledger.table, "gate": gate.table}  # analysis/ledger.py, analysis/gate.py
TABLES = {"paired": lambda run_dir, run: paired_table.table(run.path, shown_as=run_dir),
          "tuned": lambda run_dir, run: paired_table.tuned_table(run.path, shown_as=run_dir),
          "conditions": _conditions_table, "ranking": _ranking_table}


def default_files(root: Path) -> list[Path]:
    readme = root / "README.md"
    return ([readme] if readme.is_file() else []) + sorted((root / "docs").glob("**/*.md"))


def process(files: list[Path], root: Path, check: bool) -> list[str]:
    """Rewrite (or with check, only compare) every file; the stale regions found. Raises
    FigureError on the first marker that cannot be filled, before any file is written."""
    generator = Generator(root)
    rewritten, stale = {}, []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise FigureError(f"{path}: unreadable ({e})") from None
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        new_text, changed = generator.rewrite(text, shown)
        stale += changed
        if new_text != text:
            rewritten[path] = new_text
    if not check:
        for path, text in rewritten.items():
            path.write_text(text, encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path, metavar="FILE", help="Markdown files (default: README.md, docs/**/*.md)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a region is out of date")
    ap.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root the run directories are under")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    files = [f.resolve() for f in args.files] or default_files(root)
    try:
        stale = process(files, root, args.check)
    except FigureError as e:
        print(f"fatal: {e}", file=sys.stderr)
        return 1
    if args.check and stale:
        print("\n".join(stale + ["run `make docs` (python -m analysis.doc_figures) to regenerate"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
