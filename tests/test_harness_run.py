"""End to end with the real tools on small files: a full run directory, a wrong hash failing the
run, a hanging command, and resume after SIGKILL."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.catalog.knobs import load_knobs
from harness.judge.results import columns, read_runs

REPO = Path(__file__).resolve().parent.parent
B3SUM_LOCAL = REPO / ".tools" / "bin" / "b3sum"
VARIANTS = ("liburing_b3sum_singlethread", "liburing_b3sum_multithread", "b3sum_pread")
IS_ROOT = os.geteuid() == 0
MODE_ARGS = [] if IS_ROOT else ["--warm"]  # cold mode needs root

FAKE_HASHER = r"""#!/bin/sh
# A stand-in hasher with the real CLI: hashes with b3sum, or prints a WRONG hash in b3sum format.
# WRONG=always|trace|never
trace=""; file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --help) echo "usage: $0 [--block-size N] [--queue-depth N] [--buffers N] [--trace FILE] FILE"; exit 0;;
    --block-size|--queue-depth|--buffers) shift 2;;
    --trace) trace="$2"; shift 2;;
    --*) shift;;
    *) file="$1"; shift;;
  esac
done
if [ -n "$trace" ]; then
  printf 'time_ns,in_flight,reaped,blocks_hashed,bytes_hashed\n1,1,1,1,4096\n' > "$trace"
fi
if [ "@WRONG@" = always ] || { [ "@WRONG@" = trace ] && [ -n "$trace" ]; }; then
  cat "$file" > /dev/null
  printf '%064d  %s\n' 0 "$file"
  exit 0
fi
[ "@SLEEP@" = 0 ] || sleep @SLEEP@
exec "@B3SUM@" "$file"
"""


pytestmark = pytest.mark.usefixtures("own_run_lock")


def b3sum_exe() -> str:
    if B3SUM_LOCAL.is_file():
        return str(B3SUM_LOCAL)
    import shutil

    found = shutil.which("b3sum")
    if not found:
        pytest.skip("b3sum not installed (make deps)")
    return found


def fake_hasher(path: Path, wrong: str = "never", sleep: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_HASHER.replace("@WRONG@", wrong).replace("@SLEEP@", str(sleep))
                    .replace("@B3SUM@", b3sum_exe()))
    path.chmod(0o755)
    return path


def ringsum(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir())


def csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fake_and_cat_config(cfg: Path, variant: str, hasher: Path, knobs: str = "") -> Path:
    """Two untraced rounds of one fake hasher group and cat."""
    cfg.write_text(f"""
[run]
rounds = 2
trace = false
[[hashers]]
variant = "{variant}"
path = "{hasher}"
{knobs}
[baselines]
limit = false
cat = true
""")
    return cfg


def assert_fastest_named(per_round: list[dict], readers, seconds) -> None:
    """Each round's limit names the reader with the round's lowest time (fio's runtime is in
    whole ms: of equal times, the first label)."""
    for r in per_round:
        in_round = readers["round"] == r["round"]
        assert r["reader"] == sorted(readers.loc[in_round & (seconds == seconds[in_round].min()), "label"])[0]


def test_full_run_directory(tmp_path: Path):
    hasher = fake_hasher(tmp_path / "bin" / "good hasher")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"""
