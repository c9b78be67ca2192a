"""uring_b3sum's wisdom (hashers/wisdom.c, harness/tune/wisdom.py): a record decides only for the
machine, device and kind of work it was measured on, and only what no option gave; a record from a
cold file never sends a cached file to the disk; install, show and forget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.tune import wisdom
from hashers_support import MiB, b3sum_lines, data_file, evict, program, run

URING_B3SUM = "uring_b3sum"
REPO = Path(__file__).resolve().parent.parent


def _key(path: Path) -> str:
    return wisdom.key_of(program(URING_B3SUM), path)


def _how(path_or_paths: Path | list[Path], wisdom_file: Path, *args: str, cold: bool = False) -> tuple[str, bytes]:
    """What uring_b3sum --verbose said, and its output (checked against b3sum, which caches the files)."""
    paths = path_or_paths if isinstance(path_or_paths, list) else [path_or_paths]
    for path in paths if cold else ():
        evict(path)
    result = run([program(URING_B3SUM), "--verbose", *args, *paths],
                 env={**os.environ, wisdom.ENV: str(wisdom_file)})
    assert result.returncode == 0, result.stderr
    assert result.stdout == b3sum_lines(paths)
    return result.stderr.decode(), result.stdout


def _tune_dir(tmp_path: Path, work: str, knobs: dict, key: str) -> Path:
    """A finished tune's record of itself, as `ringsum tune` writes tune.json (harness/tune/output.py)."""
    tune_dir = tmp_path / "tune-20261127T120000Z"
    tune_dir.mkdir(exist_ok=True)
    full = {"block_size": 4 * MiB, "queue_depth": 8, "buffers": 16, "direct": False, "huge_pages": True}
    (tune_dir / "tune.json").write_text(json.dumps({
        "best_default": ["uring_b3sum tuned", 0.5], "best_default_variant": URING_B3SUM,
        "best_default_knobs": {**full, **knobs}, "work": work, "wisdom_key": key,
        "finished_at": "2026-11-27T12:00:00Z"}))
    return tune_dir


@pytest.fixture
def cached_file(tmp_path: Path) -> Path:
    path = tmp_path / "wisdom.bin"
    path.write_bytes(data_file(8 * MiB + 3).read_bytes())
    path.read_bytes()
    return path


def test_a_cold_file_record_never_sends_a_cached_file_to_the_disk(tmp_path: Path, cached_file: Path) -> None:
    """The record a cold tune installs keeps the ring's knobs that differ from the defaults and never
    --direct (the defaults read a cold file with O_DIRECT anyway; a forced --direct read a cached file
    from the disk, 5x slower): cached, the file is still hashed from memory; cold, with the record's ring."""
    book = tmp_path / "wisdom"
    tune_dir = _tune_dir(tmp_path, "cold-file", {"block_size": MiB, "queue_depth": 4, "buffers": 4, "direct": True},
                         _key(cached_file))
    record = wisdom.install(tune_dir, book)
    assert record.options == ("--block-size", "1M", "--queue-depth", "4", "--buffers", "4")
    assert record.work == "cold-file" and record.by == tune_dir.name
    said, _ = _how(cached_file, book)
    assert "hashing from the page cache" in said and "wisdom for cold-file work, measured 2026-11-27T12:00:00Z" in said
    said, _ = _how(cached_file, book, cold=True)
    assert "reading through the io_uring ring (1024K blocks, 4 deep, 4 buffers, O_DIRECT)" in said, said


def test_a_cached_file_record_with_a_staging_skips_the_staging_trial(tmp_path: Path, cached_file: Path) -> None:
    """Where a record says how a cached file's tasks meet the cache, that is what runs, with no trial;
    a record that does not say leaves it to the trial on the file's first tasks (hashers/parallel_hash.cpp)."""
    book = tmp_path / "wisdom"
    key = _key(cached_file)
    for knobs, staging, trial in (({"read_once": True}, "staging read-once)", False),
                                  ({"in_place": True}, "staging in-place)", False),
                                  ({"prefetch": True}, "staging prefetch)", False),
                                  ({"stage_size": 2 * MiB}, "measured on its first tasks)", True)):
        record = wisdom.install(_tune_dir(tmp_path, "cached-file", knobs, key), book)
        assert record.work == "cached-file", record
        said, _ = _how(cached_file, book)
        assert "wisdom for cached-file work, measured 2026-11-27T12:00:00Z" in said and staging in said, said
        assert ("measured here: prefetched / in place" in said) == trial, said


