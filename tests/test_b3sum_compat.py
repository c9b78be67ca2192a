"""uring_b3sum as a drop-in for b3sum 1.8.7: the real b3sum is the oracle for every flag, stdin, --check,
hostile names, devices, a kernel without io_uring and a small RLIMIT_NOFILE."""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from hashers_support import ALL_VARIANTS, B3SUM, MiB, REPO, VARIANTS, data_file, program

URING_B3SUM = "uring_b3sum"
WITHOUT_IO_URING = REPO / "build" / "tests" / "without_io_uring"
# No tuned defaults file, and no Rust backtrace after b3sum's "Error: ..." lines.
ENV = {**os.environ, "URING_B3SUM_OPTIONS": os.devnull, "RUST_BACKTRACE": "0"}

pytestmark = [pytest.mark.independent,
              pytest.mark.skipif(URING_B3SUM not in VARIANTS, reason="uring_b3sum is not among RINGSUM_VARIANTS")]


def call(prog: Path | str, args: list, cwd: Path | None = None, stdin: bytes | None = b"",
         stderr=subprocess.PIPE, preexec_fn=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(prog), *[str(a) for a in args]], input=stdin, stdout=subprocess.PIPE, stderr=stderr,
                          cwd=cwd, env=ENV, timeout=120, preexec_fn=preexec_fn)


def same_as_b3sum(args: list, cwd: Path | None = None, stdin: bytes | None = b"", variant: str = URING_B3SUM,
                  **kwargs) -> subprocess.CompletedProcess:
    """Run both; stdout and exit status must be identical, and stderr too once b3sum's name is ours."""
    ours = call(program(variant), args, cwd, stdin, **kwargs)
    official = call(B3SUM, args, cwd, stdin, **kwargs)
    if kwargs.get("stderr") == subprocess.STDOUT:
        official.stdout = re.sub(rb"(?m)^b3sum: ", variant.encode() + b": ", official.stdout)
    assert ours.stdout == official.stdout, args
    assert ours.returncode == official.returncode, (args, ours.stderr, official.stderr)
    if official.stderr is not None:
        assert ours.stderr == re.sub(rb"(?m)^b3sum: ", variant.encode() + b": ", official.stderr), args
    return ours


