"""The fleet for real: harness/fleet/playbook.yml over an inventory of two hosts on this machine
(Ansible's local connection, each with its own install and results directory, seeded from this
checkout's b3sum, BLAKE3 source and wheels), then `ringsum collect` over what came back. A third host
of the same play fails (its install directory cannot be made) beside them.

The hosts' runs are warm, with a lock of their own and RINGSUM_SYSTEM_SETTINGS=leave, so the module
runs beside the machine line (tests/conftest.py): cold runs on a fleet, with sudo, are
tests/test_fleet_ssh.py's."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hashers_support import beside_the_line_env

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.independent, pytest.mark.together]

HOSTS = ("host-a", "host-b")
BROKEN = "broken"
TINY = """
[run]
rounds = 2
cache = "warm"
file_size = "8M"
timeout_s = 30

[[hashers]]
variant = "uring_b3sum"
block_size = ["512K"]
queue_depth = [4]

[[hashers]]
variant = "liburing_b3sum_singlethread"
block_size = ["512K"]
queue_depth = [4]

[baselines]
cat = true
b3sum = { num_threads = [1] }
limit = false
"""


def _env(state: Path) -> dict[str, str]:
    return {**os.environ, **beside_the_line_env(state / "ringsum.lock"), "ANSIBLE_NOCOLOR": "1",
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}


def ringsum(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          env=_env(state), timeout=300)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run the playbook once; the directory holding hosts' installs, `out/` (fetched results) and `state/`."""
    if not (VENV_BIN / "ansible-playbook").is_file():
        pytest.skip("ansible-core not installed (make deps)")
    top = tmp_path_factory.mktemp("fleet")
    state = top / "state"
    state.mkdir(mode=0o700)
    subprocess.run(["make", "--no-print-directory", "wheels"], cwd=REPO, check=True, capture_output=True,
                   timeout=300)
    seed = top / "seed"
    (seed / "build").mkdir(parents=True)
    for part in (".tools", "build/vendor", "build/wheels"):
        (seed / part).symlink_to(REPO / part)
    config = top / "tiny.toml"
    config.write_text(TINY)
    # A third host whose install directory cannot be made (/proc): it fails in the same play, beside the
    # others; its results go elsewhere (fleet_results per host), so out/ holds the two that finished.
    inventory = top / "hosts.ini"
    inventory.write_text("[fleet]\n" + "".join(
        f"{h} ansible_connection=local ansible_python_interpreter={sys.executable} ringsum_dir={where} "
        f"fleet_results={out}\n"
        for h, where, out in [*((h, top / h, top / "out") for h in HOSTS),
                              (BROKEN, Path("/proc/ringsum"), top / "out-broken")]))
    play = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(inventory),
                           str(REPO / "harness" / "fleet" / "playbook.yml"), "-e", f"ringsum_config={config}",
                           "-e", f"ringsum_seed={seed}"],
                          cwd=REPO, capture_output=True, text=True, env=_env(state), timeout=600)
    assert play.returncode == 0, play.stdout[-3000:] + play.stderr[-2000:]
    (top / "play.log").write_text(play.stdout)
    return top


def _run_dirs(path: Path) -> list[Path]:
    return sorted(p.parent for p in path.rglob("runs.csv"))


def test_each_host_installs_runs_and_sends_back_its_own(fleet: Path) -> None:
    for host in HOSTS:
        install = fleet / host
        assert (install / ".venv" / "bin" / "ringsum").is_file() and (install / "build" / "bin" / "uring_b3sum").is_file()
        [marker] = (fleet / "out" / host).glob("fleet-*/fleet.json")
        assert json.loads(marker.read_text())["host"] == host
        [run_dir] = _run_dirs(fleet / "out" / host)
        assert run_dir.parent == marker.parent
        plan = json.loads((run_dir / "plan.json").read_text())
        hashers = [c["argv"][0] for c in plan["commands"] if c["tool"] == "hasher"]
        assert hashers and all(a.startswith(str(install / "build" / "bin")) for a in hashers)
        with open(run_dir / "runs.csv") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 4 * 2 and all(r["exit_code"] == "0" for r in rows)
        assert all(r["hash_ok"] == "True" for r in rows if r["tool"] in ("hasher", "b3sum"))
        assert json.loads((run_dir / "meta.json").read_text())["fingerprint"]["fingerprint_id"]


