"""Grid expansion, exclude/constraint rules, labels and argv, shuffling, duration estimate."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.datasets.dataset import Dataset
from harness.pipeline.config import ConfigError, load_config, parse_config
from harness.pipeline.estimate import estimate
from harness.pipeline.plan import PlanError, build_plan, round_orders

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
F = Dataset("/data/f.bin", 1 << 30)


def plan_of(text: str, files: list[Dataset] | None = None, limit: bool = False):
    """The plan of a config text; the limit group only with limit=True, so a test sees the
    config's own commands."""
    cfg = parse_config(text, "t.toml")
    if not limit:
        cfg = dataclasses.replace(cfg, limit_groups=())
    return cfg, build_plan(cfg, files or [F])


def test_full_grid_count():
    _, p = plan_of("""
        [[hashers]]
        variant = "liburing_b3sum_singlethread"
        block_size = ["64K", "128K", "512K", "2M"]
        queue_depth = [1, 2, 4, 8, 32]
        buffers = ["queue_depth", "2*queue_depth"]
        direct = [true, false]
    """)
    assert len(p.commands) == 4 * 5 * 2 * 2
    assert len({c.label for c in p.commands}) == len(p.commands)
    assert len({c.slug for c in p.commands}) == len(p.commands)
    c = next(c for c in p.commands if c.queue_depth == 8 and c.buffers == 16)
    assert c.block_size is not None


def test_exclude_rule_drops_matching_combinations():
    _, p = plan_of("""
        [[hashers]]
        variant = "v"
        block_size = ["512K", "2M"]
        queue_depth = [2, 4]
        direct = [true, false]
        exclude = [{ direct = false, block_size = "2M" }, { queue_depth = [4], direct = true, block_size = "512K" }]
    """)
    combos = {(c.block_size >> 10, c.queue_depth, c.direct) for c in p.commands}
    assert combos == {(512, 2, True), (512, 2, False), (512, 4, False), (2048, 2, True), (2048, 4, True)}


def test_constraints_see_resolved_buffers():
    _, p = plan_of("""
        [[hashers]]
        variant = "v"
        block_size = ["1M", "4M"]
        queue_depth = [4, 16]
        buffers = ["queue_depth", "2*queue_depth"]
        constraints = ["block_size * buffers <= 32M", "queue_depth >= 4", "buffers != 32"]
    """)
    got = sorted((c.block_size >> 20, c.queue_depth, c.buffers) for c in p.commands)
    # 1M: (4,4) (4,8) (16,16) [(16,32) fails buffers != 32];  4M: (4,4) 16M ok, (4,8) 32M ok, 16x.. > 32M
    assert got == [(1, 4, 4), (1, 4, 8), (1, 16, 16), (4, 4, 4), (4, 4, 8)]


def test_a_group_its_rules_empty_is_an_error_beside_others():
    with pytest.raises(PlanError, match="the exclude/constraints rules leave it no command to run"):
        plan_of("""
            [[hashers]]
            variant = "v"
            direct = [true]
            exclude = [{ direct = true }]
            [baselines]
            cat = true
        """)


def test_baseline_argv_and_knob_columns():
    _, p = plan_of("""
        [baselines]
        cat = true
        dd = { bs = ["64K"], direct = [false, true] }
        b3sum = [{ num_threads = [1, "all"] }, { name = "nommap", no_mmap = true }]
        xxhsum = { algo = ["xxh64", "xxh3"] }
        fio = { bs = "512K", iodepth = 2, direct = true }
    """, [Dataset("/d/a:b.bin", 4096)])
    by = {c.label: c for c in p.commands}
    assert set(by) == {"cat", "dd bs=64K", "dd bs=64K iflag=direct", "b3sum --num-threads 1", "b3sum",
                       "b3sum --no-mmap", "xxhsum", "xxhsum -H3", "fio bs=512K iodepth=2 direct=1"}
    dd = by["dd bs=64K iflag=direct"]
    assert dd.argv[1:] == ("if=/d/a:b.bin", "of=/dev/null", "bs=65536", "iflag=direct", "status=none")
    assert (dd.block_size, dd.direct, dd.tool) == (65536, True, "dd")
    assert by["b3sum --no-mmap"].mmap is False and by["b3sum --no-mmap"].group == "nommap"
    assert by["b3sum"].num_threads is None and by["b3sum"].mmap is True
    fio = by["fio bs=512K iodepth=2 direct=1"]
    assert (fio.block_size, fio.queue_depth, fio.direct) == (512 << 10, 2, True)
    # issue 15: fio parses --filename; the run hands it a path of digits in place of the placeholder
    assert "--filename={FIO_FILE}" in fio.argv and "--allow_file_create=0" in fio.argv
    assert by["cat"].argv[1:] == ("--", "/d/a:b.bin") and by["b3sum"].argv[-2:] == ("--", "/d/a:b.bin")
    assert "--size=4096" in fio.argv and "--ioengine=io_uring" in fio.argv
    assert by["cat"].trace_argv is None and not by["cat"].hashes and by["b3sum"].hashes


