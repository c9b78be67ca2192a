"""uring_b3sum: the page cache or the ring per file, --check as b3sum's, and many files through one ring."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from hashers_support import B3SUM, BIN_DIR, FAULTS_BIN, REPO, MiB, b3sum_lines, data_file, evict, program, run

URING_B3SUM = "uring_b3sum"



def test_cached_file_is_hashed_from_memory_and_cold_file_through_the_ring(tmp_path):
    """--verbose says which path each file took and why: how much of it was cached, or the option."""
    path = tmp_path / "choice.bin"
    path.write_bytes(data_file(8 * MiB + 3).read_bytes())
    path.read_bytes()
    cached = run([program(URING_B3SUM), "--verbose", path])
    assert cached.stdout == b3sum_lines([path])
    assert b"hashing from the page cache" in cached.stderr
    assert b"measured on its first tasks): 3/4 of it or more in the page cache\n" in cached.stderr
    for forced, why in ((["--path", "ring"], b"16 buffers): --path ring or --no-mmap\n"),
                        (["--no-mmap"], b"16 buffers): --path ring or --no-mmap\n"),
                        (["--direct"], b"16 buffers, O_DIRECT): --direct\n")):
        said = run([program(URING_B3SUM), "--verbose", *forced, path])
        assert said.stdout == b3sum_lines([path]) and why in said.stderr, (forced, said.stderr)
    evict(path)
    assert b"first tasks): --path memory\n" in run([program(URING_B3SUM), "--verbose", "--path", "memory", path]).stderr
    evict(path)
    cold = run([program(URING_B3SUM), "--verbose", path])
    assert cold.stdout == b3sum_lines([path])
    assert (b"reading through the io_uring ring (4096K blocks, 8 deep, 16 buffers, O_DIRECT): "
            b"under 3/4 of it in the page cache\n") in cold.stderr


def test_a_small_cached_file_is_read_through_the_ring_unless_memory_min_says_otherwise(tmp_path):
    """Below --memory-min a cached file is read (buffered: it is in the page cache) through the ring; at
    or above it, hashed from memory. Not given, it is 1280K whatever the hashing threads (1M files
    through the ring); given, on the command line or in a wisdom record, it is what was given."""
    tree = tmp_path / "tree"
    tree.mkdir()
    sizes = (512 * 1024 - 1, MiB, 1280 * 1024 - 1, 1280 * 1024)
    paths = [tree / f"f{size:07d}.bin" for size in sizes]  # -r's order, too
    for path, size in zip(paths, sizes):
        path.write_bytes(data_file(size).read_bytes())
    record = tmp_path / "wisdom"
    key = run([program(URING_B3SUM), "--wisdom-key", "-r", tree]).stdout.decode().strip()
    record.write_text(f"{key} work=cached-tree measured=2026-11-28T00:00:00Z options=--memory-min 16K\n")

    def how(*args: str, wisdom: Path = Path("/dev/null")) -> list[str]:
        """Each file's path: "memory", or the --memory-min it was under."""
        for path in paths:
            path.read_bytes()
        named = [] if "-r" in args else paths
        result = run([program(URING_B3SUM), "--verbose", *args, *named],
                     env={**os.environ, "URING_B3SUM_WISDOM": str(wisdom)})
        assert result.stdout == b3sum_lines(paths), args
        lines = [line for line in result.stderr.decode().splitlines()
                 if str(tree) in line and re.search(r"\.bin: (reading|hashing)", line)]
        assert len(lines) == len(paths), result.stderr
        return ["memory" if "hashing from the page cache" in line else
                re.search(r"under --memory-min (\S+)$", line).group(1) for line in lines]

    assert how() == ["1280K", "1280K", "1280K", "memory"]
    assert how("--num-threads", "1") == ["1280K", "1280K", "1280K", "memory"]
    assert how("--memory-min", "512K") == ["512K", "memory", "memory", "memory"]
    assert how("--memory-min", "16K") == ["memory"] * 4
    assert how("-r", str(tree), wisdom=record) == ["memory"] * 4