[run]
rounds = 2
timeout_s = 30
[[hashers]]
name = "fake"
variant = "fakehasher"
path = "{hasher}"
block_size = ["64K", "1M"]
direct = [false, true]
exclude = [{{ direct = true, block_size = "64K" }}]
[baselines]
limit = false
cat = true
dd = {{ bs = ["64K"], direct = [false, true] }}
b3sum = {{ num_threads = [1] }}
xxhsum = true
fio = {{ bs = ["128K"], iodepth = [2], direct = [true] }}
""")
    data_dir = tmp_path / "data dir"  # a space, on purpose: prepare quoting
    out = tmp_path / "results"
    p = ringsum("run", str(cfg), "--size", "4M", "--dir", str(data_dir), "--out", str(out), *MODE_ARGS)
    assert p.returncode == 0, p.stderr
    (rd,) = run_dirs(out)
    assert f"run directory: {rd}" in p.stdout
    assert (data_dir / "ringsum-4M.bin").stat().st_size == 4 << 20

    # runs.csv: exact columns, one row per (command, round)
    with open(rd / "runs.csv") as f:
        header = f.readline().strip().split(",")
    assert header == columns(load_knobs().own)
    # the record's own columns are pinned (what readers of runs.csv rely on); between them, the
    # programs' other knobs in their table's order, whatever knobs the build has
    knobs = list(load_knobs().own)
    at = header.index(knobs[0])
    assert header[:at] == ["label", "tool", "variant", "group", "block_size", "queue_depth", "buffers", "direct"]
    assert header[at:at + len(knobs)] == knobs
    assert header[at + len(knobs):at + len(knobs) + 19] == [
        "num_threads", "mmap", "extra", "file", "file_size", "cache", "round", "position", "wall_s", "user_s", "sys_s", "bytes",
        "throughput_Bps", "exit_code", "resident_before", "hash_ok", "fio_bw_Bps", "fio_runtime_s", "started_at"]
    df = read_runs(rd)
    # hasher 3 (4 - 1 excluded), cat, dd 2, b3sum 1 (+ plain `b3sum` added in warm mode), xxhsum, fio
    n_cmds = 3 + 1 + 2 + (1 if IS_ROOT else 2) + 1 + 1
    assert len(df) == 2 * n_cmds
    assert Counter(zip(df["label"], df["round"])) == {k: 1 for k in zip(df["label"], df["round"])}
    assert set(df["tool"]) == {"hasher", "cat", "dd", "b3sum", "xxhsum", "fio"}
    assert (df["exit_code"] == 0).all()
    assert (df["wall_s"] > 0).all()
    assert ((df["throughput_Bps"] - df["file_size"] / df["wall_s"]).abs() < 1).all()
    hashing = df["tool"].isin(["hasher", "b3sum"])
    assert df.loc[hashing, "hash_ok"].eq(True).all()
    assert df.loc[~hashing, "hash_ok"].isna().all()
    fio = df[df["tool"] == "fio"]
    assert (fio["fio_bw_Bps"] > 0).all() and (fio["fio_runtime_s"] >= 0).all()
    assert fio["block_size"].eq(128 << 10).all() and fio["queue_depth"].eq(2).all()
    if IS_ROOT:
        assert (df["resident_before"] <= 0.01).all()
    else:
        assert (df["resident_before"] >= 0.99).all()
    for r in range(1, 3):
        assert sorted(df[df["round"] == r]["position"]) == list(range(n_cmds))
    dd = df[df["label"] == "dd bs=64K iflag=direct"]
    assert dd["direct"].eq(True).all() and dd["block_size"].eq(65536).all()
    assert df[df["label"] == "b3sum --num-threads 1"]["num_threads"].eq(1).all()

    meta = json.loads((rd / "meta.json").read_text())
    for key in ("config", "fingerprint", "versions", "git_commit", "git_dirty", "started_at",
                "finished_at", "files", "speed_limit", "seed"):
        assert key in meta, key
    assert meta["finished_at"] is not None
    assert meta["fingerprint"]["fingerprint_id"]
    assert meta["files"][0]["size"] == 4 << 20 and len(meta["files"][0]["b3sum"]) == 64
    # the speed limit: per round, the fastest read-only command (fio by its own read runtime)
    readers = df[df["tool"].isin(["cat", "dd", "fio"])]
    seconds = readers["fio_runtime_s"].where(readers["tool"] == "fio", readers["wall_s"]).astype(float)
    fastest = seconds.groupby(readers["round"]).idxmin()
    limit = meta["speed_limit"]
    assert [r["seconds"] for r in limit["per_round"]] == pytest.approx(list(seconds[fastest]))
    assert_fastest_named(limit["per_round"], readers, seconds)
    assert limit["limit_s"] == pytest.approx(seconds[fastest].median())
    assert limit["limit_Bps"] == pytest.approx((4 << 20) / limit["limit_s"])
    assert meta["config"]["run"]["cache"] == ("cold" if IS_ROOT else "warm")
    if not IS_ROOT:
        assert meta["speed_limit"]["blake3_single_core_Bps"] > 0
        assert meta["speed_limit"]["blake3_all_core_Bps"] > 0

    plan = json.loads((rd / "plan.json").read_text())
    assert len(plan["orders"]) == 2 and all(sorted(o) == sorted(c["label"] for c in plan["commands"])
                                            for o in plan["orders"])
    raws = {p.name for p in (rd / "raw").iterdir()}
    assert sum(n.endswith(".fio.json") for n in raws) == 2
    assert sum(n.startswith("r002-") and n.endswith(".json") and ".fio." not in n for n in raws) == n_cmds
    index = csv_rows(rd / "traces" / "index.csv")
    assert len(index) == 3 and all((rd / r["trace"]).is_file() for r in index)
    assert f"speed limit: {limit['limit_s']:.3f} s" in (rd / "summary.txt").read_text()


def test_limit_group_and_headline(tmp_path: Path):
    """A config without readers of its own gets the limit group; the limit is per round the
    fastest of them, no reader is faster than it, and the headline (summary.txt, summary.json, the
    end of the run's output) names the fastest hasher, recomputed here from runs.csv."""
    real = Path(os.environ.get("RINGSUM_BIN_DIR", REPO / "build" / "bin"))
    if not (real / "uring_b3sum").is_file():
        pytest.skip("hashers not built (run `make`)")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"""
[run]
rounds = 3
bin_dir = "{real}"
[[hashers]]
variant = "uring_b3sum"
block_size = ["64K", "1M"]
queue_depth = 4
[baselines]
b3sum = true
xxhsum = true
""")
    out = tmp_path / "r"
    p = ringsum("run", str(cfg), "--size", "4M", "--dir", str(tmp_path), "--out", str(out), *MODE_ARGS)
    assert p.returncode == 0, p.stderr
    (rd,) = run_dirs(out)
    df = read_runs(rd)
    groups = dict(zip(df["label"], df["group"]))
    readers = ["cat", "dd bs=64K", "dd bs=1M", "dd bs=2M", "fio bs=512K iodepth=2 direct=1",
               "fio bs=2M iodepth=8 direct=1", "fio bs=512K iodepth=8 direct=0"]
    assert all(groups[r].startswith("limit-") for r in readers)

    rows = df[df["label"].isin(readers)]
    seconds = rows["fio_runtime_s"].where(rows["tool"] == "fio", rows["wall_s"]).astype(float)
    fastest = seconds.groupby(rows["round"]).idxmin()
    summary = json.loads((rd / "summary.json").read_text())
    head = summary["headline"]
    limit = head["speed_limit"]
    assert [r["seconds"] for r in limit["per_round"]] == pytest.approx(list(seconds[fastest]))
    assert_fastest_named(limit["per_round"], rows, seconds)
    per_round = dict(zip(rows.loc[fastest, "round"], seconds[fastest]))

    ratios = {c["label"]: c["vs_limit"] for c in summary["commands"]}
    for reader in readers:  # no reader beats the limit, in any round
        assert ratios[reader]["low"] >= 1.0 and ratios[reader]["median"] >= 1.0
    for label, g in df[~df["label"].isin(readers)].groupby("label"):
        want = (g["wall_s"].astype(float) / g["round"].map(per_round)).median()
        assert ratios[label]["median"] == pytest.approx(want)
        past = ratios[label]["high"] < 1.0  # the whole interval under 1: a tie with the limit is no finding
        assert (label in [f["label"] for f in head["faster_than_limit"]]) == past
        assert (f"ringsum: FINDING: {label} is faster than the speed limit" in p.stderr) == past

    hashers = df[df["tool"] == "hasher"].groupby("label")["wall_s"].median()
    assert head["use"] == hashers.idxmin()
    assert head["median_s"]["median"] == pytest.approx(hashers.min())
    assert head["argv"][0] == str(real / "uring_b3sum") and head["argv"][-1].endswith("ringsum-4M.bin")
    assert head["runner_up"]["label"] == hashers.drop(hashers.idxmin()).idxmin()
    assert head["runner_up"]["outcome"] in ("faster", "tie")
    assert head["vs_b3sum"]["label"] == "b3sum" and head["vs_b3sum"]["ratio"]["n"] == 3

    text = (rd / "summary.txt").read_text()
    block = text.split("What to use on this machine (4M file, ", 1)[1]
    word = "fastest:" if head["tied"] else "use:    "  # a tie names the fastest, not one to use
    assert f"{word}    {head['use']}\n" in block and "vs limit:" in block and "runner-up:" in block
    assert p.stdout == text + f"run directory: {rd}\n"  # the headline ends the run's output