def test_a_record_decides_only_for_its_device_work_and_what_no_option_gave(tmp_path: Path, cached_file: Path) -> None:
    key = _key(cached_file)
    other_device = " ".join(w if not w.startswith("device=") else "device=nvme9n9" for w in key.split())
    book = tmp_path / "wisdom"
    book.write_text(f"{other_device} work=cold-file measured=a options=--block-size 256K\n"
                    f"{key} work=cold-tree measured=b options=--block-size 512K --queue-depth 2\n")
    said, _ = _how(cached_file, book, cold=True)
    assert "no wisdom for " in said and "(4096K blocks, 8 deep, 16 buffers, O_DIRECT)" in said, said
    second = cached_file.with_name("second.bin")
    second.write_bytes(data_file(MiB + 1).read_bytes())
    said, _ = _how([cached_file, second], book, cold=True)
    assert "wisdom for cold-tree work, measured b" in said and "(512K blocks, 2 deep, 4 buffers, O_DIRECT)" in said, said
    said, _ = _how([cached_file, second], book, "--queue-depth", "3", cold=True)
    assert "(512K blocks, 3 deep, 6 buffers, O_DIRECT)" in said, said
    said, _ = _how([cached_file, second], tmp_path / "none", cold=True)
    assert f"no wisdom for {key} ({tmp_path / 'none'}: No such file or directory): the defaults" in said, said
    for off in (["--no-wisdom"], []):
        path = book if off else Path(os.devnull)
        said, _ = _how([cached_file, second], path, *off, cold=True)
        assert "(4096K blocks, 8 deep, 16 buffers, O_DIRECT)" in said, said


