"""Hostile input: file names that a shell would mangle (spaces, quotes, $(...), ;, newline,
backslash, non-UTF-8 bytes) through the driver and hyperfine, and configs that try shell injection.
Every command is an argv list: a sentinel file that an injected `touch` would create must never
appear. (Files larger than 4 GiB and symlink loops, given to the hashers: test_hostile_files.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hashers_support import MiB, REPO, program
from harness.judge.results import read_records

IS_ROOT = os.geteuid() == 0
MODE = [] if IS_ROOT else ["--warm"]


pytestmark = pytest.mark.usefixtures("own_run_lock")


def ringsum(*args: str | bytes) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300)


# An injected command would run in the driver's working directory (the repository).
HOSTILE_NAME = "we ird 'q\" $(touch pwned) ; `touch pwned` & back\\slash\nnew|line *.bin"


def test_driver_with_a_hostile_file_path_and_hasher_path(tmp_path: Path):
    sentinel = tmp_path / "pwned"
    data = tmp_path / "da ta $(touch pwned)" / HOSTILE_NAME
    data.parent.mkdir()
    hasher = tmp_path / "hash $(touch pwned); x"
    hasher.symlink_to(program("liburing_b3sum_singlethread"))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[run]\nrounds = 2\n[[hashers]]\nname = "weird"\nvariant = "x"\npath = """{hasher}"""\n'
                   '[[hashers]]\nvariant = "b3sum_pread"\n'
                   '[baselines]\nlimit = false\ncat = true\ndd = { bs = ["64K"] }\nb3sum = { num_threads = [1] }\n')
    out = tmp_path / "out $(touch pwned)"
    p = ringsum("run", str(cfg), "--file", str(data), "--size", "1M", "--out", str(out), *MODE)
    assert p.returncode == 0, p.stderr
    assert not any(p.exists() for p in (sentinel, REPO / "pwned", data.parent / "pwned"))
    (rd,) = list(out.iterdir())
    rows = read_records(rd / "runs.csv")
    assert len(rows) >= 2 * 5 and all(r.file == str(data) and r.exit_code == 0 and not r.error for r in rows)
    assert all(r.hash_ok for r in rows if r.tool in ("hasher", "b3sum"))
    assert {r.tool for r in rows} == {"hasher", "cat", "dd", "b3sum"}
    assert all(r.resident_before is not None for r in rows)  # the prepare step found the file too
    assert all(r.bytes == 1 * MiB for r in rows)


def test_fio_with_a_newline_in_the_file_name(tmp_path: Path):
    data = tmp_path / "new\nline.bin"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nrounds = 1\n[baselines]\nlimit = false\nfio = { bs = ["64K"], iodepth = [2], direct = [true] }\n')
    p = ringsum("run", str(cfg), "--file", str(data), "--size", "1M", "--out", str(tmp_path / "out"), *MODE)
    assert p.returncode == 0, p.stderr
    (rd,) = list((tmp_path / "out").iterdir())
    (row,) = read_records(rd / "runs.csv")
    assert row.error == "" and row.fio_bw_Bps > 0


def test_path_that_is_not_utf8_is_refused_before_anything_runs(tmp_path: Path):
    data = os.fsencode(tmp_path) + b"/bad-\xff\xfe.bin"
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nrounds = 1\n[baselines]\nlimit = false\ncat = true\n")
    out = tmp_path / "out"
    p = ringsum("run", str(cfg), "--file", data, "--size", "4K", "--out", str(out), *MODE)
    assert p.returncode == 2
    assert p.stderr.startswith("ringsum: test file b'") and p.stderr.endswith(
        "is not valid UTF-8, which hyperfine cannot pass on; rename it\n")
    assert not out.exists() and not os.path.exists(data)


@pytest.mark.parametrize("field, value, message", [
    ("hasher", "x; touch {sentinel}", "ringsum: hasher binary {cwd}/x; touch {sentinel} not found or not executable"),
    ("hasher", "$(touch {sentinel})", "ringsum: hasher binary {cwd}/$(touch {sentinel}) not found or not executable"),
    ("file", "$(touch {sentinel})", "ringsum: test file not found: {cwd}/$(touch {sentinel})"),
    ("file", "`touch {sentinel}`; true", "ringsum: test file not found: {cwd}/`touch {sentinel}`; true"),
])
def test_config_values_are_never_run_by_a_shell(tmp_path: Path, field: str, value: str, message: str):
    sentinel = tmp_path / "pwned"
    value = value.format(sentinel=sentinel)
    hasher = f'[[hashers]]\nvariant = "x"\npath = """{value}"""\n' if field == "hasher" else ""
    run_file = f'file = """{value}"""\n' if field == "file" else 'file_size = "4K"\n'
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[run]\nrounds = 1\ndata_dir = \"{tmp_path}\"\n{run_file}{hasher}[baselines]\nlimit = false\ncat = true\n")
    p = ringsum("run", str(cfg), "--out", str(tmp_path / "out"), *MODE)
    assert p.returncode == 2
    assert p.stderr.startswith(message.format(cwd=REPO, sentinel=sentinel)), p.stderr
    assert not sentinel.exists()