def test_a_mostly_cached_file_is_hashed_from_memory(tmp_path):
    """Three quarters of a file in the page cache is enough for the memory path (the rest is faulted
    in); half is not: that file is read again through the ring."""
    path = tmp_path / "mostly.bin"
    path.write_bytes(data_file(16 * MiB + 3).read_bytes())
    # whole 2 MiB pieces: the page cache may hold the file in folios that large, and drops no part of one
    for evicted, how in ((2 * MiB, b"hashing from the page cache"), (8 * MiB, b"O_DIRECT")):
        path.read_bytes()
        evict(path, 2 * MiB, evicted)
        result = run([program(URING_B3SUM), "--verbose", path])
        assert result.stdout == b3sum_lines([path]) and how in result.stderr, (evicted, result.stderr)


def test_a_large_file_is_sampled_without_aliasing(tmp_path):
    """Above 16 MiB, residency is read from 64 windows, one in each 64th of the file at a scattered
    place: a regular pattern of evicted pieces must still count as what it is. In a 256 MiB file
    (a 64th is 4 MiB) every other 2 MiB piece evicted, the second of each 64th, is half the file:
    read through the ring (windows at the start of each 64th would all see cached pages); one
    piece in eight evicted is hashed from memory."""
    path = tmp_path / "striped.bin"
    path.write_bytes(data_file(256 * MiB).read_bytes())
    for every, how in ((2, b"O_DIRECT"), (8, b"hashing from the page cache")):
        path.read_bytes()
        for piece in range(1, 128, every):
            evict(path, piece * 2 * MiB, 2 * MiB)
        result = run([program(URING_B3SUM), "--verbose", path])
        assert result.stdout == b3sum_lines([path]) and how in result.stderr, (every, result.stderr)


@pytest.mark.parametrize("choice", ["memory", "ring", "auto"])
def test_forced_paths_give_the_same_hashes(choice):
    paths = [data_file(size) for size in (0, 1, 4096, 4097, 3 * MiB + 1, 64 * MiB)]
    result = run([program(URING_B3SUM), "--path", choice, "--block-size", "1M", *paths])
    assert result.returncode == 0, result.stderr
    assert result.stdout == b3sum_lines(paths)


def test_parallel_hashing_either_side_of_its_grain():
    """parallel_hash.cpp forks no finer than a 2048th of the length (from memory a 1024th, at most
    --stage-size), at least 32 KiB, and from memory reads each serial subtree once before hashing
    it in place (--read-once), hashes it as it is (--in-place), prefetching ahead (--prefetch) or
    hashes a copy of it (--stage-copy):
    lengths either side of the edges, from
    memory (one call per file, staged) with the smallest, the default, one of no power of two
    (rounded down) and the largest stage, read or copied, releasing the mapping never, in pieces
    smaller than a task and of no power of two, and per ring block (not staged)."""
    KiB = 1024
    sizes = (32 * KiB - 1, 32 * KiB + 1, 64 * KiB + 1, 64 * MiB - 1, 64 * MiB + 2049, 96 * MiB + 1)
    paths = [data_file(size) for size in sizes]
    expected = b3sum_lines(paths)
    for args in (["--path", "memory", "--stage-size", "32K"], ["--path", "memory"],
                 ["--path", "memory", "--stage-size", "100K"], ["--path", "memory", "--stage-size", "64M"],
                 ["--path", "memory", "--stage-copy", "--stage-size", "32K"], ["--path", "memory", "--stage-copy"],
                 ["--path", "memory", "--stage-copy", "--stage-size", "64M"],
                 ["--path", "memory", "--read-once", "--stage-size", "32K"], ["--path", "memory", "--read-once"],
                 ["--path", "memory", "--in-place", "--stage-size", "32K"], ["--path", "memory", "--in-place"],
                 ["--path", "memory", "--prefetch", "--stage-size", "32K"], ["--path", "memory", "--prefetch"],
                 ["--path", "memory", "--prefetch", "--stage-size", "64M", "--map-release", "64K"],
                 ["--path", "memory", "--map-release", "0"], ["--path", "memory", "--map-release", "64K"],
                 ["--path", "memory", "--map-release", "100K", "--stage-size", "32K"],
                 ["--path", "ring", "--parallel-hash", "--block-size", "4M"]):
        result = run([program(URING_B3SUM), *args, *paths])
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected, args


def _effective(argv: list, report: Path, env: dict | None = None) -> tuple[list[dict], bytes]:
    result = run([argv[0], "--effective", report, "--verbose", *argv[1:]], env=env)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in report.read_text().splitlines()], result.stderr


def _staging(argv: list, report: Path) -> tuple[str, bytes]:
    (line,), said = _effective(argv, report)
    return line["staging"], said