def test_a_tree_record_is_for_the_cache_state_it_was_measured_in(tmp_path: Path, cached_file: Path) -> None:
    """A cached tree's small files go through the ring as a cold tree's do: a cold tree's record (its
    ring) is not a cached tree's, nor the other way round. uring_b3sum samples the tree's files to
    tell which it is given; a record from before the two were told apart ("tree") is never applied,
    and `ringsum wisdom show` says so."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    files = [tree / "sub" / f"f{i}.bin" for i in range(3)]
    for i, path in enumerate(files):
        path.write_bytes(data_file(256 * 1024 + i).read_bytes())
    key = _key(tree)
    book = tmp_path / "wisdom"
    book.write_text(f"{key} work=cold-tree measured=c options=--block-size 512K --queue-depth 2\n"
                    f"{key} work=cached-tree measured=h options=--queue-depth 3\n"
                    f"{key} work=tree measured=t options=--queue-depth 5\n")
    for cold, work, ring in ((True, "cold-tree", "(512K blocks, 2 deep, 4 buffers, O_DIRECT)"),
                             (False, "cached-tree", "(4096K blocks, 3 deep, 6 buffers)")):
        for path in files:
            evict(path) if cold else path.read_bytes()
        result = run([program(URING_B3SUM), "--verbose", "-r", tree], env={**os.environ, wisdom.ENV: str(book)})
        said = result.stderr.decode()
        assert result.returncode == 0 and result.stdout == b3sum_lines(files), said
        assert f"a {work.replace('-', ' ')}: of 3 files sampled" in said, said
        assert f"wisdom for {work} work, measured {'c' if cold else 'h'}" in said and ring in said, said
        assert "measured t" not in said and "5 deep" not in said, said
    sums = tmp_path / "sums.b3"
    sums.write_bytes(b3sum_lines(files))
    checked = run([program(URING_B3SUM), "--verbose", "--check", sums], env={**os.environ, wisdom.ENV: str(book)})
    said = checked.stderr.decode()
    assert checked.returncode == 0 and "no file of the tree to tell a cold tree from a cached one" in said, said
    assert "measured" not in said, said
    shown = wisdom.show(book)
    assert any("work=" not in line and "  tree " in line and "not used" in line for line in shown), shown


def test_a_tree_is_sampled_in_the_order_it_is_hashed(tmp_path: Path) -> None:
    """The sample is the walk's first files, in the order it hashes them (sorted names), not readdir's:
    reading ahead of the walk the metadata of a directory it reaches later made a cold tree's walk
    slower. Here the walk's first 8 of 64 files are cached and the rest cold: a sample in readdir's
    (hash) order would find most of its files cold."""
    tree = tmp_path / "tree"
    tree.mkdir()
    files = [tree / f"f{i:02d}.bin" for i in range(64)]
    for i, path in enumerate(files):
        path.write_bytes(data_file(64 * 1024 + i).read_bytes())
    book = tmp_path / "wisdom"
    book.write_text("# no records: the sample is still taken and said\n")
    for i, path in enumerate(files):
        evict(path) if i >= 8 else path.read_bytes()
    result = run([program(URING_B3SUM), "--verbose", "-r", tree], env={**os.environ, wisdom.ENV: str(book)})
    said = result.stderr.decode()
    assert result.returncode == 0 and result.stdout == b3sum_lines(files), said
    assert "a cached tree: of 8 files sampled, most in the page cache" in said, said
    for i, path in enumerate(files):
        path.read_bytes() if i >= 8 else evict(path)
    said = run([program(URING_B3SUM), "--verbose", "-r", tree], env={**os.environ, wisdom.ENV: str(book)}).stderr.decode()
    assert "a cold tree: of 8 files sampled, most not in the page cache" in said, said


def test_a_pick_is_recorded_only_where_it_beat_the_defaults(tmp_path: Path) -> None:
    """The final stage races the best uring_b3sum setting against uring_b3sum's defaults: a record
    holds the pick only where its time over theirs has its interval below 1, over rounds enough for
    that interval to cover 90%; else it holds the defaults (a cached tree's tune here picked a setting
    1.25 x the defaults' time). A tune from before that race is installed as it was."""
    key = _key(REPO)
    knobs = {"block_size": 64 * 1024, "queue_depth": 32, "buffers": 32}
    for versus, options in (({"median": 0.9, "low": 0.85, "high": 0.97, "n": 5, "confidence": 0.9375},
                             ("--block-size", "64K", "--queue-depth", "32", "--buffers", "32")),
                            ({"median": 0.9, "low": 0.85, "high": 1.02, "n": 5, "confidence": 0.9375}, ()),
                            ({"median": 0.9, "low": 0.85, "high": 0.97, "n": 3, "confidence": 0.75}, ()),
                            ({"median": 1.25, "low": 1.1, "high": 1.58, "n": 11, "confidence": 0.9883}, ()),
                            (None, ("--block-size", "64K", "--queue-depth", "32", "--buffers", "32"))):
        tune_dir = _tune_dir(tmp_path, "cached-tree", knobs, key)
        data = json.loads((tune_dir / "tune.json").read_text())
        (tune_dir / "tune.json").write_text(json.dumps({**data, "best_default_vs_defaults": versus}))
        record = wisdom.install(tune_dir, tmp_path / "wisdom")
        assert record.work == "cached-tree" and record.options == options, (versus, record)
    said = subprocess.run([sys.executable, "-m", "harness", "wisdom", "install", str(tune_dir)], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, wisdom.ENV: str(tmp_path / "w2")})
    assert said.returncode == 0 and said.stdout.endswith(": --block-size 64K --queue-depth 32 --buffers 32\n"), said
    data = json.loads((tune_dir / "tune.json").read_text())
    (tune_dir / "tune.json").write_text(json.dumps({**data, "best_default_vs_defaults": {
        "median": 1.25, "low": 1.1, "high": 1.58, "n": 11, "confidence": 0.9883}}))
    said = subprocess.run([sys.executable, "-m", "harness", "wisdom", "install", str(tune_dir)], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, wisdom.ENV: str(tmp_path / "w2")})
    assert said.returncode == 0, said
    assert said.stdout.endswith(": the defaults (its pick took 1.25 [1.10, 1.58] x the defaults' time in the "
                                "final stage: not clearly faster: its interval reaches 1)\n"), said.stdout
    # an interval below 1 from too few rounds is named as that (a 4-round final stage said "reaches 1")
    few = {"median": 0.97, "low": 0.95, "high": 0.98, "n": 4, "confidence": 0.875}
    assert wisdom.not_faster_because(few) == "4 rounds give an interval of 87.5%, under the 90% a record needs"