def test_wrong_hash_fails_the_run(tmp_path: Path):
    bad = fake_hasher(tmp_path / "bad_hasher", wrong="always")
    cfg = fake_and_cat_config(tmp_path / "c.toml", "bad_hasher", bad, 'block_size = "512K"')
    out = tmp_path / "r"
    p = ringsum("run", str(cfg), "--size", "1M", "--dir", str(tmp_path), "--out", str(out), *MODE_ARGS)
    assert p.returncode == 1
    assert "HASH MISMATCH" in p.stderr
    assert "bad_hasher bs=512K qd=4 buf=4" in p.stderr.split("HASH MISMATCH against")[1]
    (rd,) = run_dirs(out)
    df = read_runs(rd)
    hasher = df[df["tool"] == "hasher"]
    assert len(hasher) == 2 and hasher["hash_ok"].eq(False).all()
    assert len(df[df["tool"] == "cat"]) == 2  # the run went on measuring
    assert "hash mismatch" in hasher["error"].iloc[0]


def test_wrong_hash_in_traced_run_fails_the_run(tmp_path: Path):
    bad = fake_hasher(tmp_path / "bin" / "liburing_b3sum_singlethread", wrong="trace")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nrounds = 1\n[[hashers]]\nvariant = "liburing_b3sum_singlethread"\n[baselines]\nlimit = false\n')
    out = tmp_path / "r"
    p = ringsum("run", str(cfg), "--size", "64K", "--dir", str(tmp_path), "--out", str(out),
                "--bin-dir", str(bad.parent), *MODE_ARGS)
    assert p.returncode == 1
    assert "liburing_b3sum_singlethread bs=512K qd=4 buf=4 (traced run)" in p.stderr
    df = read_runs(run_dirs(out)[0])
    assert df["hash_ok"].eq(True).all()  # the timed runs themselves were fine