def test_article_config_rows():
    cfg = load_config(REPO / "configs" / "article.toml")
    p = build_plan(cfg, [F])
    labels = [c.label for c in p.commands]
    for variant in ("liburing_b3sum_singlethread", "liburing_b3sum_multithread"):
        assert f"{variant} 512 2 1 0 2 0 0" in labels
        assert f"{variant} 128 20 0 0 8 0 0" in labels
    for n in range(1, 9):
        assert f"b3sum --num-threads {n}" in labels
    for lbl in ("b3sum --no-mmap", "cat", "dd bs=64K", "dd bs=2M", "fio bs=512K iodepth=2 direct=1", "xxhsum"):
        assert lbl in labels
    assert len([c for c in p.commands if not c.group.startswith("limit-")]) == 18
    st_ = next(c for c in p.commands if c.label.startswith("liburing_b3sum_singlethread"))
    assert list(st_.argv[1:]) == [F.path, "512", "2", "1", "0", "2", "0", "0"]
    assert st_.trace_argv is not None and "--trace" in st_.trace_argv
    assert p.rounds == 10


def test_warm_mode_adds_blake3_speed_commands():
    text = '[run]\ncache = "warm"\n[baselines]\ncat = true\nb3sum = { num_threads = [1] }\n'
    _, p = plan_of(text)
    labels = [c.label for c in p.commands]
    assert labels.count("b3sum --num-threads 1") == 1 and "b3sum" in labels
    _, p = plan_of(text.replace('"warm"', '"cold"'))
    assert "b3sum" not in [c.label for c in p.commands]


def test_multiple_files_tag_labels():
    _, p = plan_of("[baselines]\ncat = true\n", [Dataset("/a/x.bin", 10), Dataset("/a/y.bin", 20)])
    assert [c.label for c in p.commands] == ["cat [x.bin]", "cat [y.bin]"]


def test_shipped_config_estimates_fit_their_budget():
    for name, limit_s in (("quick", 300), ("ci", 60)):
        cfg = load_config(REPO / "configs" / f"{name}.toml")
        size = cfg.run.file_sizes[0]
        p = build_plan(cfg, [Dataset("/x", size)])
        est = estimate(p, cfg)
        assert est.total_s < limit_s * 0.8, (name, est)
        if name == "quick":
            assert p.timed_executions + p.traced_executions <= 150


def test_plan_cli_prints_commands_and_estimate():
    out = subprocess.run([sys.executable, "-m", "harness", "plan", str(REPO / "configs" / "ci.toml")],
                         capture_output=True, text=True, check=True).stdout
    assert "estimated duration:" in out
    assert "timed executions" in out
    assert "b3sum --num-threads 1" in out


# --- shuffling ---

def test_shuffle_every_command_once_per_round_and_rounds_differ():
    labels = [f"c{i}" for i in range(6)]
    orders = round_orders(labels, rounds=10, runs_per_round=1, seed=42)
    assert len(orders) == 10
    for o in orders:
        assert sorted(o) == sorted(labels)
    for a, b in zip(orders, orders[1:]):
        assert a != b
    assert orders == round_orders(labels, 10, 1, 42)  # seed makes it reproducible
    assert orders != round_orders(labels, 10, 1, 43)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), rounds=st.integers(1, 6), reps=st.integers(1, 3), seed=st.integers(0, 2**32))