def test_a_cached_files_staging_is_measured_unless_a_knob_says_otherwise(tmp_path):
    """With no staging given, in place and prefetched are measured on the file's first tasks, a half
    of each task with each, and prefetching kept only if it was faster in 22 of the 32 pairs and 1% at
    their median (--effective names the winner and the trial, --verbose says so), on every SIMD level;
    --read-once, --in-place, --prefetch and --stage-copy force theirs, with no trial; a file read
    through the ring has the ring blocks' trial (test_the_ring_blocks_have_a_trial_of_their_own)."""
    path = data_file(8 * MiB + 3)
    report = tmp_path / "effective.jsonl"
    full = [program(URING_B3SUM), "--path", "memory"]
    (line,), said = _effective([*full, path], report)
    assert line["staging"] in ("in-place", "prefetch"), line
    trial = line["staging_trial"]
    assert trial["pairs"] == 32 and trial["tasks"] >= 32, line
    ratio, wins = trial["prefetch_over_in_place"], trial["prefetch_faster_in"]
    expected = "prefetch" if ratio < 0.99 and wins >= 22 else "in-place"
    assert line["staging"] == expected or abs(ratio - 0.99) < 1e-4, line   # the JSON rounds to 4 places
    assert b"staging in place or prefetched, measured on its first tasks" in said, said
    told = re.search(rb"staging ([a-z-]+), measured here: prefetched / in place ([0-9.]+), the median of 32 pairs "
                     rb"of tasks, prefetched faster in ([0-9]+);", said)
    assert told and told[1].decode() == line["staging"] and int(told[3]) == wins, said
    assert abs(float(told[2]) - ratio) <= 0.0006, (said, ratio)   # printed to 3 places, the JSON to 4
    for forced, name in (("--read-once", "read-once"), ("--in-place", "in-place"), ("--prefetch", "prefetch"),
                         ("--stage-copy", "copy")):
        (line,), said = _effective([*full, forced, path], report)
        assert (line["staging"], line["staging_trial"]) == (name, None), line
        assert f"staging {name})".encode() in said and b"measured" not in said, said
    avx2_build = REPO / "build" / "simd-avx2" / "bin" / URING_B3SUM
    if avx2_build.exists():   # make test builds it
        assert _staging([avx2_build, "--path", "memory", path], report)[0] in ("in-place", "prefetch")
    assert _staging([program(URING_B3SUM), "--path", "ring", path], report)[0] in ("in-place", "prefetch", "measured")
    both = run([program(URING_B3SUM), "--prefetch", "--in-place", path])
    assert both.returncode == 2 and b"--stage-copy, --read-once, --in-place and --prefetch contradict each other" \
        in both.stderr


FAULTS_BUILD = FAULTS_BIN / URING_B3SUM


@pytest.mark.parametrize("slowed, winner", [("inplacelag", "prefetch"), ("prefetchlag", "in-place")])
def test_the_staging_trial_keeps_the_faster(tmp_path, slowed, winner):
    """The test build waits 2 ms before each half task hashed with one staging (RINGSUM_FAULTS): the
    trial must keep the other, for this file and the later ones, measured again 128 tasks after the
    decision and 512 after that (and the trial keeps it); files too small to finish the trial alone
    are hashed a half with each ("measured") until it ends. Every hash is b3sum's."""
    if not FAULTS_BUILD.exists():
        pytest.skip(f"{FAULTS_BUILD} missing: make build/faults/bin/{URING_B3SUM}")
    small = [data_file(96 * 1024 + i) for i in range(6)]   # 3 tasks of 32K each, a pair each: 18 of 32
    large = data_file(8 * MiB + 3)
    report = tmp_path / "effective.jsonl"
    env = {**os.environ, "RINGSUM_FAULTS": f"{slowed}:2000", "URING_B3SUM_WISDOM": "/dev/null"}
    # one thread: on more, the small files would go side by side, in place, outside the trial (ring_consume.c)
    argv = [FAULTS_BUILD, "--num-threads", "1", "--path", "memory", *small, large, large]
    result = run(argv, env=env)
    assert result.returncode == 0 and result.stdout == b3sum_lines([*small, large, large]), result.stderr
    lines, said = _effective(argv, report, env=env)
    stagings = [line["staging"] for line in lines]
    assert stagings[:len(small)] == ["measured"] * len(small), stagings
    assert stagings[len(small):] == [winner, winner], stagings
    decided = lines[len(small)]["staging_trial"]
    ratio = decided["prefetch_over_in_place"]
    assert (ratio < 0.5 if winner == "prefetch" else ratio > 2), decided
    assert decided["prefetch_faster_in"] >= 22 if winner == "prefetch" else decided["prefetch_faster_in"] < 22
    assert decided["cost_ns"] > 0 and decided["tasks"] >= 32, decided
    # measured again 128 tasks after the decision (inside the first 8 MiB file: 256 tasks), then 512 after
    # that: the same winner each time, and no task measured but the trials' (a pair or two past the 32th)
    again = lines[-1]["staging_trial"]
    assert decided["trials"] == again["trials"] == 2 and again["tasks"] == decided["tasks"] <= 2 * (32 + os.cpu_count()), again
    assert said.count(b"measured here") == 1, said


