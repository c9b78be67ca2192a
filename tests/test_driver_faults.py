"""The driver under faults: hashers that crash, hang or print garbage, the results disk filling up,
the page cache drop refused (at the start or in the middle of a run), a missing tool. Each is
recorded and reported in one line; nothing already measured is lost; `--resume` finishes the run."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.judge.results import read_records, read_runs

REPO = Path(__file__).resolve().parent.parent
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (mount, drop_caches)")
# Read-only in this mount namespace. The remount is refused (EBUSY) while a file on the mount is open
# for writing, as drop_caches is for a moment in each prepare step of a run already going: try again.
RO_DROP_CACHES = ("mount --bind /proc/sys/vm/drop_caches /proc/sys/vm/drop_caches && i=0 && "
                  "until mount -o remount,bind,ro /proc/sys/vm/drop_caches 2>/dev/null; do "
                  "i=$((i + 1)); [ $i -lt 500 ] || exit 1; sleep 0.01; done")


pytestmark = pytest.mark.usefixtures("own_run_lock")


def ringsum_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


def ringsum(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ringsum_argv(*args), capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def ringsum_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("ringsum:")]


def only_run_dir(out: Path) -> Path:
    (rd,) = [p for p in out.iterdir() if p.is_dir()]
    return rd


def wait_for_rows(proc: subprocess.Popen, out: Path, rows: int, deadline_s: float = 90) -> Path:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before the fault could be injected"
        dirs = [p for p in out.iterdir() if p.is_dir()] if out.exists() else []
        if dirs and len(read_records(dirs[0] / "runs.csv")) >= rows:
            return dirs[0]
        time.sleep(0.05)
    raise AssertionError("no rows appeared")


def test_crashing_garbage_and_hanging_hashers(tmp_path: Path):
    crash = script(tmp_path / "crash", "kill -SEGV $$")
    garbage = script(tmp_path / "garbage", 'echo "not a hash at all"')
    hang = script(tmp_path / "hang", "sleep 60")
    groups = "".join(f'[[hashers]]\nname = "{p.name}"\nvariant = "x"\npath = "{p}"\n' for p in (crash, garbage, hang))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[run]\nrounds = 1\ntimeout_s = 1\n{groups}[baselines]\nlimit = false\ncat = true\n")
    out = tmp_path / "out"
    p = ringsum("run", str(cfg), "--size", "64K", "--dir", str(tmp_path), "--out", str(out))
    assert p.returncode == 1
    rows = {r.label.split()[0]: r for r in read_records(only_run_dir(out) / "runs.csv")}
    assert set(rows) == {"crash", "garbage", "hang", "cat"}
    assert rows["cat"].exit_code == 0 and not rows["cat"].error
    assert rows["crash"].exit_code not in (0, None) and rows["crash"].hash_ok is None
    assert rows["crash"].error == f"exit code {rows['crash'].exit_code}"
    assert rows["garbage"].exit_code == 0 and rows["garbage"].hash_ok is False
    assert rows["garbage"].error == "hash mismatch: got no hash line"
    assert rows["hang"].exit_code is None and rows["hang"].error.startswith("timeout after")
    failed, mismatch = ringsum_lines(p.stderr)
    assert failed.startswith("ringsum: 4 executions failed: ")
    assert "traced run of crash bs=512K qd=4 buf=4: killed by SIGSEGV" in failed
    assert "traced run of hang bs=512K qd=4 buf=4: timeout" in failed
    assert mismatch.startswith("ringsum: HASH MISMATCH") and "crash" not in mismatch and "garbage" in mismatch


@pytest.fixture
def small_tmpfs(tmp_path: Path):
    if not IS_ROOT:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "results-disk"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16M", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def fill(mnt: Path) -> Path:
    """Fill the file system. Unbuffered: a buffered file keeps the bytes a short write left over and
    raises ENOSPC again when it is closed, which happened when the last write was a partial one."""
    filler = mnt / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * (64 << 10))
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return filler


def test_disk_full_mid_run_then_resume(tmp_path: Path, small_tmpfs: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nrounds = 25\ntrace = false\n[baselines]\nlimit = false\ncat = true\nb3sum = { num_threads = [1] }\n")
    proc = subprocess.Popen(ringsum_argv("run", str(cfg), "--size", "64K", "--dir", str(tmp_path),
                                         "--out", str(small_tmpfs), "--warm"),
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rd = wait_for_rows(proc, small_tmpfs, 6)
    filler = fill(small_tmpfs)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    (line,) = ringsum_lines(err)
    assert line.startswith("ringsum: stopped: no space left") and line.endswith(f"ringsum run --resume {rd}")
    kept = read_records(rd / "runs.csv")
    total = 25 * len(json.loads((rd / "plan.json").read_text())["commands"])
    assert 6 <= len(kept) < total
    assert all(r.exit_code == 0 and not r.error for r in kept), "a row was recorded while the disk was full"
    before = (rd / "runs.csv").read_text()

    filler.unlink()
    p = ringsum("run", "--resume", str(rd))
    assert p.returncode == 0, p.stderr
    assert (rd / "runs.csv").read_text().startswith(before)
    df = read_runs(rd)
    assert len(df) == total and df["exit_code"].eq(0).all() and df["hash_ok"].dropna().all()
    meta = json.loads((rd / "meta.json").read_text())
    assert meta["finished_at"] and meta["resumed_at"]


def test_no_space_for_the_run_directory(tmp_path: Path, small_tmpfs: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[run]\nrounds = 1\n[baselines]\nlimit = false\ncat = true\n")
    fill(small_tmpfs)
    p = ringsum("run", str(cfg), "--size", "4K", "--dir", str(tmp_path), "--out", str(small_tmpfs), "--warm")
    assert p.returncode == 1
    (line,) = ringsum_lines(p.stderr)
    assert "no space left" in line and "Traceback" not in p.stderr


@needs_root
def test_drop_caches_refused_before_anything_runs(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nrounds = 1\ncache = "cold"\n[baselines]\nlimit = false\ncat = true\n')
    out = tmp_path / "out"
    argv = ringsum_argv("run", str(cfg), "--size", "4K", "--dir", str(tmp_path), "--out", str(out))
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", f'{RO_DROP_CACHES} && exec "$@"',
                        "sh", *argv], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip() == ("ringsum: cold mode cannot write /proc/sys/vm/drop_caches "
                                "(read-only /proc/sys, a container?); pass --warm")
    assert not out.exists()


@needs_root
def test_not_root_refused_in_cold_mode():
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv missing")
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o777)
        cfg = Path(d) / "c.toml"
        cfg.write_text('[run]\nrounds = 1\ncache = "cold"\n[baselines]\nlimit = false\ncat = true\n')
        p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                            *ringsum_argv("run", str(cfg), "--size", "4K", "--dir", d, "--out", f"{d}/out")],
                           capture_output=True, text=True, cwd=REPO, timeout=60,
                           env={**os.environ, "RINGSUM_LOCK": f"{d}/lock", "HOME": d})
        assert p.returncode == 2, p.stderr
        assert p.stderr == "ringsum: cold mode needs root to drop the page cache; run as root or pass --warm\n"
        assert not (Path(d) / "out").exists()


@needs_root
def test_drop_caches_failing_mid_run(tmp_path: Path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nrounds = 10\ncache = "cold"\ntrace = false\n[baselines]\nlimit = false\ncat = true\n'
                   'b3sum = { num_threads = [1] }\n')
    out = tmp_path / "out"
    proc = subprocess.Popen(["unshare", "-m", "--propagation", "private",
                             *ringsum_argv("run", str(cfg), "--size", "64K", "--dir", str(tmp_path), "--out", str(out))],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        rd = wait_for_rows(proc, out, 4)
        subprocess.run(["nsenter", "-t", str(proc.pid), "-m", "sh", "-c", RO_DROP_CACHES], check=True)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # a run left going would drop caches and change settings under later tests
            proc.terminate()     # the driver restores its settings on a signal
            proc.communicate(timeout=60)
    assert proc.returncode == 1
    (line,) = ringsum_lines(err)
    assert line.startswith("ringsum: stopped: the page cache could not be prepared before ")
    assert "cannot write /proc/sys/vm/drop_caches" in line and line.endswith(f"ringsum run --resume {rd}")
    kept = read_records(rd / "runs.csv")
    assert 4 <= len(kept) < 20 and all(r.exit_code == 0 and not r.error for r in kept)
    assert json.loads((rd / "meta.json").read_text())["stopped"][0]["executions_recorded"] == len(kept)

    p = ringsum("run", "--resume", str(rd))  # outside that mount namespace: drop_caches works again
    assert p.returncode == 0, p.stderr
    df = read_runs(rd)
    assert len(df) == 20 and df["exit_code"].eq(0).all() and (df["resident_before"] <= 0.01).all()


def test_missing_tool_is_named_before_anything_runs(tmp_path: Path):
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("hyperfine", "cat"):
        (tools / name).symlink_to(shutil.which(name))
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nrounds = 1\n[baselines]\nlimit = false\ncat = true\nfio = { bs = ["512K"], iodepth = [2] }\n')
    out = tmp_path / "out"
    p = ringsum("run", str(cfg), "--size", "4K", "--dir", str(tmp_path), "--out", str(out), "--warm",
                env={**os.environ, "PATH": str(tools)})
    assert p.returncode == 2
    assert p.stderr == "ringsum: fio not found on PATH; run `make deps`\n"
    assert not out.exists() and not (tmp_path / "ringsum-4K.bin").exists()