HOSTILE_NAMES = ["plain.bin", "new\nline", "back\\slash", "carriage\rreturn", "\\\r\n\\n", "ünïcödé ✓",
                 "-leading-dash", "two  spaces", "BLAKE3 (x) = y", ") = ", "tab\there", " lead space"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """Files of telling sizes (empty, one chunk, above the 16 KiB mapping threshold, several blocks), and
    the hostile names, in one directory that the commands run in."""
    root = tmp_path_factory.mktemp("compat")
    for size in (0, 1, 1024, 17 * 1024, 3 * MiB + 5):
        (root / f"size-{size}").write_bytes(data_file(size).read_bytes())
    for i, name in enumerate(HOSTILE_NAMES):
        (root / name).write_bytes(bytes([i]) * (100 + i))
    (root / os.fsdecode(b"latin1-\xe9")).write_bytes(b"invalid UTF-8 in the name")
    return root


def names(tree: Path) -> list[str]:
    return sorted(os.listdir(tree))


@pytest.mark.parametrize("args", [
    [], ["--tag"], ["--no-names"], ["-l", "0"], ["-l", "1"], ["--length", "100"], ["--length", "65", "--seek", "3"],
    ["--seek", "18446744073709551000", "-l", "9"], ["--derive-key", "ringsum 2026-11-23 test context"],
    ["--derive-key", ""], ["--tag", "-l", "7", "--derive-key", "x"], ["--num-threads", "1"], ["--num-threads", "0"],
    ["--no-mmap"], ["--no-mmap", "--tag", "--no-names"],
])
def test_every_output_flag(tree, args):
    same_as_b3sum([*args, "--", *names(tree)], cwd=tree)


def test_raw_output_is_the_bytes(tree):
    for args in (["--raw"], ["--raw", "-l", "1000", "--seek", "5"], ["--raw", "--derive-key", "c", "--tag"]):
        assert len(same_as_b3sum([*args, "size-1024"], cwd=tree).stdout) in (32, 1000)
    result = same_as_b3sum(["--raw", "size-0", "size-1"], cwd=tree)
    assert result.returncode == 1
    assert result.stderr == b"Error: Only one filename can be provided when using --raw\n"


@pytest.mark.parametrize("args", [[], ["-"], ["-", "size-1", "-"], ["--tag", "-l", "40"]])
def test_standard_input(tree, args):
    """No FILE, or -, reads stdin; a second - finds it at its end, as in b3sum."""
    same_as_b3sum(args, cwd=tree, stdin=data_file(3 * MiB + 5).read_bytes())


def test_standard_input_that_is_a_file_is_read_from_where_it_stands(tree):
    outputs = []
    for prog in (program(URING_B3SUM), B3SUM):
        with open(tree / "size-3145733", "rb") as f:
            f.seek(1000)
            outputs.append(subprocess.run([str(prog)], stdin=f, capture_output=True, env=ENV))
    assert outputs[0].returncode == outputs[1].returncode == 0
    assert outputs[0].stdout == outputs[1].stdout


@pytest.mark.parametrize("variant", ALL_VARIANTS)
def test_every_variant_reads_a_pipe_as_b3sum_does(variant):
    if variant not in VARIANTS:
        pytest.skip(f"{variant} is not among RINGSUM_VARIANTS")
    same_as_b3sum([], stdin=data_file(5 * MiB + 3).read_bytes(), variant=variant)


def test_keyed_mode(tree):
    key = bytes(range(32))
    same_as_b3sum(["--keyed", "size-1024", "new\nline"], cwd=tree, stdin=key)
    same_as_b3sum(["--keyed", "--tag", "-l", "40", "size-0"], cwd=tree, stdin=key)
    for bad_key in (key[:31], b"", key + b"!"):
        result = same_as_b3sum(["--keyed", "size-1"], cwd=tree, stdin=bad_key)
        assert result.returncode == 1 and result.stderr.startswith(b"Error: ")
    result = same_as_b3sum(["--keyed", "size-1", "-"], cwd=tree, stdin=key)
    assert result.stderr == b"uring_b3sum: -: Cannot open `-` in keyed mode\n"


@pytest.mark.parametrize("args, words", [
    (["--keyed"], "<FILE>"), (["--keyed", "--derive-key", "c", "f"], "'--keyed' cannot be used with '--derive-key"),
    (["--check", "--tag", "f"], "'--check' cannot be used with '--tag'"),
    (["--check", "--raw", "f"], "'--check' cannot be used with '--raw'"),
    (["--check", "--no-names", "f"], "'--check' cannot be used with '--no-names'"),
    (["--check", "-l", "3", "f"], "'--check' cannot be used with '--length <LEN>'"),
    (["--check", "--derive-key", "c", "f"], "'--check' cannot be used with '--derive-key <CONTEXT>'"),
    (["--check", "--keyed", "f"], "'--check' cannot be used with '--keyed'"),
    (["--quiet", "f"], "--check"), (["--length", "x", "f"], "invalid value 'x' for '--length <LEN>'"),
    (["--seek", "-1", "f"], "'-1'"), (["--num-threads", "many", "f"], "invalid value 'many' for '--num-threads <NUM>'"),
    (["--length"], "--length"), (["--derive-key"], "--derive-key"), (["--frobnicate", "f"], "'--frobnicate'"),
    (["--tag=1", "f"], "--tag"),
])
def test_bad_command_lines_exit_2_saying_what_b3sum_says(args, words):
    ours = call(program(URING_B3SUM), args)
    official = call(B3SUM, args)
    assert ours.returncode == official.returncode == 2 and ours.stdout == official.stdout == b""
    assert words.encode() in ours.stderr and words.encode() in official.stderr, (ours.stderr, official.stderr)
    assert ours.stderr.count(b"\n") == 1


def test_positional_looking_arguments_are_files(tmp_path):
    """The article's `FILE 512 2 1 0 2 0 0` is eight files to uring_b3sum, as to b3sum."""
    argv = ["x", "512", "2", "1", "0", "2", "0", "0"]
    for name in set(argv):
        (tmp_path / name).write_bytes(name.encode() * 1000)
    assert same_as_b3sum(argv, cwd=tmp_path).stdout.count(b"\n") == 8
    assert same_as_b3sum(["1", "2", "0", "0", "1", "0", "0"], cwd=tmp_path).returncode == 0


def test_errors_interleave_with_output_as_b3sum(tree):
    """b3sum's stdout is line-buffered: with 2>&1 the error stands between the lines it fell between."""
    same_as_b3sum(["size-1", "missing", "size-1024", ".", "size-0"], cwd=tree, stderr=subprocess.STDOUT)


@pytest.mark.parametrize("args", [[], ["--tag"]])
@pytest.mark.parametrize("quiet", [[], ["--quiet"]])
def test_check_reads_b3sum_own_output_for_hostile_names(tree, args, quiet):
    """The invalid UTF-8 name comes out with U+FFFD, which b3sum's --check refuses (and so do we);
    with --tag, a name with two spaces splits as an untagged line: b3sum's parsing, kept."""
    sums = call(B3SUM, [*args, "--", *names(tree)], cwd=tree).stdout
    assert sums.count(b"\n") == len(names(tree))
    result = same_as_b3sum(["--check", *quiet, "-"], cwd=tree, stdin=sums)
    assert b"Unicode replacement character in path" in result.stderr
    assert result.stdout.count(b": OK\n") == (0 if quiet else len(names(tree)) - 1 - len(args))
    # one file's hash changes: one FAILED, the rest still checked
    corrupt = sums.splitlines(keepends=True)
    line = bytearray(corrupt[3])
    at = line.index(b" = ") + 3 if args else int(line[:1] == b"\\")
    line[at:at + 1] = b"0" if line[at:at + 1] != b"0" else b"1"
    corrupt[3] = bytes(line)
    result = same_as_b3sum(["-c", *quiet, "-"], cwd=tree, stdin=b"".join(corrupt))
    assert result.returncode == 1 and b"FAILED" in result.stdout


def test_check_parsing_and_every_complaint(tree, tmp_path):
    """Each of b3sum's check-line complaints, CRLF, a missing final newline, stdin named in a line,
    a missing file and a directory: every line is judged, as b3sum judges it."""
    good = call(B3SUM, ["size-1", "back\\slash"], cwd=tree).stdout.splitlines()
    h = good[0][:64]
    empty = call(B3SUM, ["--no-names"], stdin=b"").stdout[:64]
    lines = [
        good[0] + b"\r", good[1] + b"\r\r", b"", b"\r", b"not a line", h + b" size-1", h[:63] + b"  size-1",
        h.upper() + b"  size-1", h[:62] + b"zz  size-1", b"\\" + h + b"  bad\\q", b"\\" + h + b"  trailing\\",
        h + b"  ", h + b"  a\0b", h + b"  \xef\xbf\xbd", b"BLAKE3 (size-1) = " + h, b"BLAKE3 (a  b) = " + h,
        b"BLAKE3 (size-1)= " + h, h + b"  missing", h + b"  .", empty + b"  -", h + b"   size-1",
        b"\\BLAKE3 (back\\\\slash) = " + good[1][1:65], good[0],
    ]
    (tmp_path / "sums").write_bytes(b"\n".join(lines))
    result = same_as_b3sum(["--check", tmp_path / "sums"], cwd=tree)
    assert result.returncode == 1
    complaints = result.stderr.decode()
    for words in ("Empty line", "Invalid check line format", "Invalid hash length", "Invalid hex",
                  "Invalid backslash escape", "empty file path", "Null character in path",
                  "Unicode replacement character in path", "computed checksums did NOT match"):
        assert words in complaints, words
    assert b"missing: FAILED (No such file or directory (os error 2))" in result.stdout


@pytest.mark.parametrize("args", [["--seek", "3"], ["--no-mmap", "--num-threads", "1"]])
def test_check_with_the_flags_b3sum_allows_there(tree, args):
    """--seek moves the compared output: b3sum compares the 32 bytes from there."""
    sums = call(B3SUM, ["size-17408", "size-1"], cwd=tree).stdout
    same_as_b3sum(["--check", *args, "-"], cwd=tree, stdin=sums)
    if args[0] == "--seek":
        seeked = call(B3SUM, ["--seek", "3", "size-17408", "size-1"], cwd=tree).stdout
        assert same_as_b3sum(["--check", *args, "-"], cwd=tree, stdin=seeked).returncode == 0


def test_check_stops_where_b3sum_stops(tree, tmp_path):
    """A checksum file that cannot be opened, or is not UTF-8, ends the run with 'Error: ...' and no WARNING."""
    sums = call(B3SUM, ["size-1"], cwd=tree).stdout
    good, latin1 = tmp_path / "good.b3", tmp_path / "latin1.b3"
    good.write_bytes(sums + b"0" * 64 + b"  missing\n")
    latin1.write_bytes(sums + b"0" * 64 + b"  caf\xe9\n" + sums)
    for args in ([good, tmp_path / "nope.b3", good], [latin1], [good, tmp_path]):
        result = same_as_b3sum(["-c", *args], cwd=tree)
        assert result.returncode == 1 and result.stderr.startswith(b"uring_b3sum: WARNING") is False


def test_check_streams_its_lines(tmp_path):
    """Memory does not grow with the number of lines: 100,000 lines stay under 12 MiB peak RSS
    (the whole-list version took 216 MB), and the output is b3sum's."""
    (tmp_path / "small").write_bytes(b"hello\n")
    line = call(B3SUM, ["small"], cwd=tmp_path).stdout
    sums = tmp_path / "sums.b3"
    sums.write_bytes(line * 100_000)
    ours = call("/usr/bin/time", ["-f", "%M", program(URING_B3SUM), "--check", "--quiet", sums], cwd=tmp_path)
    assert ours.returncode == 0 and ours.stdout == b"", ours.stderr
    peak_kib = int(ours.stderr.decode().split()[-1])
    assert peak_kib < 12 * 1024, f"peak RSS {peak_kib} KiB"
    tail = call(program(URING_B3SUM), ["--check", sums], cwd=tmp_path).stdout
    assert tail == b"small: OK\n" * 100_000


def feed(fifo: Path, data: bytes) -> None:
    try:
        fifo.write_bytes(data)
    except BrokenPipeError:  # the hasher gave up on the FIFO: its result says so
        pass


def test_fifo_and_character_devices(tmp_path):
    data = data_file(5 * MiB + 3).read_bytes()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for prog in (program(URING_B3SUM), B3SUM):
        writer = threading.Thread(target=feed, args=(fifo, data))
        writer.start()
        result = call(prog, ["--no-names", fifo, "/dev/null"])
        if writer.is_alive():  # never opened for reading: let the writer's open return
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join()
        assert result.returncode == 0, result.stderr
        assert result.stdout == call(B3SUM, ["--no-names", "-", "/dev/null"], stdin=data).stdout


@pytest.fixture
def loop_device(tmp_path):
    if shutil.which("losetup") is None:
        pytest.skip("no losetup")
    image = REPO / "build" / "test-data" / "loop.img"
    image.write_bytes(data_file(8 * MiB + 4096).read_bytes())
    attach = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True)
    if attach.returncode != 0:
        pytest.skip(f"no loop device here: {attach.stderr.strip()}")
    device = attach.stdout.strip()
    try:
        yield device, image
    finally:
        subprocess.run(["losetup", "-d", device], check=True)
        image.unlink()


