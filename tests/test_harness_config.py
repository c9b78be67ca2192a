"""Config parsing: the shipped configs, and one test per kind of error (message names file + key)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.pipeline.config import ConfigError, load_config, parse_config
from harness.config_values import Buffers

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
CONFIGS = sorted((REPO / "configs").glob("*.toml"))


def err(text: str, path: str = "configs/x.toml") -> str:
    with pytest.raises(ConfigError) as e:
        parse_config(text, path)
    return str(e.value)


def test_shipped_configs_exist():
    names = {p.name for p in CONFIGS}
    assert {"quick.toml", "article.toml", "full.toml", "ci.toml"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_parse(path: Path):
    cfg = load_config(path)
    assert cfg.groups
    assert cfg.run.rounds >= 1


def test_happy_path_values():
    cfg = parse_config(
        """
        [run]
        rounds = 3
        cache = "warm"
        file_size = "4M"
        timeout_s = 10
        seed = 5
        [[hashers]]
        name = "st"
        variant = "liburing_b3sum_singlethread"
        block_size = ["64K", "2M"]
        queue_depth = [1, 8]
        buffers = ["queue_depth", "2*queue_depth", 3]
        direct = [true, false]
        drain = true
        exclude = [{ direct = false, block_size = "2M" }]
        constraints = ["block_size * buffers <= 8M"]
        [baselines]
        cat = true
        dd = { bs = ["64K", "2M"], direct = [false, true] }
        b3sum = { num_threads = [1, "all"], no_mmap = [false, true] }
        xxhsum = false
        fio = { bs = "512K", iodepth = [2, 4] }
        """,
        "t.toml",
    )
    assert cfg.run.rounds == 3 and cfg.run.cache == "warm" and cfg.run.file_sizes == (4 << 20,)
    assert cfg.run.seed == 5 and cfg.run.timeout_s == 10.0
    h = cfg.groups[0]
    assert h.kind == "hasher" and h.name == "st"
    assert h.grid["block_size"] == (64 << 10, 2 << 20)
    assert h.grid["buffers"] == (Buffers(per_queue_depth=1), Buffers(per_queue_depth=2), Buffers(count=3))
    assert h.grid["drain"] == (True,)
    assert h.grid["link"] == (False,)  # default
    assert h.exclude == ({"direct": (False,), "block_size": (2 << 20,)},)
    assert [g.kind for g in cfg.groups] == ["hasher", "cat", "dd", "b3sum", "fio"]  # xxhsum = false
    b3 = cfg.groups[3]
    assert b3.grid["num_threads"] == (1, None)
    fio = cfg.groups[4]
    assert fio.grid == {"bs": (512 << 10,), "iodepth": (2, 4), "direct": (True,), "ioengine": ("io_uring",),
                        "rw": ("read",), "iodepth_batch_submit": (None,), "iodepth_batch_complete_min": (None,),
                        "iodepth_batch_complete_max": (None,), "fixedbufs": (False,), "registerfiles": (False,),
                        "sqthread_poll": (False,)}


def test_bad_toml_names_file_and_position():
    msg = err("[run]\nrounds = = 3\n")
    assert msg.startswith("configs/x.toml: invalid TOML")
    assert "line 2" in msg


def test_unknown_top_level_key():
    msg = err("[runn]\nrounds = 3\n")
    assert msg.startswith("configs/x.toml: runn: unknown key")


def test_unknown_nested_key_typo():
    msg = err('[[hashers]]\nvariant = "x"\nqueue_dept = [1]\n')
    assert msg.startswith("configs/x.toml: hashers[0].queue_dept: unknown key")
    msg = err("[baselines]\ndd = { bz = [\"64K\"] }\n")
    assert msg.startswith("configs/x.toml: baselines.dd.bz: unknown key")
    msg = err("[baselines]\nsha256sum = true\n")
    assert "baselines.sha256sum: unknown key" in msg


def test_wrong_type_names_key_and_value():
    msg = err('[[hashers]]\nvariant = "a"\n[[hashers]]\nvariant = "b"\nqueue_depth = ["four"]\n')
    assert msg == 'configs/x.toml: hashers[1].queue_depth[0]: expected a positive integer, got "four"'
    msg = err('[[hashers]]\nvariant = "b"\nqueue_depth = "four"\n')
    assert msg == 'configs/x.toml: hashers[0].queue_depth: expected a positive integer, got "four"'
    assert "run.rounds: expected a positive integer, got 0" in err("[run]\nrounds = 0\n")
    assert 'run.cache: expected "cold" or "warm"' in err('[run]\ncache = "tepid"\n')
    assert 'hashers[0].block_size[1]: expected a size like 512K, got "lots"' in err(
        '[[hashers]]\nvariant = "b"\nblock_size = ["64K", "lots"]\n')
    assert "hashers[0].direct: expected true or false, got 1" in err(
        '[[hashers]]\nvariant = "b"\ndirect = 1\n')
    assert "hashers[0].buffers: expected a positive integer" in err(
        '[[hashers]]\nvariant = "b"\nbuffers = "qd"\n')
    assert 'baselines.b3sum.num_threads[0]: expected a positive integer or "all"' in err(
        "[baselines]\nb3sum = { num_threads = [0] }\n")


def test_empty_grid():
    msg = err('[[hashers]]\nvariant = "b"\nblock_size = []\n')
    assert msg == "configs/x.toml: hashers[0].block_size: empty list; give at least one value"


def test_missing_variant_and_no_commands():
    assert "hashers[0].variant: missing" in err("[[hashers]]\nblock_size = \"64K\"\n")
    assert "no commands" in err("[run]\nrounds = 2\n")


def test_bad_constraint_and_exclude():
    assert "hashers[0].constraints[0]: cannot parse" in err(
        '[[hashers]]\nvariant = "b"\nconstraints = ["block_size +++ 3"]\n')
    assert "'blocks' is neither a knob" in err(
        '[[hashers]]\nvariant = "b"\nconstraints = ["blocks <= 3"]\n')
    assert "hashers[0].exclude[0].colour: unknown key" in err(
        '[[hashers]]\nvariant = "b"\nexclude = [{ colour = "red" }]\n')


def test_duplicate_group_names():
    assert "duplicate group name" in err(
        '[[hashers]]\nvariant = "b"\n[[hashers]]\nvariant = "b"\n')


def test_cli_reports_config_errors_before_running(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[hashers]]\nvariant = "b"\nqueue_depth = "four"\n')
    for sub in ("plan", "run"):
        p = subprocess.run([sys.executable, "-m", "harness", sub, str(bad), "--out", str(tmp_path / "r")]
                           if sub == "run" else [sys.executable, "-m", "harness", sub, str(bad)],
                           capture_output=True, text=True, cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip() == (f'ringsum: {bad}: hashers[0].queue_depth: expected a positive '
                                    f'integer, got "four"')
    assert not (tmp_path / "r").exists()  # nothing ran
    p = subprocess.run([sys.executable, "-m", "harness", "plan", str(tmp_path / "nope.toml")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "nope.toml: config file not found" in p.stderr


def test_a_cached_share_is_a_part_of_a_cold_file():
    assert parse_config('[run]\ncached_share = 0.25\n[[hashers]]\nvariant = "b"\n', "c.toml").run.cached_share == 0.25
    assert 'run.cached_share: goes with cache = "cold"' in err('[run]\ncache = "warm"\ncached_share = 0.5\n')
    for bad in ("0", "1", "1.5", "true", '"half"'):
        assert "run.cached_share: expected a number between 0 and 1, both excluded" in err(
            f"[run]\ncached_share = {bad}\n"), bad