@pytest.mark.parametrize("slowed, winner", [("inplacelag", "prefetch"), ("prefetchlag", "in-place")])
@pytest.mark.parametrize("hashing", ["--parallel-hash", "--serial-hash"])
def test_the_ring_blocks_have_a_trial_of_their_own(tmp_path, slowed, winner, hashing):
    """A file read through the ring: each block a pair while the ring's trial runs (its first half
    with one candidate, its second with the other, each timed; the test build waits 2 ms before
    either half with one staging), on every core or on one. 32 blocks of 256K decide; the next file
    takes the winner and is not measured. A mapped file's trial is another: it is never started
    here. The article's variants hash in place, with no trial. Every hash is b3sum's."""
    if not FAULTS_BUILD.exists():
        pytest.skip(f"{FAULTS_BUILD} missing: make build/faults/bin/{URING_B3SUM}")
    first, second = data_file(8 * MiB + 5), data_file(3 * MiB + 1)
    report = tmp_path / "effective.jsonl"
    env = {**os.environ, "RINGSUM_FAULTS": f"{slowed}:2000", "URING_B3SUM_WISDOM": "/dev/null"}
    argv = [FAULTS_BUILD, "--path", "ring", "--block-size", "256K", hashing]
    result = run([*argv, first, second], env=env)
    assert result.returncode == 0 and result.stdout == b3sum_lines([first, second]), result.stderr
    lines, said = _effective([*argv, first, second], report, env=env)
    assert [line["staging"] for line in lines] == [winner, winner], lines
    decided = lines[0]["staging_trial"]
    assert decided["pairs"] == 32 and decided["tasks"] == 32, decided
    ratio, wins = decided["prefetch_over_in_place"], decided["prefetch_faster_in"]
    assert (ratio < 0.5 and wins >= 22) if winner == "prefetch" else (ratio > 2 and wins < 22), decided
    assert lines[1]["staging_trial"]["tasks"] == 32, "the later file's blocks were measured"
    assert said.count(b"measured here on the ring's blocks") == 1 and said.count(b"measured here") == 1, said
    article = run([program("liburing_b3sum_multithread"), "--effective", report, first], env=env)
    assert article.returncode == 0 and article.stdout == b3sum_lines([first]), article.stderr
    (line,) = [json.loads(text) for text in report.read_text().splitlines()]
    assert (line["staging"], line["staging_trial"]) == ("in-place", None), line


def test_ring_defaults_are_tuned_for_uring_b3sum_and_the_articles_for_the_others(tmp_path):
    """uring_b3sum reads 8 deep into twice as many buffers unless told otherwise; the article's
    variants keep its 4 deep, one buffer per read in flight."""
    path = tmp_path / "defaults.bin"
    path.write_bytes(data_file(3 * MiB + 5).read_bytes())
    env = {**os.environ, "URING_B3SUM_OPTIONS": os.devnull}
    for args, ring in [([], "4096K blocks, 8 deep, 16 buffers"), (["-q", "4"], "4096K blocks, 4 deep, 8 buffers"),
                       (["-q", "4", "-n", "3", "-b", "1000"], "1000-byte blocks, 4 deep, 3 buffers")]:
        result = run([program(URING_B3SUM), "--path", "ring", "--verbose", *args, path], env=env)
        assert result.returncode == 0 and result.stdout == b3sum_lines([path]), args
        assert f"reading through the io_uring ring ({ring})" in result.stderr.decode(), args
    assert "(default 8)" in run([program(URING_B3SUM), "--help"]).stdout.decode()
    assert "(default 4M)" in run([program(URING_B3SUM), "--help"]).stdout.decode()
    assert "(default: twice the queue depth)" in run([program(URING_B3SUM), "--help"]).stdout.decode()
    article = run([program("liburing_b3sum_singlethread"), "--help"]).stdout.decode()
    assert "(default 4)" in article and "(default: the queue depth)" in article and "(default 512K)" in article