def test_block_device_through_the_ring(loop_device):
    """The size comes from the device (BLKGETSIZE64), not stat; --direct is allowed; every variant."""
    device, image = loop_device
    expected = call(B3SUM, ["--no-names", image]).stdout
    assert call(B3SUM, ["--no-names", device]).stdout == expected
    for variant in VARIANTS:
        for args in ([], ["--direct"], ["--direct", "--block-size", "1M"]):
            result = call(program(variant), ["--no-names", *args, device])
            assert result.returncode == 0 and result.stdout == expected, (variant, args, result.stderr)
    verbose = call(program(URING_B3SUM), ["--verbose", "--direct", device])
    assert b"reading through the io_uring ring" in verbose.stderr and b"): not a regular file\n" in verbose.stderr
    verbose = call(program(URING_B3SUM), ["--verbose", "--path", "memory", device])   # a device is never mapped
    assert b"reading through the io_uring ring" in verbose.stderr and b"): not a regular file\n" in verbose.stderr
    same_as_b3sum(["--check", "-"], stdin=call(B3SUM, [device]).stdout)


@pytest.mark.parametrize("errno_name", ["ENOSYS", "EPERM"])
def test_without_io_uring_uring_b3sum_falls_back_to_pread(tree, errno_name):
    """Same hashes from files, stdin and --check; --verbose says why in one line; the article's variants fail."""
    wrapped = [WITHOUT_IO_URING, errno_name, program(URING_B3SUM)]
    listed = names(tree)
    expected = call(B3SUM, ["--", *listed], cwd=tree).stdout
    result = call(wrapped[0], [*wrapped[1:], "--", *listed], cwd=tree)
    assert result.returncode == 0 and result.stdout == expected, result.stderr
    checked = call(wrapped[0], [*wrapped[1:], "-c", "-"], cwd=tree, stdin=expected)
    assert checked.stdout == call(B3SUM, ["-c", "-"], cwd=tree, stdin=expected).stdout
    piped = call(wrapped[0], [*wrapped[1:], "--verbose", "size-3145733", "-"], cwd=tree, stdin=b"abc")
    assert piped.stdout == call(B3SUM, ["size-3145733", "-"], cwd=tree, stdin=b"abc").stdout
    why = [line for line in piped.stderr.decode().splitlines() if "io_uring" in line]
    reason = "Function not implemented" if errno_name == "ENOSYS" else "Operation not permitted"
    assert why == [f"uring_b3sum: io_uring unavailable: {reason} (kernel.io_uring_disabled="
                   f"{Path('/proc/sys/kernel/io_uring_disabled').read_text().strip()}); reading with pread() instead"]
    for variant in ("liburing_b3sum_singlethread", "liburing_b3sum_multithread"):
        if variant in VARIANTS:
            failed = call(wrapped[0], [errno_name, program(variant), "size-1"], cwd=tree)
            assert failed.returncode == 1 and b"io_uring unavailable" in failed.stderr