def test_missing_hasher_binary_is_a_clear_error(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[hashers]]\nvariant = "liburing_b3sum_singlethread"\n')
    p = ringsum("run", str(cfg), "--size", "4K", "--dir", str(tmp_path), "--out", str(tmp_path / "r"),
                "--bin-dir", str(tmp_path / "nowhere"), *MODE_ARGS)
    assert p.returncode == 2
    assert p.stderr.startswith("ringsum: hasher binary") and "run `make`" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_hanging_command_is_recorded_and_sweep_continues(tmp_path: Path):
    slow = fake_hasher(tmp_path / "slow_hasher", sleep=60)
    cfg = tmp_path / "c.toml"
    # Warm, with a warmup: killed after timeout_s for each of its two executions and 2 s for hyperfine
    # (a cold one has 10 s for its prepare: tests/test_driver_faults.py).
    cfg.write_text(f'[run]\nrounds = 1\ncache = "warm"\nwarmup = 1\ntimeout_s = 1\ntrace = false\n'
                   f'[[hashers]]\nvariant = "slow"\npath = "{slow}"\n[baselines]\nlimit = false\ncat = true\n')
    out = tmp_path / "r"
    t0 = time.monotonic()
    p = ringsum("run", str(cfg), "--size", "64K", "--dir", str(tmp_path), "--out", str(out))
    assert time.monotonic() - t0 < 40
    assert p.returncode == 1
    assert "executions failed" in p.stderr
    df = read_runs(run_dirs(out)[0])
    hung = df[df["tool"] == "hasher"]
    assert hung["exit_code"].isna().all() and hung["error"].iloc[0] == "timeout after 4 s (killed)"
    assert df[df["tool"] == "cat"]["exit_code"].eq(0).all()


