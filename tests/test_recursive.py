"""--recursive: every variant hashes a tree exactly as b3sum hashes `find DIR -type f | LC_ALL=C sort`,
hostile names, links, FIFOs, unreadable files and directories, and a deep tree included."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hashers_support import B3SUM, KiB, MiB, VARIANTS, b3sum_lines, evict, program, run

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
DEPTH = 100


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    """A tree an unprivileged user can reach (pytest's tmp_path is root's alone)."""
    with tempfile.TemporaryDirectory(prefix="ringsum-recursive-") as top:
        root = Path(top) / "tree"
        root.mkdir()
        Path(top).chmod(0o755)
        files = {
            "empty": b"",
            "-leading dash": b"dash",
            "with space/a b": b"space",
            "back\\slash": b"backslash",
            "new\nline": b"newline",
            "sub/b": b"b",  # after sub-x/c: whole paths in byte order, '-' before '/'
            "sub-x/c": b"c",
            "sub/big.bin": os.urandom(5 * MiB + 3),  # more than uring_b3sum's 4M block
            "locked/hidden": b"hidden",
            "listable/unopenable": b"no x on its directory",
            "secret": b"secret",
        }
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        (root / os.fsdecode(b"\xff\xfe latin")).write_bytes(b"not utf-8")
        (root / "empty dir" / "empty too").mkdir(parents=True)
        (root / "link to file").symlink_to("secret")
        (root / "link to dir").symlink_to("sub")
        (root / "dangling").symlink_to("nowhere")
        os.mkfifo(root / "fifo")
        deep = root.joinpath(*["d"] * DEPTH)
        deep.mkdir(parents=True)
        (deep / "bottom").write_bytes(b"deep")
        for path in (root, *root.rglob("*")):
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        (root / "secret").chmod(0o600)
        (root / "locked").chmod(0o700)
        (root / "listable").chmod(0o744)
        yield root


def find_files(root: Path, user: list[str]) -> list[Path]:
    """find's regular files under root, in byte order, as this user sees them."""
    found = run([*user, "find", root, "-type", "f", "-print0"])
    return [Path(os.fsdecode(name)) for name in sorted(found.stdout.split(b"\0")[:-1])]


@pytest.mark.parametrize("variant", VARIANTS)
def test_tree_as_b3sum_hashes_find(variant: str, tree: Path):
    result = run([program(variant), "--recursive", tree], timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b3sum_lines(find_files(tree, []))
    assert result.stdout.count(b"\n") == 13 and b"link" not in result.stdout and b"fifo" not in result.stdout
    assert b"/".join([b"d"] * DEPTH) + b"/bottom\n" in result.stdout


@pytest.mark.parametrize("variant", VARIANTS)
def test_unreadable_parts_as_b3sum_words_them(variant: str, tree: Path):
    """Unprivileged: b3sum's error for each file it cannot open and for the directory it cannot read."""
    result = run([*NOBODY, program(variant), "-r", tree], timeout=30)
    reference = run([*NOBODY, B3SUM, *find_files(tree, NOBODY)])
    locked = run([*NOBODY, B3SUM, tree / "locked"])
    assert reference.returncode == 1 and locked.returncode == 1
    assert result.returncode == 1
    assert result.stdout == reference.stdout
    expected = (reference.stderr + locked.stderr).replace(b"b3sum: ", f"{variant}: ".encode())
    assert sorted(result.stderr.splitlines()) == sorted(expected.splitlines())
    assert len(expected.splitlines()) == 3  # secret, locked, listable/unopenable


def test_names_and_arguments(tree: Path):
    """A trailing / gives no //, files and directories mix on the command line, in their order."""
    hasher = program("uring_b3sum")
    single = run([hasher, "-r", f"{tree}/sub/", tree / "secret", tree / "sub"])
    assert single.returncode == 0, single.stderr
    lines = single.stdout.decode().splitlines()
    assert [line.split("  ", 1)[1] for line in lines] == [
        f"{tree}/sub/b", f"{tree}/sub/big.bin", f"{tree}/secret", f"{tree}/sub/b", f"{tree}/sub/big.bin"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_directory_without_recursive_is_still_an_error(variant: str, tree: Path):
    result = run([program(variant), tree / "sub"])
    reference = run([B3SUM, tree / "sub"])
    assert (result.returncode, result.stdout) == (reference.returncode, b"") == (1, b"")
    assert result.stderr == reference.stderr.replace(b"b3sum", variant.encode())


@pytest.mark.parametrize("flag", ["--check", "--raw"])
def test_recursive_refused_with(flag: str, tree: Path):
    result = run([program("uring_b3sum"), "--recursive", flag, tree])
    assert result.returncode == 2 and result.stdout == b""
    (line,) = result.stderr.decode().splitlines()
    assert f"'{flag}' cannot be used with '--recursive'" in line


def test_small_cold_files_of_a_tree_are_read_with_o_direct(tmp_path: Path):
    """uring_b3sum's tree default (uring_b3sum.c): a cold 64 KiB file under --recursive goes O_DIRECT;
    so with --direct-min 0 (the default a sweep passes on); named alone, or with --direct-min 1G (then a block
    or more), it is read through the page cache as before."""
    path = tmp_path / "small" / "cold.bin"
    path.parent.mkdir()
    path.write_bytes(os.urandom(64 * KiB))
    env = {**os.environ, "URING_B3SUM_OPTIONS": os.devnull}
    for args, how in ((["-r", path.parent], ", O_DIRECT)"), (["-r", "--direct-min", "0", path.parent], ", O_DIRECT)"),
                      (["-r", "--direct-min", "1G", path.parent], "buffers)"), ([path], "buffers)"),
                      (["--direct-min", "0", path], "buffers)")):
        evict(path)
        result = run([program("uring_b3sum"), "--verbose", *args], env=env)
        assert result.returncode == 0 and result.stdout == b3sum_lines([path]), args
        line = result.stderr.decode().splitlines()[0]   # the file's line
        assert line.endswith(how + ": under 3/4 of it in the page cache"), (args, result.stderr)
