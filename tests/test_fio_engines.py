"""fio's engines and batching as a sweep (harness/catalog/tools.py, analysis/engines.py): knobs an engine
ignores merge in the plan, a random read never sets the speed limit, an unknown or missing engine is a
one-line error, and a real run answers "is io_uring worth it here" in one line. The run is warm,
takes a lock of its own and leaves the system settings alone: the module runs beside the machine
line (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import engines
from harness.judge.load import load_run
from harness.catalog.tools import TOOLS, find_tool, fio_runs_alike
from harness.datasets.dataset import Dataset
from harness.judge.speed_limit import speed_limit
from harness.pipeline.config import load_config
from harness.pipeline.plan import build_plan
from harness.pipeline.preflight import SetupError, check_fio_engines
from hashers_support import beside_the_line_env

REPO = Path(__file__).resolve().parent.parent
FIO_DEFAULTS = {name: default[0] for name, (_, default) in TOOLS["fio"].knobs.items()}

pytestmark = [pytest.mark.independent, pytest.mark.together]


def _argv(**knobs: object) -> list[str]:
    made = TOOLS["fio"].command("fio", {**FIO_DEFAULTS, **knobs}, Dataset("f.bin", 1 << 20))
    assert made is not None
    return made.argv


def test_an_engine_runs_as_fio_acts_on_it() -> None:
    psync = _argv(ioengine="psync", iodepth=16, iodepth_batch_submit="iodepth", fixedbufs=True)
    assert "--iodepth=1" in psync and not any(a.startswith(("--iodepth_batch", "--fixedbufs")) for a in psync)
    libaio = _argv(ioengine="libaio", iodepth=8, sqthread_poll=True, iodepth_batch_complete_max=4)
    assert "--iodepth=8" in libaio and "--iodepth_batch_complete_max=4" in libaio
    assert not any(a.startswith("--sqthread_poll") for a in libaio)
    batched = _argv(iodepth=4, iodepth_batch_submit="iodepth", iodepth_batch_complete_min=1,
                    iodepth_batch_complete_max="iodepth", registerfiles=True, rw="randread")
    assert [a for a in batched if a.startswith(("--iodepth", "--rw", "--registerfiles", "--ioengine"))] == [
        "--rw=randread", "--ioengine=io_uring", "--iodepth=4", "--iodepth_batch_submit=4",
        "--iodepth_batch_complete_min=1", "--iodepth_batch_complete_max=4", "--registerfiles=1"]
    assert fio_runs_alike({**FIO_DEFAULTS, "iodepth": 1, "iodepth_batch_submit": 8})["iodepth_batch_submit"] is None
    # fio's defaults keep the label every earlier run has
    assert TOOLS["fio"].command("fio", FIO_DEFAULTS, Dataset("f.bin", 1 << 20)).label == "fio bs=512K iodepth=2 direct=1"


def test_the_plan_keeps_one_of_two_commands_that_run_alike(tmp_path: Path) -> None:
    config = load_config(REPO / "configs" / "engines.toml")
    plan = build_plan(config, [Dataset(str(tmp_path / "x.bin"), 128 << 20)])
    labels = [c.label for c in plan.commands if c.tool == "fio"]
    assert len(labels) == len(set(labels)) == 36
    for engine in ("sync", "psync"):
        assert [lbl for lbl in labels if f"engine={engine}" in lbl and "randread" not in lbl] == [
            f"fio bs={bs} iodepth=1 direct=1 engine={engine}" for bs in ("4K", "128K", "1M")]
    merged = [n for n in plan.notes if "two points run as" in n]
    assert len(merged) == 14 and all("kept once" in n for n in merged)


@pytest.mark.parametrize("key, value, says", [
    ("ioengine", '"posixaio"', "expected one of sync, psync, libaio, io_uring, got \"posixaio\""),
    ("rw", '"write"', "expected \"read\" (in order) or \"randread\""),
    ("iodepth_batch_submit", "0", 'expected a positive integer or "iodepth", got 0'),
])
def test_a_bad_fio_knob_is_a_one_line_error(tmp_path: Path, key: str, value: str, says: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[run]\nrounds = 1\n[baselines]\nlimit = false\nfio = {{ {key} = {value} }}\n")
    result = subprocess.run([sys.executable, "-m", "harness", "plan", str(cfg), "--size", "1M", "--dir", str(tmp_path)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert f"baselines.fio.{key}" in line and says in line, line


def test_an_engine_the_installed_fio_lacks_is_a_one_line_error_before_anything_runs() -> None:
    fio = str(find_tool("fio"))
    check_fio_engines(fio, ["io_uring", "libaio", "psync", "sync"])  # Debian's fio has the four
    with pytest.raises(SetupError) as caught:
        check_fio_engines(fio, ["io_uring", "no_such_engine"])
    assert str(caught.value) == f"{fio} has no ioengine no_such_engine (`fio --enghelp` lists those it has)"


@pytest.fixture(scope="module")
def engines_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("engines")
    cfg = d / "engines.toml"
    cfg.write_text("""[run]
rounds = 3
cache = "warm"
file_size = "8M"
[baselines]
limit = false
cat = true
fio = [{ ioengine = ["psync", "io_uring"], bs = ["4K", "1M"], iodepth = [1, 4], direct = false },
       { rw = "randread", ioengine = ["psync", "io_uring"], bs = "4K", iodepth = [1, 4], direct = false }]
""")
    result = subprocess.run([sys.executable, "-m", "harness", "run", str(cfg), "--size", "8M", "--dir", str(d),
                             "--out", str(d / "runs"), "--report"], capture_output=True, text=True, cwd=REPO,
                            timeout=600, env={**os.environ, **beside_the_line_env(d / "lock")})
    assert result.returncode == 0, result.stderr
    (run_dir,) = (d / "runs").iterdir()
    return run_dir


def test_a_run_of_engines_answers_in_one_line_and_draws_them(engines_run: Path) -> None:
    run = load_run(engines_run)
    said = engines.answer(run)
    assert said is not None and said.startswith("io_uring over psync at its best depth, time ratio: ")
    assert "(4K random, io_uring" in said and "(1M in order, io_uring" in said, said
    assert f"- fio's engines: {said}" in (engines_run / "summary.md").read_text()
    for chart in ("engines", "fio-in-flight"):
        assert (engines_run / f"{chart}.png").stat().st_size > 0
    fio = run.runs[run.runs["tool"] == "fio"]
    assert (fio["fio_iops"] > 0).all()
    deep = fio[fio["queue_depth"] == 4]
    assert deep["fio_depth"].fillna("").astype(bool).all()


def test_a_random_read_never_sets_the_speed_limit(engines_run: Path) -> None:
    run = load_run(engines_run)
    limit = speed_limit(run.runs)
    assert limit is not None and limit.readers
    randoms = {lbl for lbl in run.runs["label"].unique() if "rw=randread" in lbl}
    assert len(randoms) == 3 and not randoms & set(limit.readers)
    assert set(limit.readers) >= {"cat", "fio bs=1M iodepth=1 direct=0 engine=psync"}


def test_the_docs_quote_the_kept_runs_answer() -> None:
    said = engines.answer(load_run(REPO / "docs" / "engines" / "engines-run"))
    assert said and f"> {said}\n" in (REPO / "docs" / "engines.md").read_text(encoding="utf-8")