def _bin_dir_for_ci(tmp_path: Path) -> Path:
    """The real hashers if built, else stand-ins with the same names."""
    real = Path(os.environ.get("RINGSUM_BIN_DIR", REPO / "build" / "bin"))
    real = real if real.is_absolute() else REPO / real
    if all((real / v).is_file() for v in VARIANTS):
        return real
    for v in VARIANTS:
        fake_hasher(tmp_path / "fakebin" / v)
    return tmp_path / "fakebin"


def test_resume_after_sigkill(tmp_path: Path):
    bins = _bin_dir_for_ci(tmp_path)
    out = tmp_path / "results"
    args = [sys.executable, "-m", "harness", "run", str(REPO / "configs" / "ci.toml"), "--size", "2M",
            "--dir", str(tmp_path), "--out", str(out), "--bin-dir", str(bins), *MODE_ARGS]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs_csv = None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if runs_csv is None and out.exists() and run_dirs(out):
                runs_csv = run_dirs(out)[0] / "runs.csv"
            if runs_csv is not None and runs_csv.exists() and runs_csv.read_text().count("\n") >= 8:
                break
            assert proc.poll() is None, "run finished before it could be killed"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert runs_csv is not None
    before = runs_csv.read_text()
    kept = before[: before.rfind("\n") + 1].splitlines()[1:]  # complete rows only
    assert 7 <= len(kept) < 27
    rd = runs_csv.parent

    p = ringsum("run", "--resume", str(rd))
    assert p.returncode == 0, p.stderr
    after = runs_csv.read_text().splitlines()[1:]
    assert after[: len(kept)] == kept  # earlier rows unchanged
    df = read_runs(rd)
    plan = json.loads((rd / "plan.json").read_text())
    labels = [c["label"] for c in plan["commands"]]
    assert len(labels) == 9
    assert len(df) == 9 * 3
    assert Counter(zip(df["label"], df["round"])) == Counter({(lbl, r): 1 for lbl in labels for r in (1, 2, 3)})
    assert Counter(zip(df["round"], df["position"])).most_common(1)[0][1] == 1
    assert df["hash_ok"].dropna().all()
    meta = json.loads((rd / "meta.json").read_text())
    assert meta["finished_at"] and len(meta["resumed_at"]) == 1
    traces = csv_rows(rd / "traces" / "index.csv")
    assert Counter(t["label"] for t in traces) == Counter(
        {c["label"]: 1 for c in plan["commands"] if c["tool"] == "hasher"})

    p = ringsum("run", "--resume", str(rd))  # resuming a finished run adds nothing
    assert p.returncode == 0
    assert len(read_runs(rd)) == 27