def test_shuffle_property(n: int, rounds: int, reps: int, seed: int):
    labels = [f"l{i}" for i in range(n)]
    orders = round_orders(labels, rounds, reps, seed)
    assert len(orders) == rounds
    for o in orders:
        assert Counter(o) == {lbl: reps for lbl in labels}
    if n >= 2:
        for a, b in zip(orders, orders[1:]):
            assert a != b


@pytest.mark.parametrize("cfg", ["ci", "quick", "article", "full"])
def test_shipped_configs_have_unique_labels(cfg: str):
    c = load_config(REPO / "configs" / f"{cfg}.toml")
    p = build_plan(c, [F])
    assert len({x.label for x in p.commands}) == len(p.commands)


def test_io_uring_feature_knobs_become_flags_labels_and_columns():
    text = ('[[hashers]]\nvariant = "liburing_b3sum_singlethread"\n'
            'fixed_buffers = [false, true]\nsqpoll = true\nparallel_hash = true\n')
    _, p = plan_of(text)
    assert len(p.commands) == 2
    on = next(c for c in p.commands if c.knobs["fixed_buffers"])
    assert {"--fixed-buffers", "--sqpoll", "--parallel-hash"} <= set(on.argv)
    assert on.label.endswith("fixedbuf sqpoll parhash") and on.knobs["sqpoll"] and not on.knobs["fixed_file"]


def test_positional_style_refuses_knobs_it_cannot_express():
    text = '[[hashers]]\nvariant = "liburing_b3sum_singlethread"\nstyle = "positional"\nsqpoll = true\n'
    with pytest.raises(PlanError, match="cannot express sqpoll"):
        plan_of(text)


def test_limit_group_is_added_once_and_can_be_turned_off():
    text = """
        [[hashers]]
        variant = "v"
        [baselines]
        dd = { bs = ["2M"] }
        fio = { bs = "512K", iodepth = 2, direct = true }
    """
    _, p = plan_of(text, limit=True)
    readers = {c.label: c.group for c in p.commands if c.tool != "hasher"}
    assert readers == {"dd bs=2M": "dd", "fio bs=512K iodepth=2 direct=1": "fio", "cat": "limit-cat",
                       "dd bs=64K": "limit-dd", "dd bs=1M": "limit-dd",
                       "fio bs=2M iodepth=8 direct=1": "limit-fio-1", "fio bs=512K iodepth=8 direct=0": "limit-fio-2"}
    assert not any("already in group" in n for n in p.notes)  # the overlap is on purpose
    (note,) = [n for n in p.notes if n.startswith("speed limit:")]
    assert "cat, dd bs=64K, dd bs=1M, fio bs=2M iodepth=8 direct=1, fio bs=512K iodepth=8 direct=0" in note
    _, off = plan_of(text.replace("[baselines]", "[baselines]\n        limit = false"), limit=True)
    assert [c.label for c in off.commands if c.tool != "hasher"] == ["dd bs=2M", "fio bs=512K iodepth=2 direct=1"]


def test_limit_group_skips_fio_that_would_not_read_the_whole_file():
    _, p = plan_of("[[hashers]]\nvariant = \"v\"\n", [Dataset("/a/x.bin", 3 << 20)], limit=True)
    fio = [c.label for c in p.commands if c.tool == "fio"]
    assert fio == ["fio bs=512K iodepth=2 direct=1", "fio bs=512K iodepth=8 direct=0"]  # 2M does not divide 3M


def test_limit_key_must_be_a_boolean():
    with pytest.raises(ConfigError, match=r"^t.toml: baselines.limit: expected true or false, got \"no\"$"):
        parse_config('[baselines]\ncat = true\nlimit = "no"\n', "t.toml")


