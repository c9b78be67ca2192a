"""A user's own hyperfine export (`hyperfine --export-json`) as the baseline of `ringsum check` and
the first run of `ringsum compare`: a real ringsum run of uring_b3sum, and real hyperfine runs of
the same command line, once named by the ringsum label and once only by the command."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

from hashers_support import REPO, data_file, ringsum

CONFIG = """
[run]
rounds = 8
cache = "warm"
file = "@FILE@"
timeout_s = 30

[[hashers]]
variant = "uring_b3sum"

[baselines]
limit = false
"""


def _run(tmp_path: Path) -> tuple[Path, str, list[str]]:
    config = tmp_path / "c.toml"
    config.write_text(CONFIG.replace("@FILE@", str(data_file(8 << 20))))
    p = ringsum("run", str(config), "--out", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    (run_dir,) = (tmp_path / "r").iterdir()
    (command,) = json.loads((run_dir / "plan.json").read_text())["commands"]
    return run_dir, command["label"], command["argv"]


def _hyperfine(tmp_path: Path, argv: list[str], name: str | None, file: str) -> Path:
    out = tmp_path / f"{file}.json"
    named = ["-n", name] if name else []
    hyperfine = shutil.which("hyperfine") or str(REPO / ".tools" / "bin" / "hyperfine")
    subprocess.run([hyperfine, "-N", "--warmup", "1", "--runs", "8", "--output", "null", "--export-json", str(out),
                    *named, shlex.join(argv)], check=True, capture_output=True, timeout=120)
    return out


def test_a_hyperfine_export_is_a_baseline_for_check_and_compare(tmp_path):
    run_dir, label, argv = _run(tmp_path)
    by_name = _hyperfine(tmp_path, argv, label, "named")
    p = ringsum("check", "--baseline", str(by_name), "--current", str(run_dir))
    # hyperfine alone and ringsum time the same program differently (start-up, cache, settings): the
    # verdict may go either way; what must hold is that the export's times were compared as a run's
    assert p.returncode in (0, 1, 2) and not p.stderr, p.stdout + p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith(label))
    assert " raw " in row and "%" in row, row
    assert "a hyperfine export, which names no machine" in p.stdout
    # the same program and options, from another directory, on a copy of the file elsewhere
    (tmp_path / "bin").mkdir()
    program = Path(shutil.copy2(argv[0], tmp_path / "bin"))
    elsewhere = Path(shutil.copy2(argv[-1], tmp_path / "elsewhere.bin"))
    by_argv = _hyperfine(tmp_path, [str(program), *argv[1:-1], str(elsewhere)], None, "unnamed")
    p = ringsum("compare", str(by_argv), str(run_dir))
    assert p.returncode == 0, p.stdout + p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith(label))
    assert any(v in row for v in ("faster", "slower", "no change", "inconclusive")), p.stdout
    assert "not compared" not in p.stdout


def test_an_export_of_other_commands_or_no_export_is_one_line(tmp_path):
    run_dir, _label, _argv = _run(tmp_path)
    other = _hyperfine(tmp_path, ["true"], None, "other")
    p = ringsum("compare", str(other), str(run_dir))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "matches a command of" in p.stderr, p.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": 3')
    p = ringsum("check", "--baseline", str(broken), "--current", str(run_dir))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a hyperfine export" in p.stderr, p.stderr