def test_second_run_waits_for_the_first(tmp_path: Path):
    import fcntl

    lock = tmp_path / "ringsum.lock"  # the autouse fixture points RINGSUM_LOCK here
    with open(lock, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        cfg = tmp_path / "c.toml"
        cfg.write_text("[run]\nrounds = 1\n[baselines]\nlimit = false\ncat = true\n")
        proc = subprocess.Popen([sys.executable, "-m", "harness", "run", str(cfg), "--size", "4K",
                                 "--dir", str(tmp_path), "--out", str(tmp_path / "r"), *MODE_ARGS],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # However slowly it starts on a loaded machine, it must say it waits, and then wait.
        first_lines = []
        while not any("waiting for another ringsum run" in line for line in first_lines):
            line = proc.stderr.readline()
            assert line, f"exited without waiting: {''.join(first_lines)}"
            first_lines.append(line)
        time.sleep(0.5)
        assert proc.poll() is None  # still waiting
        assert not (tmp_path / "r").exists()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, "".join(first_lines) + err


def test_installed_uring_b3sum_defaults_do_not_leak_into_a_sweep(tmp_path: Path, monkeypatch):
    """A sweep's knobs say what runs: an options file and wisdom (here each one that would make
    uring_b3sum fail) are ignored."""
    key = subprocess.run([str(REPO / "build" / "bin" / "uring_b3sum"), "--wisdom-key", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout.strip()
    poisoned = tmp_path / "uring_b3sum.options"
    poisoned.write_text("--frobnicate\n")
    monkeypatch.setenv("URING_B3SUM_OPTIONS", str(poisoned))
    bad_wisdom = tmp_path / "wisdom"
    bad_wisdom.write_text("".join(f"{key} work={work} measured=x options=--frobnicate\n"
                                  for work in ("cold-file", "cached-file", "cold-tree", "cached-tree")))
    monkeypatch.setenv("URING_B3SUM_WISDOM", str(bad_wisdom))
    alone = subprocess.run([str(REPO / "build" / "bin" / "uring_b3sum"), str(bad_wisdom)], capture_output=True,
                           env={**os.environ, "URING_B3SUM_OPTIONS": os.devnull})
    assert alone.returncode == 2 and b"--frobnicate" in alone.stderr  # it would have failed
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nrounds = 1\n[[hashers]]\nvariant = "uring_b3sum"\nblock_size = "64K"\n'
                   '[baselines]\nlimit = false\n')
    p = ringsum("run", str(cfg), "--size", "1M", "--dir", str(tmp_path), "--out", str(tmp_path / "r"), *MODE_ARGS)
    assert p.returncode == 0, p.stderr
    rows = csv_rows(run_dirs(tmp_path / "r")[0] / "runs.csv")
    assert [r["hash_ok"] for r in rows] == ["True"]


def test_report_flag_reports_this_run_even_beside_newer_directories(tmp_path: Path):
    """`make sweep` runs `ringsum run --report`: the report lands in this run's directory, not in
    whatever sorts last under --out (a `tune-...` directory, say), and a failed run keeps exit 1."""
    out = tmp_path / "r"
    (out / "tune-29991231T000000Z-later").mkdir(parents=True)
    for wrong, code in [("never", 0), ("always", 1)]:
        hasher = fake_hasher(tmp_path / f"bin-{wrong}" / "fake_hasher", wrong=wrong)
        cfg = fake_and_cat_config(tmp_path / "c.toml", "fake_hasher", hasher)
        before = set(run_dirs(out))
        p = ringsum("run", str(cfg), "--size", "1M", "--dir", str(tmp_path), "--out", str(out), "--report",
                    *MODE_ARGS)
        assert p.returncode == code, p.stderr
        (rd,) = set(run_dirs(out)) - before
        assert (rd / "report.html").is_file() and (rd / "summary.md").is_file()
        assert f"report: {rd / 'report.html'}" in p.stdout
    assert not any((out / "tune-29991231T000000Z-later").iterdir())


def test_an_out_directory_on_a_read_only_filesystem_is_one_line_before_anything_runs(tmp_path: Path):
    """A read-only filesystem, made here: root writes anywhere else, so only a mount shows it."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)")
    try:
        for cmd in (["run", "configs/ci.toml"], ["tune", "--budget", "1"]):
            p = ringsum(*cmd, "--size", "1M", "--dir", str(tmp_path), "--out", str(ro / "results"), *MODE_ARGS,
                        cwd=REPO)
            assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
            (line,) = p.stderr.splitlines()
            assert line.startswith(f"ringsum: --out {ro / 'results'}: "), line
            assert "Read-only file system" in line or "a read-only filesystem" in line, line
    finally:
        subprocess.run(["umount", str(ro)], check=True)
