"""The command line as a user meets it before anything runs: `ringsum --help` grouped and light,
`ringsum bench`'s command lines turned into a config, hyperfine's exports of a kept run, and the
bash and zsh completions made from the parser."""

from __future__ import annotations

import csv
import io
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import bench, completion
from harness.cli.parser import GROUPS, make_parser
from harness.pipeline import exports
from harness.pipeline.config import parse_config

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
KEPT_RUN = REPO / "docs" / "engines" / "engines-run"  # a finished run of 7 rounds, kept under docs/
HEAVY = ("numpy", "pandas", "matplotlib", "harness.pipeline", "harness.check.decide", "analysis.report")


def ringsum(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_help_groups_every_command_and_loads_nothing_heavy() -> None:
    code = ("import sys\nfrom harness.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in {HEAVY!r})))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    out, loaded = r.stdout.split("LOADED")
    assert loaded.strip() == "[]", f"--help loaded {loaded.strip()}"
    for title, commands in GROUPS:
        assert f"\n{title}:\n" in out
        for name, *_ in commands:
            assert f"\n  {name} " in out
    # a usage error is as light, and one line
    r = ringsum("bench")
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("ringsum: ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_every_command_names_a_handler_that_exists() -> None:
    """The parser names each command's function as text: a renamed function must fail here, not at a user."""
    parser = make_parser()
    for _, commands in GROUPS:
        for name, _help, _args, handler in commands:
            verbs = {"history": ["add", "show"]}.get(name, [None])
            for verb in verbs:
                a = parser.parse_args([name, *([verb] if verb else []), *_minimal_args(name)])
                module, function = a.handler.split(":")
                imported = __import__(module, fromlist=[function])
                assert callable(getattr(imported, function)), a.handler


def _minimal_args(name: str) -> list[str]:
    return {"bench": ["true {file}"], "report": ["d"], "compare": ["a", "b"], "collect": ["d"],
            "check": ["--current", "d"], "baseline": ["list"], "bisect": ["--good", "a", "--bad", "b"],
            "wisdom": ["show"], "plan": ["c.toml"]}.get(name, [])


def _bench_args(*argv: str) -> object:
    return make_parser().parse_args(["bench", *argv])


def test_hyperfines_runs_option_is_the_rounds() -> None:
    for argv in (["-r", "7"], ["--runs", "7"], ["--rounds", "7"]):
        assert _bench_args("b3sum {file}", "--size", "1M", *argv).rounds == 7


def test_bench_command_lines_become_the_config_hyperfine_would_run() -> None:
    a = _bench_args("-L", "t", "1,2", "b3sum --num-threads {t} {file}", "sha1sum /data/f", "--file", "/data/f",
                    "-n", "b3", "--reads-only", "sha1sum")
    table = bench.bench_config(a)
    assert table["commands"] == [
        {"name": "b3", "argv": ["b3sum", "--num-threads", "{t}", "{file}"], "params": {"t": ["1", "2"]}, "blake3": True},
        {"name": "sha1sum", "argv": ["sha1sum", "{file}"], "reads_only": True}]
    assert table["baselines"] == {"b3sum": True, "limit": False}
    config = parse_config(bench.tomli_w.dumps(table), "ringsum bench")
    assert [g.name for g in config.groups if g.kind == "command"] == ["b3", "sha1sum"]


@pytest.mark.parametrize("argv, message", [
    (["cat /etc/hostname", "--size", "1M"], "does not read the test file"),
    (["b3sum {file}"], "give the test file"),
    (["-L", "t", "1,2", "b3sum {file}", "--size", "1M"], "no command uses {t}"),
    (["b3sum {file}", "b3sum  {file}", "--size", "1M"], "named twice"),
    (["b3sum 'unclosed {file}", "--size", "1M"], "cannot split it"),
    (["b3sum {file}", "--size", "1M", "--reads-only", "cat"], "no command of that name"),
    (["-L", "file", "1", "b3sum {file}", "--size", "1M"], "as an identifier other than file"),
])
def test_bench_refuses_what_cannot_be_a_config_in_one_line(argv: list[str], message: str, tmp_path: Path) -> None:
    r = ringsum("bench", *argv, "--out", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def _kept_rows() -> dict[str, list[dict[str, str]]]:
    rows: dict[str, list[dict[str, str]]] = {}
    with open(KEPT_RUN / "runs.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["wall_s"]:
                rows.setdefault(r["label"], []).append(r)
    return rows


def test_exports_of_a_kept_run_are_hyperfines_formats_with_its_times() -> None:
    rs = exports.results(KEPT_RUN)
    rows = _kept_rows()
    assert [r.command for r in rs] and {r.command for r in rs} == set(rows)
    doc = json.loads(exports.as_json(rs))
    for result in doc["results"]:
        times = [float(r["wall_s"]) for r in rows[result["command"]]]
        assert result["times"] == times and result["mean"] == pytest.approx(statistics.fmean(times))
        assert result["median"] == pytest.approx(statistics.median(times))
        assert result["stddev"] == pytest.approx(statistics.stdev(times))
        assert set(result) >= {"command", "mean", "stddev", "median", "user", "system", "min", "max", "times",
                                "exit_codes"}
    table = list(csv.reader(io.StringIO(exports.as_csv(rs))))
    assert table[0][:8] == ["command", "mean", "stddev", "median", "user", "system", "min", "max"]
    assert len(table) == len(rs) + 1
    md = exports.as_markdown(rs).splitlines()
    assert md[0] == "| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |" or md[0].startswith("| Command | Mean [s]")
    fastest = min(doc["results"], key=lambda r: r["mean"])["command"]
    assert [line for line in md if line.endswith("| 1.00 |")] == [next(line for line in md if f"`{fastest}`" in line)]


def test_a_json_export_compares_back_against_its_run(tmp_path: Path) -> None:
    """hyperfine's JSON as ringsum writes it is what `ringsum compare` takes as a run: every label matched."""
    export = tmp_path / "run.json"
    export.write_text(exports.as_json(exports.results(KEPT_RUN)))
    r = ringsum("compare", str(export), str(KEPT_RUN))
    assert r.returncode == 0, r.stderr
    assert "not matched" not in r.stdout + r.stderr


def test_an_export_path_that_cannot_be_written_is_said_before_the_run(tmp_path: Path) -> None:
    planted = tmp_path / "planted.json"
    planted.symlink_to(tmp_path / "elsewhere.json")
    for option, path, why in (("--export-json", tmp_path / "no" / "such" / "x.json", "no directory"),
                              ("--export-csv", planted, "symlink")):
        r = ringsum("bench", "b3sum {file}", "--size", "1M", "--dir", str(tmp_path), option, str(path),
                    "--out", str(tmp_path / "out"))
        assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "elsewhere.json").exists() and not (tmp_path / "out").exists()


def _bash_complete(script: Path, *words: str) -> list[str]:
    line = " ".join(f"'{w}'" for w in words)
    code = (f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMPREPLY=(); _ringsum; "
            'printf "%s\\n" "${COMPREPLY[@]}"')
    return subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout.split()


def test_bash_completion_knows_commands_verbs_options_and_choices(tmp_path: Path) -> None:
    script = tmp_path / "ringsum.bash"
    script.write_text(completion.bash(completion.levels(make_parser())))
    assert _bash_complete(script, "ringsum", "b") == ["bench", "baseline", "bisect"]
    assert _bash_complete(script, "ringsum", "run", "--export-") == ["--export-csv", "--export-json", "--export-markdown"]
    assert _bash_complete(script, "ringsum", "wisdom", "f") == ["forget"]
    works = ["cold-file", "cached-file", "cold-tree", "cached-tree"]
    assert _bash_complete(script, "ringsum", "wisdom", "forget", "--work", "c") == works
    assert _bash_complete(script, "ringsum", "compare", "--markdown", str(tmp_path / "ringsum.b")) == [str(script)]


def test_zsh_completion_parses_and_names_every_command_and_option(tmp_path: Path) -> None:
    script = tmp_path / "_ringsum"
    script.write_text(completion.zsh(completion.levels(make_parser())))
    assert subprocess.run(["zsh", "-n", str(script)], capture_output=True, timeout=60).returncode == 0
    text = script.read_text()
    for lv in completion.all_levels(completion.levels(make_parser())):
        assert "_ringsum" + "".join(f"_{p.replace('-', '_')}" for p in lv.path) + "() {" in text
        for option in lv.options:
            assert f"'{option}[" in text


def test_the_estimate_counts_the_warmup_executions(tmp_path: Path) -> None:
    """`--warmup N` runs N untimed executions before each timed one: the plan's estimate counts them."""
    data = tmp_path / "f.bin"
    data.write_bytes(b"\0" * (1 << 20))
    config = tmp_path / "w.toml"
    config.write_text('[run]\nrounds = 3\ncache = "warm"\n\n[[commands]]\nname = "c"\nargv = ["cat", "{file}"]\n\n'
                      "[baselines]\nlimit = false\n")
    timed = {}
    for warmup in (0, 4):
        r = ringsum("plan", str(config), "--file", str(data), "--json", *(["--warmup", str(warmup)] if warmup else []))
        assert r.returncode == 0, r.stderr
        timed[warmup] = json.loads(r.stdout)["estimate"]["timed_s"]
    assert timed[4] > timed[0]
