"""Datasets: trees of many files as workloads, end to end with the real tools on small trees.

A tree's reference is b3sum's manifest; every command's whole output is checked against it as a set
of lines. The recipe makes the same bytes everywhere; a user's tree is only ever read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.datasets.dataset import TreeRecipe, manifest_difference, manifest_digest, tree_files
from harness.datasets.generate import ensure_dataset
from harness.machine import page_cache
from harness.pipeline.config import ConfigError, parse_config
from harness.pipeline.plan import resolve_files
from harness.judge.results import read_runs

REPO = Path(__file__).resolve().parent.parent
IS_ROOT = os.geteuid() == 0
MODE = [] if IS_ROOT else ["--warm"]
B3SUM = REPO / ".tools" / "bin" / "b3sum"
URING_B3SUM = REPO / "build" / "bin" / "uring_b3sum"


pytestmark = pytest.mark.usefixtures("own_run_lock")


def ringsum(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def b3sum_manifest(root: Path) -> str:
    paths = [p for p, _ in tree_files(root)]
    return subprocess.run([str(B3SUM), "--", *paths], capture_output=True, text=True, check=True).stdout


def hostile_tree(root: Path) -> Path:
    """Empty files, names b3sum escapes or cannot print as UTF-8, nesting, and entries a walk skips."""
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "empty-dir").mkdir()
    (root / "a" / "empty").write_bytes(b"")
    (root / "a" / "b" / "c" / "deep").write_bytes(os.urandom(70_000))
    (root / "line\nbreak").write_bytes(b"x" * 5000)
    (root / "back\\slash").write_bytes(b"y" * 5000)
    (root / "-leading dash and spaces ").write_bytes(b"z" * 3)
    (root / os.fsdecode(b"latin1-\xe9")).write_bytes(os.urandom(4096))
    (root / "a-b").write_bytes(os.urandom(8192))  # sorts before "a/..." as a path, after it as an entry
    (root / "link-to-file").symlink_to(root / "a-b")
    (root / "link-to-dir").symlink_to(root / "a")
    (root / "dangling").symlink_to(root / "nowhere")
    os.mkfifo(root / "fifo")
    return root


def test_recipe_makes_the_same_tree_everywhere(tmp_path: Path):
    recipe = TreeRecipe(files=40, median=3000, sigma=1.5, max_size=50_000, empty=0.1, seed=7, per_dir=8)
    sizes = recipe.sizes()
    assert sizes == TreeRecipe(**vars(recipe)).sizes() and sizes.count(0) >= 1 and max(sizes) <= 50_000
    assert TreeRecipe(**{**vars(recipe), "seed": 8}).sizes() != sizes
    assert recipe.ident() != TreeRecipe(**{**vars(recipe), "seed": 8}).ident()
    cfg = parse_config('[[datasets]]\nname = "t"\nfiles = 40\nmedian = 3000\nsigma = 1.5\nmax_size = 50000\n'
                       'empty = 0.1\nseed = 7\nper_dir = 8\n[baselines]\ncat = true\n', "c.toml")
    manifests = []
    for d in ("one", "two"):
        (ds,) = resolve_files(cfg, None, None, str(tmp_path / d))
        assert ds.is_tree and ds.files == 40 and ds.size == sum(sizes) and ds.name == "t"
        ensure_dataset(ds, lambda msg: None)
        found = list(tree_files(ds.path))
        assert [n for _, n in found] == sizes  # every file, in walk order, as the recipe sized it
        manifests.append(b3sum_manifest(Path(ds.path)).replace(ds.path, "ROOT"))
    assert manifests[0] == manifests[1]
    ensure_dataset(ds, lambda msg: pytest.fail(f"generated again: {msg}"))  # as made: reused


def test_generated_tree_not_as_made_is_made_again(tmp_path: Path):
    cfg = parse_config('[[datasets]]\nname = "t"\nfiles = 5\nfile_size = "1K"\n[baselines]\ncat = true\n', "c.toml")
    (ds,) = resolve_files(cfg, None, None, str(tmp_path))
    ensure_dataset(ds, lambda msg: None)
    victim = next(tree_files(ds.path))[0]
    Path(victim).write_bytes(b"short")
    said: list[str] = []
    ensure_dataset(ds, said.append)
    assert said and said[0].startswith("generating 5 files of 1K")
    assert [n for _, n in tree_files(ds.path)] == [1024] * 5


@pytest.mark.parametrize("text, error", [
    ('name = "t"\nfiles = 3\n', "datasets[0]: a recipe takes file_size (every file) or median"),
    ('name = "t"\nfiles = 3\nfile_size = "1K"\nsigma = 2\n', "sigma, max_size and empty shape log-normal sizes"),
    ('name = "t"\npath = "/x"\nfiles = 3\n', "datasets[0]: a path is read as it is: drop files"),
    ('name = "a b"\nfiles = 3\nfile_size = "1K"\n', "datasets[0].name: expected a name of letters"),
    ('name = "t"\nfiles = 3\nmedian = "1K"\nempty = 1.5\n', "datasets[0].empty: expected a number between 0 and 1"),
    ('name = "t"\nfiles = 0\nfile_size = "1K"\n', "datasets[0].files: expected a positive integer"),
    ('name = "t"\nfiles = 3\nmedian = "1K"\nempty = 1\n', "every file of this recipe is empty"),
])
def test_dataset_config_errors(text: str, error: str):
    with pytest.raises(ConfigError) as e:
        parse_config(f"[[datasets]]\n{text}[baselines]\ncat = true\n", "c.toml")
    assert error in str(e.value)
    with pytest.raises(ConfigError, match="either \\[\\[datasets\\]\\] or run.file"):
        parse_config('[run]\nfile_size = "1M"\n[[datasets]]\nname = "t"\nfiles = 3\nfile_size = "1K"\n'
                     '[baselines]\ncat = true\n', "c.toml")
    with pytest.raises(ConfigError, match="duplicate dataset name"):
        parse_config('[[datasets]]\nname = "t"\npath = "/a"\n[[datasets]]\nname = "t"\npath = "/b"\n'
                     '[baselines]\ncat = true\n', "c.toml")


def test_manifest_compared_as_a_set_and_differences_named(tmp_path: Path):
    root = hostile_tree(tmp_path / "t")
    ref = b3sum_manifest(root)
    lines = ref.splitlines(keepends=True)
    assert manifest_digest("".join(reversed(lines))) == manifest_digest(ref)  # order is not checked
    wrong = ref.replace(ref[1:65] if ref.startswith("\\") else ref[:64], "0" * 64, 1)
    assert manifest_digest(wrong) != manifest_digest(ref)
    assert manifest_difference(wrong, ref).startswith(f"1 of {len(lines)} reference lines missing or wrong, 1 unexpected")
    assert manifest_digest("".join(lines[1:])) != manifest_digest(ref)
    assert manifest_digest(ref + "not a hash line\n") is None


def test_tree_residency_dropped_and_warmed(tmp_path: Path):
    if not IS_ROOT:
        pytest.skip("dropping the page cache needs root")
    root = hostile_tree(tmp_path / "t")
    page_cache.drop_caches(root)
    assert page_cache.resident_fraction(root)[0] < 0.01
    assert page_cache.make_warm(root) > 0.99


def test_run_on_trees_checks_every_hash_and_never_writes_into_a_users_tree(tmp_path: Path):
    users = hostile_tree(tmp_path / "users")
    before = sorted((p, os.lstat(p).st_mtime_ns) for p in map(str, users.rglob("*")))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[run]\nrounds = 2\ntrace = false\n'
                   f'[[datasets]]\nname = "users"\npath = "{users}"\n'
                   f'[[datasets]]\nname = "made"\nfiles = 70\nfile_size = "12K"\nper_dir = 16\n'
                   '[[hashers]]\nvariant = "uring_b3sum"\nstyle = "defaults"\n'
                   '[[hashers]]\nvariant = "liburing_b3sum_singlethread"\n'
                   '[baselines]\nb3sum = { num_threads = [1] }\n'
                   f'[[commands]]\nname = "b3 list"\nargv = ["xargs", "-0", "-a", "{{list}}", "{B3SUM}", "--no-mmap"]\n'
                   'blake3 = true\n')
    out = tmp_path / "out"
    p = ringsum("run", str(cfg), "--dir", str(tmp_path / "data"), "--out", str(out), *MODE)
    assert p.returncode == 0, p.stderr
    (rd,) = [d for d in out.iterdir() if d.is_dir()]
    df = read_runs(rd)
    hashing = df[df["tool"].isin(["hasher", "b3sum", "command"])]
    assert set(hashing["label"]) == {f"{c} [{d}]" for d in ("users", "made") for c in (
        "uring_b3sum defaults", "liburing_b3sum_singlethread bs=512K qd=4 buf=4", "b3sum --num-threads 1", "b3 list")}
    assert hashing["hash_ok"].eq(True).all() and df["exit_code"].eq(0).all()
    readers = set(df.loc[df["tool"].isin(["cat", "tar"]), "label"])
    assert readers == {f"{c} [{d}]" for d in ("users", "made") for c in ("cat", "cat jobs=16", "tar")}
    assert set(df["files"]) == {7, 70} and set(df["file_size"]) == {sum(n for _, n in tree_files(users)), 70 * 12288}
    summary = json.loads((rd / "summary.json").read_text())
    assert [(h["files"], h["use"] is not None) for h in summary["headlines"]] == [(7, True), (70, True)]
    text = (rd / "summary.txt").read_text()
    assert text.count("What to use on this machine (tree of") == 2
    assert sorted((p, os.lstat(p).st_mtime_ns) for p in map(str, users.rglob("*"))) == before


def test_wrong_line_in_a_tree_is_a_mismatch(tmp_path: Path):
    """A hasher that gets one file of the tree wrong fails the run and says which."""
    root = tmp_path / "t"
    root.mkdir()
    for i in range(5):
        (root / f"f{i}").write_bytes(os.urandom(1000 + i))
    # The fake flips the first hex digit of line 2 whatever it is, so no hash escapes it.
    fake = tmp_path / "bin" / "uring_b3sum"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nfor a; do last="$a"; done\n'
                    f'find "$last" -type f -print0 | sort -z | xargs -0 "{B3SUM}" -- | sed "2{{s/^0/g/;s/^[1-9a-f]/0/;s/^g/1/}}"\n')
    fake.chmod(0o755)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[run]\nrounds = 1\ntrace = false\n[[datasets]]\nname = "t"\npath = "{root}"\n'
                   f'[[hashers]]\nvariant = "uring_b3sum"\nstyle = "defaults"\n[baselines]\nlimit = false\n')
    p = ringsum("run", str(cfg), "--out", str(tmp_path / "out"), "--bin-dir", str(fake.parent), *MODE)
    assert p.returncode == 1 and "HASH MISMATCH" in p.stderr
    df = read_runs(next((tmp_path / "out").iterdir()))
    assert df["error"].iloc[0] == f"hash mismatch: 1 of 5 reference lines missing or wrong, 1 unexpected (first: {root}/f1)"


def test_a_tree_that_changes_under_a_resume_is_refused(tmp_path: Path):
    root = tmp_path / "t"
    root.mkdir()
    (root / "f").write_bytes(os.urandom(5000))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[run]\nrounds = 1\n[[datasets]]\nname = "t"\npath = "{root}"\n[baselines]\ncat = true\n')
    p = ringsum("run", str(cfg), "--out", str(tmp_path / "out"), *MODE)
    assert p.returncode == 0, p.stderr
    rd = next((tmp_path / "out").iterdir())
    meta = json.loads((rd / "meta.json").read_text())
    meta["finished_at"] = None
    (rd / "meta.json").write_text(json.dumps(meta))
    (root / "f").write_bytes(os.urandom(5000))
    p = ringsum("run", "--resume", str(rd))
    assert p.returncode == 2 and p.stderr.strip().splitlines()[-1] == f"ringsum: tree {root} changed since the run started (b3sum differs)"


def test_plan_reads_a_tree_with_each_tool_as_it_can():
    from harness.datasets.dataset import LIST_PLACEHOLDER, TREE, Dataset
    from harness.pipeline.plan import PlanError, build_plan

    tree = Dataset("/data/t", 64 << 20, kind=TREE, files=1024, label="t")
    one = Dataset("/data/f.bin", 64 << 20)
    cfg = parse_config('[[hashers]]\nvariant = "uring_b3sum"\nstyle = "defaults"\n'
                       '[[hashers]]\nvariant = "liburing_b3sum_singlethread"\n'
                       '[baselines]\nb3sum = true\n[[commands]]\nname = "sha"\n'
                       'argv = ["xargs", "-0", "-a", "{list}", "sha256sum"]\n', "c.toml")
    plan = build_plan(cfg, [one, tree])
    by = {c.label: c for c in plan.commands}
    assert by["uring_b3sum defaults [t]"].argv[1:] == ("--recursive", "--", "/data/t")
    assert by["uring_b3sum defaults [f.bin]"].argv[1:] == ("--", "/data/f.bin")
    assert by["uring_b3sum defaults [t]"].block_size is None  # the hasher's own: not known here
    assert "--recursive" in by["liburing_b3sum_singlethread bs=512K qd=4 buf=4 [t]"].argv
    b3 = by["b3sum [t]"].argv
    assert Path(b3[0]).name == "xargs" and b3[1:4] == ("-0", "-a", LIST_PLACEHOLDER) and b3[-1] == "--"
    assert by["b3sum [f.bin]"].argv[-2:] == ("--", "/data/f.bin")
    assert by["sha [t]"].argv[3] == LIST_PLACEHOLDER and by["sha [t]"].files == 1024
    readers = {lbl for lbl, c in by.items() if c.tool in ("cat", "tar", "dd", "fio")}
    assert {lbl for lbl in readers if lbl.endswith("[t]")} == {"cat [t]", "cat jobs=16 [t]", "tar [t]"}
    assert "cat [f.bin]" in readers and "cat jobs=16 [f.bin]" not in readers and "tar [f.bin]" not in readers
    assert any(lbl.startswith("dd ") and lbl.endswith("[f.bin]") for lbl in readers)
    assert not any(c.tool in ("dd", "fio") for c in plan.commands if c.file == "/data/t")
    jobs = by["cat jobs=16 [t]"].argv
    assert jobs[4:8] == ("-P", "16", "-n", "16")  # 1024 files: each cat a quarter of its share
    positional = parse_config('[[hashers]]\nvariant = "liburing_b3sum_singlethread"\nstyle = "positional"\n', "c.toml")
    with pytest.raises(PlanError, match="the positional style reads one file, not the tree /data/t"):
        build_plan(positional, [tree])
    with pytest.raises(ConfigError, match='hashers\\[0\\].queue_depth: style = "defaults" runs the hasher with no knob'):
        parse_config('[[hashers]]\nvariant = "uring_b3sum"\nstyle = "defaults"\nqueue_depth = 8\n', "c.toml")
    with pytest.raises(ConfigError, match="{list} is a word of its own"):
        parse_config('[[commands]]\nname = "x"\nargv = ["tool", "--from={list}"]\n', "c.toml")
