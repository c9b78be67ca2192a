"""--files0-from: the files a NUL-separated list names (find -print0, as GNU du and wc read it), hashed in
one run whatever their number, each line as b3sum prints it for the same names given as operands."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.tune import wisdom
from hashers_support import VARIANTS, b3sum_lines, data_file, program, run

URING_B3SUM = "uring_b3sum"
HOSTILE = ["-leading dash", "with space", "back\\slash", "new\nline", "tab\there"]


@pytest.fixture(scope="module")
def files() -> Iterator[list[Path]]:
    with tempfile.TemporaryDirectory(prefix="ringsum-files0-") as top:
        paths = [Path(top) / name for name in HOSTILE]
        paths.append(Path(top) / os.fsdecode(b"\xff\xfe latin"))
        paths.append(Path(top) / "big.bin")   # more than uring_b3sum's 4M block
        paths.append(Path(top) / "empty")
        for i, path in enumerate(paths):
            path.write_bytes(data_file(5 * 2**20 + 3).read_bytes() if path.name == "big.bin"
                             else b"" if path.name == "empty" else f"file {i}".encode())
        yield paths


def listed(paths: list[Path | str], end: bytes = b"\0") -> bytes:
    return b"\0".join(os.fsencode(p) for p in paths) + end


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_list_hashes_as_b3sum_hashes_its_names(variant: str, files: list[Path], tmp_path: Path):
    names = tmp_path / "names"
    names.write_bytes(listed(files))
    result = run([program(variant), "--files0-from", names], timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b3sum_lines(files)
    from_stdin = run([program(variant), "--files0-from", "-"], input=listed(files, end=b""), timeout=30)
    assert from_stdin.returncode == 0 and from_stdin.stdout == result.stdout, from_stdin.stderr


def test_a_listed_directory_is_walked_with_recursive_only(files: list[Path], tmp_path: Path):
    top = files[0].parent
    names = listed([files[-1], top])
    walked = run([program(URING_B3SUM), "-r", "--files0-from", "-"], input=names)
    assert walked.returncode == 0, walked.stderr
    assert walked.stdout == b3sum_lines([files[-1], *sorted(files, key=lambda p: os.fsencode(p))])
    plain = run([program(URING_B3SUM), "--files0-from", "-"], input=names)
    assert plain.returncode == 1 and plain.stdout == b3sum_lines([files[-1]])
    assert plain.stderr.decode().startswith(f"uring_b3sum: {top}: ") and plain.stderr.count(b"\n") == 1, plain.stderr


def test_no_names_hash_nothing(tmp_path: Path):
    result = run([program(URING_B3SUM), "--files0-from", "-"], input=b"")
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b"", result.stderr


@pytest.mark.parametrize("names, said", [
    (b"A\0\0B\0", "uring_b3sum: -:2: a zero-length file name in the list"),
    (b"A\0-\0B", "uring_b3sum: -:2: standard input holds the list of names: - cannot be a file there too"),
])
def test_a_bad_name_fails_alone_named_by_its_place(files: list[Path], names: bytes, said: str):
    """As GNU wc words its place ("-:2"); the names around it are hashed and the run exits 1."""
    good = [files[5], files[6]]
    text = names.replace(b"A", os.fsencode(good[0])).replace(b"B", os.fsencode(good[1]))
    result = run([program(URING_B3SUM), "--files0-from", "-"], input=text)
    assert result.returncode == 1 and result.stdout == b3sum_lines(good), result.stderr
    assert result.stderr.decode() == said + "\n"


@pytest.mark.parametrize("args, code, said", [
    (["--files0-from", "{missing}"], 1, "uring_b3sum: {missing}: No such file or directory (os error 2)"),
    (["--files0-from", "{dir}"], 1, "uring_b3sum: {dir}: Is a directory (os error 21)"),
    (["--files0-from", "{names}", "{names}"], 2,
     "uring_b3sum: extra operand '{names}': file operands cannot be combined with --files0-from (see --help)"),
    (["--files0-from", "{names}", "--check"], 2, "uring_b3sum: the argument '--check' cannot be used with "
     "'--files0-from': a checksum file names its files (see --help)"),
    (["--files0-from", "{names}", "--raw"], 2, "uring_b3sum: the argument '--raw' cannot be used with "
     "'--files0-from': --raw writes one file's bytes (see --help)"),
    (["--files0-from", "-", "--keyed"], 2, "uring_b3sum: --keyed reads the key from stdin: the list of names "
     "cannot come from it too (see --help)"),
    (["--files0-from"], 2, "uring_b3sum: option '--files0-from' needs a value (see --help)"),
])
def test_a_list_that_cannot_be_one_is_a_one_line_error(args: list[str], code: int, said: str, tmp_path: Path):
    names = tmp_path / "names"
    names.write_bytes(listed([names]))
    where = {"missing": str(tmp_path / "missing"), "dir": str(tmp_path), "names": str(names)}
    result = run([program(URING_B3SUM), *(a.format(**where) for a in args)], input=b"")
    assert result.returncode == code and result.stdout == b"", result.stderr
    assert result.stderr.decode() == said.format(**where) + "\n"


def test_the_wisdom_samples_a_list_from_stdin_and_every_name_is_still_hashed(tmp_path: Path):
    """The wisdom looks at the first 8 files to tell a cached tree from a cold one before the hashing
    begins; stdin cannot be read twice, so the names it read are kept and hashed first, in order. A
    record's key is the first listed file's device, as for the first FILE operand."""
    paths = [tmp_path / f"f{i:02d}" for i in range(20)]
    for i, path in enumerate(paths):
        path.write_bytes(f"listed {i}".encode() * (i + 1))
    book = tmp_path / "wisdom"
    book.write_text("# no records: the sample is still taken and said\n")
    env = {**os.environ, wisdom.ENV: str(book)}
    result = run([program(URING_B3SUM), "--verbose", "--files0-from", "-"], input=listed(paths), env=env)
    said = result.stderr.decode()
    assert result.returncode == 0 and result.stdout == b3sum_lines(paths), said
    assert "a cached tree: of 8 files sampled, most in the page cache" in said, said
    key = run([program(URING_B3SUM), "--wisdom-key", "--files0-from", "-"], input=listed(paths), env=env)
    assert key.returncode == 0 and key.stdout.decode().strip() == wisdom.key_of(program(URING_B3SUM), paths[0])


def test_a_list_longer_than_one_command_line_goes_in_one_run(tmp_path: Path):
    """What xargs would split into several runs (over 128 KiB of names), one run hashes whole."""
    target = tmp_path / "same"
    target.write_bytes(b"hashed many times")
    name = tmp_path / ("n" * 200)
    name.symlink_to(target)
    count = 2000   # 2000 x ~250 bytes of names: about 500 KiB
    result = run([program(URING_B3SUM), "--no-names", "--files0-from", "-"], input=listed([name] * count))
    assert result.returncode == 0, result.stderr
    assert result.stdout == (b3sum_lines([target]).split(b"  ")[0] + b"\n") * count


def test_a_name_no_path_can_be_fails_alone(files: list[Path]):
    """A name of PATH_MAX bytes or more is kept to PATH_MAX, which no system call takes: memory does not
    grow with a list that holds no NUL."""
    result = run([program(URING_B3SUM), "--files0-from", "-"], input=listed([files[5], "x" * 70000, files[6]]))
    assert result.returncode == 1 and result.stdout == b3sum_lines([files[5], files[6]]), result.stderr
    assert result.stderr.count(b"\n") == 1 and result.stderr.endswith(b": File name too long (os error 36)\n")
    assert len(result.stderr) < 4200
