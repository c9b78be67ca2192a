"""`ringsum check` with the real hashers and real runs: a run against itself is never a change; a
deliberately slowed hasher (O_DIRECT, 4 KiB blocks, queue depth 1, IOSQE_IO_DRAIN) under the
baseline's label is a regression (exit 1); the other way round an improvement (exit 0).

The hasher group has `path` = a wrapper script, so both runs label the command
`ring bs=512K qd=4 buf=4`: the normal wrapper passes its arguments on, the slow one replaces
the knobs. These runs measure time, so they take the machine-wide run lock (no RINGSUM_LOCK).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("RINGSUM_BIN_DIR", REPO / "build" / "bin"))
HASHER = BIN / "liburing_b3sum_singlethread"
LABEL = "ring bs=512K qd=4 buf=4"
MODE = "cold" if os.geteuid() == 0 else "warm"

NORMAL = '#!/bin/sh\nexec "@BIN@" "$@"\n'
SLOW = '#!/bin/sh\nfor file; do :; done\nexec "@BIN@" --direct --block-size 4K --queue-depth 1 --buffers 1 --drain "$file"\n'

CONFIG = """
[run]
rounds = 5
cache = "@MODE@"
file = "@FILE@"
timeout_s = 30
seed = 7

[[hashers]]
name = "ring"
variant = "liburing_b3sum_singlethread"
path = "@WRAPPER@"
block_size = "512K"
queue_depth = 4
trace = false

[baselines]
limit = false
cat = true
fio = { bs = "512K", iodepth = 4, direct = true }
"""


def ringsum(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def write_config(d: Path, name: str, wrapper_text: str, data: Path) -> Path:
    wrapper = d / f"{name}.sh"
    wrapper.write_text(wrapper_text.replace("@BIN@", str(HASHER)))
    wrapper.chmod(0o755)
    cfg = d / f"{name}.toml"
    cfg.write_text(CONFIG.replace("@MODE@", MODE).replace("@FILE@", str(data)).replace("@WRAPPER@", str(wrapper)))
    return cfg


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One real run of the normal and one of the slowed configuration on a 16 MiB file."""
    if not HASHER.is_file():
        pytest.skip(f"{HASHER} not built (make)")
    d = tmp_path_factory.mktemp("check")
    data = d / "data.bin"
    data.write_bytes(os.urandom(16 << 20))
    out = {}
    for name, text in (("normal", NORMAL), ("slow", SLOW)):
        cfg = write_config(d, name, text, data)
        r = ringsum("run", str(cfg), "--out", str(d / name))
        assert r.returncode == 0, r.stdout + r.stderr
        (run_dir,) = (d / name).iterdir()
        out[name] = run_dir
    out["tmp"] = d
    return out


def table_row(stdout: str, label: str) -> str:
    return next(ln for ln in stdout.splitlines() if ln.startswith(label + " "))


def test_run_against_itself_is_never_a_change(runs: dict[str, Path]) -> None:
    """5 cold rounds of a 16 MiB file may leave an interval too wide to tell (inconclusive), but a
    run never reads as slower or faster than itself."""
    r = ringsum("check", "--baseline", str(runs["normal"]), "--current", str(runs["normal"]))
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = "inconclusive" if "inconclusive" in table_row(r.stdout, LABEL) else "no change"
    assert verdict in table_row(r.stdout, LABEL)
    assert f"result: 1 {verdict} -> exit 0" in r.stdout


def test_slowed_hasher_is_a_regression(runs: dict[str, Path]) -> None:
    md, xml = runs["tmp"] / "slow.md", runs["tmp"] / "slow.xml"
    r = ringsum("check", "--baseline", str(runs["normal"]), "--current", str(runs["slow"]),
                "--markdown", str(md), "--junit", str(xml))
    print(r.stdout)
    assert r.returncode == 1, r.stdout + r.stderr
    row = table_row(r.stdout, LABEL)
    assert "regression" in row and "÷cat" in row
    case = next(c for c in ET.parse(xml).getroot().iter("testcase") if c.get("name") == LABEL)
    assert case.find("failure") is not None
    assert f"| {LABEL} | ÷cat |" in md.read_text() and "**regression**" in md.read_text()


def test_faster_hasher_is_an_improvement(runs: dict[str, Path]) -> None:
    r = ringsum("check", "--baseline", str(runs["slow"]), "--current", str(runs["normal"]))
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "improvement" in table_row(r.stdout, LABEL)


def test_too_few_runs_and_missing_reference_on_another_machine(runs: dict[str, Path]) -> None:
    """Exit 2: a current run of 2 rounds; a baseline from another fingerprint without cat or fio."""
    import csv
    import json
    import shutil

    d = runs["tmp"]

    def copy_of(src: Path, name: str, keep: "callable[[dict[str, str]], bool]") -> Path:  # type: ignore[valid-type]
        dst = d / name
        dst.mkdir()
        shutil.copy2(src / "meta.json", dst / "meta.json")
        with open(src / "runs.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        with open(dst / "runs.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(r for r in rows if keep(r))
        return dst

    short = copy_of(runs["normal"], "short", lambda r: int(r["round"]) <= 2)
    r = ringsum("check", "--baseline", str(runs["normal"]), "--current", str(short))
    assert r.returncode == 2 and "too few runs" in table_row(r.stdout, LABEL)

    foreign = copy_of(runs["normal"], "foreign", lambda r: r["tool"] == "hasher")
    meta = json.loads((foreign / "meta.json").read_text())
    meta["fingerprint"]["fingerprint_id"] = "another-machine"
    (foreign / "meta.json").write_text(json.dumps(meta))
    r = ringsum("check", "--baseline", str(foreign), "--current", str(runs["normal"]))
    assert r.returncode == 2 and "not comparable" in table_row(r.stdout, LABEL)