def few_descriptors():
    resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))


def test_never_emfile_under_ulimit_n_20(tmp_path):
    """3,000 files under `ulimit -n 20`, with more cells in the ring than descriptors: none fails."""
    for i in range(3000):
        (tmp_path / f"f{i:04d}").write_bytes(b"%d" % i * (i % 50))
    listed = names(tmp_path)
    for args in ([], ["--path", "ring", "--queue-depth", "64", "--buffers", "128"], ["--block-size", "4K"]):
        ours = call(program(URING_B3SUM), [*args, *listed], cwd=tmp_path, preexec_fn=few_descriptors)
        assert ours.returncode == 0 and ours.stderr == b"", (args, ours.stderr[:200])
    same_as_b3sum(listed, cwd=tmp_path, preexec_fn=few_descriptors)
    sums = call(B3SUM, listed, cwd=tmp_path).stdout
    same_as_b3sum(["--check", "-"], cwd=tmp_path, stdin=sums, preexec_fn=few_descriptors)


def test_help_lists_b3sum_options_with_their_defaults():
    text = call(program(URING_B3SUM), ["--help"]).stdout.decode()
    for option in ("--keyed", "--derive-key", "--length", "--seek", "--num-threads", "--no-mmap", "--no-names",
                   "--raw", "--tag", "--check", "--quiet", "--positional"):
        line = next(line for line in text.splitlines() if re.match(rf"\s+(-\w, )?{option}\b", line))
        assert "default" in line, line