def test_a_bad_record_is_a_one_line_error_naming_its_line(tmp_path: Path, cached_file: Path) -> None:
    key = _key(cached_file)
    book = tmp_path / "wisdom"
    for options, why in (("--direct", "'--direct' is not a choice a cold-file record makes"),
                         ("--read-once", "'--read-once' is not a choice a cold-file record makes"),
                         ("--block-size 3Q", "invalid --block-size '3Q'")):
        book.write_text(f"# a comment\n{key} work=cold-file measured=x options={options}\n")
        result = run([program(URING_B3SUM), cached_file], env={**os.environ, wisdom.ENV: str(book)})
        lines = result.stderr.decode().splitlines()
        assert result.returncode == 2 and result.stdout == b"" and len(lines) == 1, result.stderr
        assert lines[0].startswith(f"uring_b3sum: {book}:2: {why}"), lines


def test_install_replaces_its_own_key_and_work_and_forget_drops_what_it_is_asked(tmp_path: Path) -> None:
    book = tmp_path / "config" / "ringsum" / "wisdom"
    key = _key(REPO)
    wisdom.install(_tune_dir(tmp_path, "cold-file", {"queue_depth": 16, "buffers": 16}, key), book)
    wisdom.install(_tune_dir(tmp_path, "cached-file", {"stage_size": 4 * MiB, "read_once": True}, key), book)
    again = wisdom.install(_tune_dir(tmp_path, "cold-file", {"queue_depth": 16, "buffers": 32}, key), book)
    records = wisdom.read_records(book)
    assert [(r.work, r.options) for r in records] == [("cached-file", ("--stage-size", "4M", "--read-once")),
                                                       ("cold-file", ("--queue-depth", "16"))]
    assert again == records[1]
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop(wisdom.ENV, None)
    shown = subprocess.run([sys.executable, "-m", "harness", "wisdom", "show"], capture_output=True, text=True,
                           cwd=REPO, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].startswith(f"wisdom: {book} (2 records")
    assert "  cold-file   " + key in shown.stdout and "--queue-depth 16  (this machine)" in shown.stdout
    forgot = subprocess.run([sys.executable, "-m", "harness", "wisdom", "forget", "--work", "cold-file"],
                            capture_output=True, text=True, cwd=REPO, env=env)
    assert forgot.returncode == 0 and forgot.stdout == f"forgot 1 record in {book}\n", forgot.stderr
    assert [r.work for r in wisdom.read_records(book)] == ["cached-file"]


def test_wisdom_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched\n")
    book = tmp_path / "wisdom"
    book.symlink_to(target)
    with pytest.raises(wisdom.WisdomError, match="symlink"):
        wisdom.install(_tune_dir(tmp_path, "cold-file", {"queue_depth": 16}, _key(REPO)), book)
    assert target.read_text() == "untouched\n"
    with pytest.raises(wisdom.WisdomError, match="not a regular file"):
        wisdom.write_records(Path(os.devnull), [])
    assert Path(os.devnull).is_char_device()


def test_a_tune_from_before_wisdom_is_a_one_line_error(tmp_path: Path) -> None:
    tune_dir = tmp_path / "tune-old"
    tune_dir.mkdir()
    (tune_dir / "tune.json").write_text(json.dumps({"best_default": ["x", 1.0]}))
    result = subprocess.run([sys.executable, "-m", "harness", "wisdom", "install", str(tune_dir)],
                            capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, wisdom.ENV: str(tmp_path / "w")})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"ringsum: {tune_dir}/tune.json predates wisdom (no wisdom_key): run the tune again\n"
    assert not (tmp_path / "w").exists()