def test_positional_style_for_uring_b3sum_says_so(tmp_path):
    """uring_b3sum takes its arguments as b3sum does, so its positional argv starts with --positional;
    the argv the plan builds hashes the file (the real program, against b3sum)."""
    from hashers_support import b3sum_lines, data_file

    path = data_file(3 * (1 << 20) + 7)
    for variant, lead in (("uring_b3sum", ["--positional"]), ("liburing_b3sum_singlethread", [])):
        text = (f'[[hashers]]\nvariant = "{variant}"\nstyle = "positional"\n'
                f'block_size = "128K"\nqueue_depth = 4\n')
        cfg, p = plan_of(text, [Dataset(str(path), path.stat().st_size)])
        (command,) = p.commands
        assert list(command.argv[1:]) == [*lead, str(path), "128", "4", "0", "0", "4", "0", "0"]
        argv = [str(REPO / "build" / "bin" / variant), *command.argv[1:]]
        result = subprocess.run(argv, capture_output=True, timeout=60)
        assert result.returncode == 0 and result.stdout == b3sum_lines([path]), result.stderr


def test_two_configurations_that_run_alike_are_one_command():
    """A flag a variant ignores (process_in_inner_loop on the multi-threaded loop) changes nothing it
    runs: one command. uring_b3sum's own numbers are 4M, depth 8, 16 buffers and huge pages, but a
    group that gives exactly those is not its `defaults` group: with no depth, buffers or window given
    it keeps twice the buffers and deepens its queue when the reads fall behind (hashers/options.c;
    tests/test_depth.py: a depth or buffers given keep it), so both run: a plan that merged them
    dropped the comparison a config asked for."""
    _, p = plan_of("""
        [[hashers]]
        name = "own"
        variant = "uring_b3sum"
        style = "defaults"
        [[hashers]]
        variant = "uring_b3sum"
        block_size = ["4M", "1M"]
        queue_depth = 8
        buffers = "2*queue_depth"
        [[hashers]]
        variant = "liburing_b3sum_multithread"
        block_size = "128K"
        process_in_inner_loop = [false, true]
    """)
    assert [c.label for c in p.commands] == ["uring_b3sum defaults", "uring_b3sum bs=4M qd=8 buf=16",
                                             "uring_b3sum bs=1M qd=8 buf=16",
                                             "liburing_b3sum_multithread bs=128K qd=4 buf=4"]
    assert not any("runs as 'uring_b3sum defaults'" in n for n in p.notes), p.notes
    assert any("'liburing_b3sum_multithread bs=128K qd=4 buf=4 inner' runs as 'liburing_b3sum_multithread bs=128K qd=4 buf=4'" in n
               for n in p.notes)


def test_a_uring_b3sum_group_without_knobs_says_it_is_not_the_program_as_installed(tmp_path: Path) -> None:
    """`variant = "uring_b3sum"` alone runs the sweep's knob defaults (512K x 4), not the program as a
    user runs it (4M x 8, its own choices): the plan says so, and `style = "defaults"` is that program."""
    config = tmp_path / "c.toml"
    config.write_text('[run]\nfile_size = "8M"\n\n[[hashers]]\nvariant = "uring_b3sum"\n\n[baselines]\nlimit = false\n')
    assert any("no knob given" in n and 'style = "defaults"' in n for n in build_plan(load_config(config), [F]).notes)
    config.write_text(config.read_text().replace('variant = "uring_b3sum"', 'variant = "uring_b3sum"\nstyle = "defaults"'))
    assert not any("no knob given" in n for n in build_plan(load_config(config), [F]).notes)


def test_a_cached_share_is_kept_of_a_file_not_of_a_tree():
    text = '[run]\ncached_share = 0.5\n[[hashers]]\nvariant = "v"\n'
    assert plan_of(text)[1].commands
    tree = Dataset("/data/tree", 64 << 20, kind="tree", files=1024)
    with pytest.raises(PlanError, match="run.cached_share keeps a share of a file, and /data/tree is a tree"):
        plan_of(text, [F, tree])


def test_a_cached_share_reads_the_file_back_before_every_execution_in_the_estimate():
    text = '[run]\nrounds = 3\n[run.nominal]\nread = "1G"\n[[hashers]]\nvariant = "v"\n'
    cfg, plan = plan_of(text)
    kept_cfg, kept_plan = plan_of(text.replace("rounds = 3", "rounds = 3\ncached_share = 0.5"))
    extra = estimate(kept_plan, kept_cfg).timed_s - estimate(plan, cfg).timed_s
    assert extra == pytest.approx(3 * len(plan.commands) * F.size / (1 << 30))   # read = "1G": 1 GiB/s