def test_many_small_files_pipelined_through_one_ring(tmp_path):
    rng = random.Random(11)
    paths = []
    for i in range(1500):
        path = tmp_path / f"small-{i:04d}.bin"
        path.write_bytes(rng.randbytes(rng.choice([0, 1, 100, 4096, 5000, 70000])))
        paths.append(path)
    expected = b3sum_lines(paths)
    for args in (["--buffers", "2", "--queue-depth", "2"], ["--queue-depth", "16", "--buffers", "32", "--block-size", "4K"]):
        result = run([program(URING_B3SUM), "--path", "ring", *args, *paths])
        assert result.returncode == 0 and result.stdout == expected, args


def test_a_missing_file_in_the_middle_of_a_pipeline(tmp_path):
    good = [data_file(4097), data_file(1), data_file(3 * MiB + 1)]
    missing = tmp_path / "gone.bin"
    result = run([program(URING_B3SUM), "--path", "ring", "--buffers", "2", good[0], missing, good[1], good[2]])
    assert result.returncode == 1
    assert result.stdout == b3sum_lines(good)
    assert result.stderr.decode() == f"{URING_B3SUM}: {missing}: No such file or directory (os error 2)\n"


def checkfile(tmp_path: Path, paths: list[Path], corrupt: int | None = None) -> Path:
    lines = b3sum_lines(paths).splitlines(keepends=True)
    if corrupt is not None:
        line = bytearray(lines[corrupt])
        at = 1 if line[:1] == b"\\" else 0
        line[at:at + 1] = b"0" if line[at:at + 1] != b"0" else b"1"
        lines[corrupt] = bytes(line)
    sums = tmp_path / "sums.b3"
    sums.write_bytes(b"".join(lines))
    return sums


@pytest.mark.parametrize("corrupt", [None, 0, 2])
@pytest.mark.parametrize("quiet", [False, True])
def test_check_matches_b3sum_check(tmp_path, corrupt, quiet):
    odd = tmp_path / "odd\\name\n.bin"
    odd.write_bytes(b"escaped")
    paths = [data_file(4097), data_file(0), odd, data_file(3 * MiB + 1)]
    sums = checkfile(tmp_path, paths, corrupt)
    flags = ["--quiet"] if quiet else []
    ours = run([program(URING_B3SUM), "--check", *flags, sums])
    official = run([B3SUM, "--check", *flags, sums])
    assert ours.stdout == official.stdout
    assert ours.returncode == official.returncode == (0 if corrupt is None else 1)
    if corrupt is not None:
        assert ours.stderr.decode() == f"{URING_B3SUM}: WARNING: 1 computed checksum did NOT match\n"


def test_check_reports_missing_files_like_b3sum(tmp_path):
    sums = tmp_path / "sums.b3"
    sums.write_text("0" * 64 + "  " + str(tmp_path / "missing") + "\n")
    ours = run([program(URING_B3SUM), "--check", sums])
    official = run([B3SUM, "--check", sums])
    assert ours.stdout == official.stdout and ours.returncode == official.returncode == 1


@pytest.mark.parametrize("line, complaint", [("not a checksum line", "Invalid check line format"),
                                             ("0" * 63 + "  x", "Invalid hash length"),
                                             ("0" * 64 + " x", "Invalid check line format"),
                                             ("\\" + "0" * 64 + "  bad\\q", "Invalid backslash escape")])
def test_check_refuses_malformed_lines(tmp_path, line, complaint):
    """As b3sum: the bad line fails alone, the lines after it are still checked."""
    good = data_file(4097)
    sums = tmp_path / "sums.b3"
    sums.write_bytes(b3sum_lines([good]) + line.encode() + b"\n" + b3sum_lines([good]))
    result = run([program(URING_B3SUM), "--check", sums])
    assert result.returncode == 1
    assert result.stdout.decode() == f"{good}: OK\n{good}: OK\n"
    assert result.stderr.decode() == (f"{URING_B3SUM}: {complaint}\n"
                                      f"{URING_B3SUM}: WARNING: 1 computed checksum did NOT match\n")