def test_collect_one_table_and_a_row_per_machine(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    done = ringsum("collect", str(fleet / "out"), "--out", str(out), state=fleet / "state")
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    with open(out / "fleet-runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["host"] for r in rows} == set(HOSTS) and len(rows) == 2 * 4 * 2
    assert all(r["fingerprint_id"] and r["cpu_model"] and r["device_driver"] for r in rows)
    assert all(r["machine_cores"] == str(os.cpu_count()) for r in rows) and "cores" in rows[0], rows[0]   # and the condition
    with open(out / "fleet-machines.csv") as f:
        machines = list(csv.DictReader(f))
    assert sorted(m["host"] for m in machines) == sorted(HOSTS)
    for m in machines:
        assert m["best"] in {r["label"] for r in rows if r["tool"] == "hasher"}
        for ratio in ("vs_limit", "vs_b3sum"):
            low, median, high = (float(m[f"{ratio}_{p}"]) for p in ("low", "median", "high"))
            assert 0 < low <= median <= high
    ranked = sorted(machines, key=lambda m: float(m["vs_limit_median"]))
    md = (out / "fleet.md").read_text()
    assert md.index(f"| 1 | {ranked[0]['host']} |") < md.index(f"| 2 | {ranked[1]['host']} |")
    assert "## 8M file, warm cache" in md and done.stdout.startswith("# Fleet report")


def test_collect_warns_about_unlike_workloads(fleet: Path, tmp_path: Path) -> None:
    config = tmp_path / "warm.toml"
    config.write_text(TINY.replace('rounds = 2', 'rounds = 1').replace('"8M"', '"4M"'))
    extra = tmp_path / "warm"
    made = ringsum("run", str(config), "--warm", "--dir", str(tmp_path), "--out", str(extra), state=fleet / "state")
    assert made.returncode == 0, made.stderr
    done = ringsum("collect", str(fleet / "out"), str(extra), "--out", str(tmp_path / "report"), state=fleet / "state")
    assert done.returncode == 0, done.stderr
    assert "warning: the fleet ran 2 unlike workloads (4M warm; 8M warm)" in done.stderr
    assert "## 4M file, warm cache" in done.stdout and "## 8M file, warm cache" in done.stdout


def test_collect_errors_are_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    done = ringsum("collect", str(tmp_path), "--out", str(tmp_path / "report"), state=state)
    assert done.returncode == 2
    assert done.stderr == f"ringsum: {tmp_path}: no run directory (runs.csv with meta.json) under it\n"


def test_collect_refuses_a_run_that_did_not_finish(fleet: Path, tmp_path: Path) -> None:
    """A run killed half-way (SIGKILL: nothing could mark it) is refused by name: on its own it is an
    error; inside a fleet's results it is left out of the report and listed, exit 1."""
    config = tmp_path / "long.toml"
    config.write_text(TINY.replace("rounds = 2", "rounds = 50").replace('"8M"', '"4M"'))
    killed = tmp_path / "killed"
    run = subprocess.Popen([sys.executable, "-m", "harness", "run", str(config), "--warm", "--yes", "--dir",
                            str(tmp_path), "--out", str(killed)], cwd=REPO, env=_env(fleet / "state"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not [p for p in killed.rglob("runs.csv") if len(p.read_text().splitlines()) > 2]:
            assert run.poll() is None and time.monotonic() < deadline, "the run ended or never recorded a row"
            time.sleep(0.1)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()  # it changed no system setting (RINGSUM_SYSTEM_SETTINGS=leave): none is left to put back
    [run_dir] = [p.parent for p in killed.rglob("runs.csv")]
    alone = ringsum("collect", str(run_dir), "--out", str(tmp_path / "alone"), state=fleet / "state")
    assert alone.returncode == 2 and alone.stderr == (
        f"ringsum: {run_dir}: the run did not finish (meta.json has no finished_at); "
        "resume it (ringsum run --resume) or leave it out\n")
    done = ringsum("collect", str(fleet / "out"), str(killed), "--out", str(tmp_path / "report"),
                   state=fleet / "state")
    assert done.returncode == 1, done.stderr
    assert f"ringsum: {run_dir}: refused: the run did not finish" in done.stderr
    md = (tmp_path / "report" / "fleet.md").read_text()
    assert f"| {run_dir} | refused: the run did not finish" in md
    assert "## 8M file, warm cache" in md and "## 4M file" not in md


def test_a_host_that_fails_says_where_and_why(fleet: Path, tmp_path: Path) -> None:
    """A task that fails on a host (here: its install directory cannot be made) ends that host's part,
    not the others' (test_each_host_installs_runs_and_sends_back_its_own); its status.json names the
    task and the error, and the report lists it (exit 1)."""
    play = (fleet / "play.log").read_text()
    assert re.search(rf"{BROKEN}\s*:.*failed=0.*rescued=1", play), play[-3000:]
    assert all(re.search(rf"{h}\s*:.*failed=0\s+skipped=\d+\s+rescued=0", play) for h in HOSTS), play[-3000:]
    out = fleet / "out-broken"
    [status] = (out / BROKEN).glob("fleet-*/status.json")
    outcome = json.loads(status.read_text())
    assert outcome["status"] == "failed" and outcome["task"] == "install directory", outcome
    assert "/proc/ringsum" in outcome["why"] or "rror" in outcome["why"], outcome
    assert not (fleet / "out" / BROKEN).exists()
    done = ringsum("collect", str(out), "--out", str(tmp_path / "report"), state=fleet / "state")
    assert done.returncode == 1, done.stderr
    assert f"ringsum: {BROKEN}: failed at 'install directory': " in done.stderr
    assert f"| {BROKEN} | failed at 'install directory': " in (tmp_path / "report" / "fleet.md").read_text()
