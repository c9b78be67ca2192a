"""Page cache: residency measurement, the cold drop really evicts, the prepare helper and its
quoting through hyperfine's shell-words splitting (-N) with awkward paths."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.machine import page_cache
from harness.pipeline.execute import prepare_argv

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="dropping the page cache needs root")


def test_residency_methods_agree_on_a_freshly_written_file(random_file):
    f = random_file(3 << 20)
    page_cache.read_file(f)
    frac, method = page_cache.resident_fraction(f)
    assert frac > 0.99
    r1, t1 = page_cache.resident_pages_mincore(f)
    assert t1 == (3 << 20) // page_cache.PAGE and r1 == t1
    try:
        r2, t2 = page_cache.resident_pages_cachestat(f)
    except OSError:
        pytest.skip("cachestat not available on this kernel")
    assert (r2, t2) == (r1, t1) and method == "cachestat"


def test_fadvise_evicts_and_mincore_sees_it(random_file):
    """Without root: posix_fadvise(DONTNEED) on a clean file; both methods must see 0."""
    f = random_file(2 << 20)
    os.sync()
    page_cache.read_file(f)
    fd = os.open(f, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    assert page_cache.resident_pages_mincore(f)[0] == 0
    assert page_cache.resident_fraction(f)[0] < 0.01


@needs_root
def test_cold_drop_really_leaves_file_non_resident(random_file):
    f = random_file(8 << 20)
    page_cache.read_file(f)
    assert page_cache.resident_fraction(f)[0] > 0.99
    page_cache.drop_caches()  # global drop only: no per-file fadvise help
    assert page_cache.resident_fraction(f)[0] < 0.01
    assert page_cache.make_warm(f) > 0.99  # warm mode brings it back


@needs_root
def test_prepare_helper_drop_and_warm_log(random_file, tmp_path: Path):
    f = random_file(4 << 20)
    log = tmp_path / "prep.jsonl"
    page_cache.read_file(f)
    subprocess.run([sys.executable, "-m", "harness.machine.page_cache", "prepare", "--drop", "--file", str(f),
                    "--log", str(log)], check=True)
    rec = page_cache.read_last_record(log)
    assert rec is not None and rec["resident"] < 0.01 and rec["dropped"] is True
    subprocess.run([sys.executable, "-m", "harness.machine.page_cache", "prepare", "--warm", "--file", str(f),
                    "--log", str(log)], check=True)
    assert page_cache.read_last_record(log)["resident"] > 0.99  # type: ignore[index]
    assert len(log.read_text().splitlines()) == 2


def test_drop_refused_without_root(monkeypatch, tmp_path: Path):
    from harness.cli.main import main

    monkeypatch.setattr(page_cache, "is_root", lambda: False)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\ncache = "cold"\nfile_size = "4K"\n[baselines]\nlimit = false\ncat = true\n')
    code = main(["run", str(cfg), "--dir", str(tmp_path), "--out", str(tmp_path / "r")])
    assert code == 2
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(shutil.which("hyperfine") is None, reason="hyperfine not installed")
def test_prepare_command_quoting_through_hyperfine(tmp_path: Path):
    """-N: hyperfine splits --prepare with shell-words rules; the path has a space and a quote."""
    d = tmp_path / "dir with space"
    d.mkdir()
    f = d / "it's a file.bin"
    f.write_bytes(os.urandom(64 << 10))
    log = d / "prep log.jsonl"
    mode = "cold" if os.geteuid() == 0 else "warm"
    prep = prepare_argv(sys.executable, str(f), log, mode)
    out = tmp_path / "o.json"
    subprocess.run(["hyperfine", "-N", "--runs", "1", "--style", "none", "--export-json", str(out),
                    "--prepare", prep, "true"], check=True, capture_output=True)
    rec = page_cache.read_last_record(log)
    assert rec is not None and rec["file"] == str(f)
    assert json.loads(out.read_text())["results"][0]["exit_codes"] == [0]


def _pieces_cached(f: Path) -> list[int]:
    """Each 2 MiB piece's cached pages."""
    fd = os.open(f, os.O_RDONLY)
    try:
        return [page_cache.cached_pages(fd, off, page_cache.PIECE) for off in range(0, os.fstat(fd).st_size,
                                                                                      page_cache.PIECE)]
    finally:
        os.close(fd)


def test_a_share_kept_is_whole_pieces_chosen_by_the_seed(random_file, tmp_path: Path):
    """cached_share's prepare step: the file read back, then all but the share of its 2 MiB pieces
    evicted; the same seed (a round) keeps the same pieces, another seed others."""
    f = random_file(32 * page_cache.PIECE)
    whole = page_cache.PIECE // page_cache.PAGE
    page_cache.keep_share(f, 0.25, seed=7)
    first = _pieces_cached(f)
    assert sorted(set(first)) == [0, whole] and first.count(whole) == 8, first
    assert abs(page_cache.resident_fraction(f)[0] - 0.25) < 0.001
    page_cache.keep_share(f, 0.25, seed=7)
    assert _pieces_cached(f) == first
    page_cache.keep_share(f, 0.25, seed=8)
    assert _pieces_cached(f) != first and _pieces_cached(f).count(whole) == 8
    with pytest.raises(page_cache.CacheError, match="a share of a tree is not kept"):
        page_cache.keep_share(tmp_path, 0.5, seed=1)


@needs_root
def test_prepare_keeps_a_share_after_the_drop_and_logs_it(random_file, tmp_path: Path):
    f, log = random_file(16 * page_cache.PIECE), tmp_path / "prep.jsonl"
    argv = [sys.executable, "-m", "harness.machine.page_cache", "prepare", "--drop", "--file", str(f), "--log", str(log)]
    subprocess.run([*argv, "--keep", "0.5", "--seed", "3"], check=True)
    rec = page_cache.read_last_record(log)
    assert rec is not None and (rec["resident"], rec["kept"], rec["seed"]) == (0.5, 0.5, 3), rec
    bad = subprocess.run([*argv, "--keep", "1"], capture_output=True, text=True)
    assert bad.returncode == 1 and "--keep SHARE goes with --drop, and SHARE between 0 and 1" in bad.stderr