def test_check_needs_a_readable_checkfile(tmp_path):
    """b3sum stops at a checksum file it cannot open, with its top-level 'Error: ...'."""
    result = run([program(URING_B3SUM), "--check", tmp_path / "nope.b3"])
    assert result.returncode == 1
    assert result.stderr.decode() == "Error: No such file or directory (os error 2)\n"


def test_truncated_while_hashed_from_memory(tmp_path):
    """A mapped file that loses its pages faults with SIGBUS: reported as changed, never a crash or a hash."""
    path = tmp_path / "sparse.bin"
    with open(path, "wb") as f:
        f.truncate(6 << 30)
    proc = subprocess.Popen([str(program(URING_B3SUM)), "--path", "memory", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.3)
    still_running = proc.poll() is None
    os.truncate(path, 1 << 20)
    out, err = proc.communicate(timeout=120)
    assert still_running, "hashing finished before the truncation; use a larger file"
    assert proc.returncode == 1, (proc.returncode, err)
    assert out == b""
    assert err.decode().startswith(f"{URING_B3SUM}: {path}: file")


@pytest.mark.parametrize("option", [["--check"], ["--verbose"], ["--path", "ring"], ["--quiet"]])
def test_uring_b3sum_options_belong_to_it(option):
    result = run([program("liburing_b3sum_singlethread"), *option, data_file(1)])
    assert result.returncode == 2
    assert b"belong to uring_b3sum" in result.stderr


def test_quiet_needs_check():
    result = run([program(URING_B3SUM), "--quiet", data_file(1)])
    assert result.returncode == 2 and b"--quiet goes with --check" in result.stderr


def test_tuned_defaults_file_is_read_and_the_command_line_wins(tmp_path):
    options = tmp_path / "uring_b3sum.options"
    options.write_text("# from ringsum tune\n--block-size 64K\n  --queue-depth 8\n--path ring\n")
    trace = tmp_path / "trace.csv"
    path = data_file(3 * MiB + 1)
    env = {**os.environ, "URING_B3SUM_OPTIONS": str(options)}
    result = run([program(URING_B3SUM), "--trace", trace, path], env=env)
    assert result.returncode == 0 and result.stdout == b3sum_lines([path])
    rows = trace.read_text().splitlines()[1:]
    assert sum(int(r.split(",")[3]) for r in rows) == (3 * MiB + 1 + 65535) // 65536  # 64K blocks
    result = run([program(URING_B3SUM), "--block-size", "1M", "--trace", trace, path], env=env)
    rows = trace.read_text().splitlines()[1:]
    assert sum(int(r.split(",")[3]) for r in rows) == 4  # 1M blocks: the command line came last


def test_xdg_config_home_is_where_defaults_live(tmp_path):
    (tmp_path / "ringsum").mkdir()
    (tmp_path / "ringsum" / "uring_b3sum.options").write_text("--frobnicate\n")
    env = {k: v for k, v in os.environ.items() if k != "URING_B3SUM_OPTIONS"}
    result = run([program(URING_B3SUM), data_file(1)], env={**env, "XDG_CONFIG_HOME": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.decode() == (f"{URING_B3SUM}: {tmp_path}/ringsum/uring_b3sum.options: "
                                      "unknown option '--frobnicate' (see --help)\n")


@pytest.mark.parametrize("text, needle", [("--block-size 1M stray.bin\n", "unexpected 'stray.bin'"),
                                          ("--queue-depth 0\n", "queue depth must be at least 1")])
def test_bad_defaults_file(tmp_path, text, needle):
    options = tmp_path / "o"
    options.write_text(text)
    result = run([program(URING_B3SUM), data_file(1)], env={**os.environ, "URING_B3SUM_OPTIONS": str(options)})
    assert result.returncode == 2 and needle in result.stderr.decode()
    assert result.stderr.count(b"\n") == 1


def resident_bytes(path: Path) -> int:
    return int(subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                              check=True, capture_output=True, text=True).stdout)


def test_a_cold_file_is_read_with_o_direct_unless_buffered_and_dontcache_leaves_it_uncached(tmp_path):
    """Issue 18: a cold file of a block or more goes O_DIRECT (leaving the page cache alone); a smaller one,
    or --buffered, is read through the page cache, which --dontcache empties behind the reads."""
    path = tmp_path / "cold.bin"
    path.write_bytes(data_file(9 * MiB + 7).read_bytes())
    small = tmp_path / "small.bin"
    small.write_bytes(data_file(3 * MiB + 1).read_bytes())
    env = {**os.environ, "URING_B3SUM_OPTIONS": os.devnull}
    cases = [([path], ", O_DIRECT)", 0), (["--buffered", path], "buffers)", path.stat().st_size),
             (["--buffered", "--dontcache", path], "buffers)", 0), ([small], "buffers)", small.stat().st_size)]
    for args, how, resident in cases:
        expected = b3sum_lines([args[-1]])
        evict(args[-1])
        result = run([program(URING_B3SUM), "--verbose", *args], env=env)
        assert abs(resident_bytes(args[-1]) - resident) < MiB, args
        assert result.returncode == 0 and result.stdout == expected, args
        line = result.stderr.decode().splitlines()[0]   # the file's line
        assert line.endswith(how + ": under 3/4 of it in the page cache"), (args, result.stderr)
    both = run([program(URING_B3SUM), "--direct", "--buffered", path])
    assert both.returncode == 2 and b"--direct and --buffered contradict each other" in both.stderr


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs tmpfs at /dev/shm")
def test_dontcache_is_refused_clearly_where_the_filesystem_lacks_it():
    """tmpfs has no RWF_DONTCACHE: one line naming the file and the knob, exit 1, for the ring and pread()."""
    path = Path("/dev/shm") / f"ringsum-dontcache-{os.getpid()}.bin"
    path.write_bytes(b"x" * 100000)
    try:
        for prog in (URING_B3SUM, "b3sum_pread"):
            result = run([program(prog), "--path", "ring", "--dontcache", path] if prog == URING_B3SUM
                         else [program(prog), "--dontcache", path])
            assert result.returncode == 1 and result.stdout == b"", prog
            assert result.stderr.decode() == (f"{prog}: {path}: RWF_DONTCACHE refused: uncached reads need Linux 6.14+ "
                                              "and a filesystem that supports them (try without --dontcache)\n")
    finally:
        path.unlink()


@pytest.mark.skipif(BIN_DIR != REPO / "build" / "bin",
                    reason="the release build's peak RSS: a sanitizer build adds its own shadow memory")
def test_peak_rss_is_bounded_by_the_ring(tmp_path):
    """A cold 64 MiB file through an 8 MiB ring (1M x 8, O_DIRECT into huge pages): the process never
    holds more than the ring and a few MiB, whatever the file's size. GNU time measures it: a child of
    this Python would carry the interpreter's peak over its exec. The file is this test's own: a
    shared one read by a test beside it would be cached again, and hashed from memory."""
    path = tmp_path / "cold.bin"
    shutil.copyfile(data_file(64 * MiB), path)
    evict(path)
    rss = tmp_path / "rss"
    result = run(["/usr/bin/time", "-f", "%M", "-o", rss, program(URING_B3SUM), "-b", "1M", "-q", "4", "-n", "8", path])
    assert result.returncode == 0 and result.stdout == b3sum_lines([path]), result.stderr
    assert int(rss.read_text().split()[-1]) * 1024 < 8 * MiB + 8 * MiB, rss.read_text()


@pytest.mark.skipif(BIN_DIR != REPO / "build" / "bin",
                    reason="the release build's peak RSS: a sanitizer build adds its own shadow memory")
def test_a_file_hashed_from_memory_is_released_as_it_is_hashed(tmp_path):
    """A mapped file's pages count in the peak RSS until they leave the mapping: hashed from memory,
    a 64 MiB file peaks at its size with --map-release 0, and at a few pieces of 1 MiB with it."""
    path = data_file(64 * MiB)
    peaks = {}
    for release in ("0", "1M"):
        rss = tmp_path / f"rss-{release}"
        result = run(["/usr/bin/time", "-f", "%M", "-o", rss, program(URING_B3SUM), "--path", "memory",
                      "--map-release", release, path])
        assert result.returncode == 0 and result.stdout == b3sum_lines([path]), result.stderr
        peaks[release] = int(rss.read_text().split()[-1]) * 1024
    assert peaks["0"] > 64 * MiB and peaks["1M"] < 24 * MiB, peaks
