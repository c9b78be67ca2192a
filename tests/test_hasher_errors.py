"""Bad input and unkind kernels: a clear one-line error and a non-zero exit, never a hang or a wrong hash."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from hashers_support import (
    DESCRIBED, EMPTY_HASH, MiB, REPO, URING_VARIANTS, VARIANTS, B3SUM, article_form, b3sum_lines, data_file, program,
    ring_path, run,
)

pytestmark = pytest.mark.independent

WITHOUT_IO_URING = REPO / "build" / "tests" / "without_io_uring"
NOTRACE_BIN = REPO / "build" / "notrace" / "bin"


def one_line_error(result: subprocess.CompletedProcess, status: int, variant: str, *needles: str) -> str:
    assert result.returncode == status, (result.returncode, result.stderr)
    assert result.stdout == b""
    message = result.stderr.decode(errors="replace")
    assert message.count("\n") == 1 and message.startswith(f"{variant}: "), message
    for needle in needles:
        assert needle in message, message
    return message


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("args, needle", [
    (["--block-size", "0"], "block size must be at least 1 byte"),
    (["--block-size", "12x"], "invalid --block-size '12x'"),
    (["--block-size", "-4K"], "invalid --block-size '-4K'"),
    (["--block-size", "2G"], "larger than the 1G maximum"),
    (["--block-size", "99999999999999999999"], "invalid --block-size"),
    (["--direct", "--block-size", "6000"], "multiple of 4096 bytes, got 6000"),
    (["--queue-depth", "0"], "queue depth must be at least 1"),
    (["--queue-depth", "40000"], "exceeds the kernel limit of 32768"),
    (["--queue-depth", "four"], "invalid --queue-depth 'four'"),
    (["--buffers", "0"], "at least 1 buffer"),
    (["--fixed-buffers", "--buffers", "16385"], "registers at most 16384 buffers"),
    (["--iopoll"], "--iopoll needs --direct"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["--direct=1"], "option '--direct' takes no value"),
    (["--trace"], "needs a value"),
])
def test_bad_command_line(variant, args, needle):
    files = [] if not args else [str(data_file(4097))]
    result = run([program(variant), *files, *args], timeout=10)
    one_line_error(result, 2, variant, needle, "(see --help)")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("args, needle", [
    (["x.bin", "512", "2", "2", "0", "2", "0", "0"], "USE_O_DIRECT must be 0 or 1, got 2"),
    (["x.bin", "0", "2", "0", "0", "2", "0", "0"], "block size must be at least 1 byte"),
    (["x.bin", "512", "0", "0", "0", "2", "0", "0"], "queue depth must be at least 1"),
    (["x.bin", "3", "2", "1", "0", "2", "0", "0"], "multiple of 4096 bytes, got 3072"),
])
def test_bad_article_form(variant, args, needle):
    """uring_b3sum takes the article's form only after --positional (its arguments are b3sum's)."""
    positional = article_form(variant)
    one_line_error(run([program(variant), *positional, *args], timeout=10), 2, variant, needle)


@pytest.mark.parametrize("variant", VARIANTS)
def test_help_lists_every_option_with_default(variant):
    result = run([program(variant), "--help"])
    assert result.returncode == 0
    text = result.stdout.decode()
    for option in ("--block-size", "--queue-depth", "--buffers", "--direct", "--process-in-inner-loop",
                   "--drain", "--link", "--fixed-buffers", "--fixed-file", "--sqpoll", "--submit-and-wait",
                   "--iopoll", "--parallel-hash", "--trace", "--help", "--version"):
        line = next(line for line in text.splitlines() if option in line)
        assert "default" in line or option in ("--help", "--version", "--trace"), line
    assert "BLAKE3 1.8" in run([program(variant), "--version"]).stdout.decode()


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("variant", VARIANTS)
def test_input_that_is_not_a_readable_regular_file(variant, tmp_path):
    """Errors as b3sum words them; FIFOs and devices are hashed (tests/test_b3sum_compat.py)."""
    missing = tmp_path / "missing.bin"
    one_line_error(run([program(variant), missing], timeout=10), 1, variant,
                   f"{missing}: No such file or directory (os error 2)")
    one_line_error(run([program(variant), tmp_path], timeout=10), 1, variant, "Is a directory (os error 21)")


@pytest.mark.parametrize("variant", VARIANTS)
def test_unreadable_file(variant, tmp_path):
    path = tmp_path / "secret.bin"
    path.write_bytes(b"x" * 5000)
    path.chmod(0)
    tmp_path.chmod(0o755)
    argv = [program(variant), path]
    if os.geteuid() == 0:  # root reads anything; ask as nobody
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    one_line_error(run(argv, timeout=10), 1, variant, "Permission denied")


@pytest.mark.parametrize("variant", VARIANTS)
def test_empty_file_hashes_to_the_empty_hash(variant, tmp_path):
    path = tmp_path / "empty"
    path.touch()
    for args in ([], ["--direct"]):
        result = run([program(variant), *args, path])
        assert result.returncode == 0, result.stderr
        assert result.stdout.decode() == f"{EMPTY_HASH}  {path}\n"


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_bad_file_among_good_ones(variant, tmp_path):
    good = [data_file(1), data_file(4097)]
    result = run([program(variant), good[0], tmp_path / "nope", good[1]])
    assert result.returncode == 1
    assert result.stdout == b3sum_lines(good)
    assert result.stderr.decode() == f"{variant}: {tmp_path / 'nope'}: No such file or directory (os error 2)\n"


@pytest.mark.parametrize("variant", VARIANTS)
def test_file_whose_size_is_not_real(variant):
    """/proc files say 0 bytes but have content: b3sum would hash the content, so no empty hash may be printed."""
    one_line_error(run([program(variant), "/proc/version"]), 1, variant, "data past its size")
    one_line_error(run([program(variant), "--direct", "/proc/version"]), 1, variant, "O_DIRECT refused")


@pytest.mark.parametrize("variant", VARIANTS)
def test_direct_on_tmpfs(variant, tmp_path):
    """tmpfs takes O_DIRECT since Linux 6.6 and refuses it before: either way, the right hash or a clear error."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    path = shm / f"ringsum-test-{os.getpid()}-{variant}"
    shutil.copyfile(data_file(3 * MiB + 5), path)
    try:
        result = run([program(variant), "--direct", path])
        if result.returncode == 0:
            assert result.stdout == b3sum_lines([path])
        else:
            one_line_error(result, 1, variant, "O_DIRECT refused")
    finally:
        path.unlink()


@pytest.mark.parametrize("errno_name", ["ENOSYS", "EPERM"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_io_uring_unavailable(variant, errno_name):
    path = data_file(4097)
    result = run([WITHOUT_IO_URING, errno_name, program(variant), path], timeout=10)
    if DESCRIBED[variant].get("falls_back"):  # reads with pread() instead (tests/test_b3sum_compat.py)
        assert result.returncode == 0 and result.stdout == b3sum_lines([path]), result.stderr
    elif variant in URING_VARIANTS:  # the article's variants exist to measure io_uring: they fail loudly
        reason = "Function not implemented" if errno_name == "ENOSYS" else "Operation not permitted"
        one_line_error(result, 1, variant, f"io_uring unavailable: {reason}", "kernel.io_uring_disabled=")
    else:  # the pread baseline has no ring to lose
        assert result.returncode == 0 and result.stdout == b3sum_lines([path])


def hash_while(variant: str, path: Path, change, args: list[str]) -> subprocess.CompletedProcess:
    """Start hashing `path` slowly, change the file once the hasher is running, and wait for it."""
    proc = subprocess.Popen([str(program(variant)), *args, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.05)
    change_started = proc.poll() is None
    change(path)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), change_started


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("how", ["shrink", "grow"])
def test_file_changing_while_read(variant, how, tmp_path):
    """Truncating or appending mid-read gives an error; a hash may only be printed if it is the hash of the file."""
    def change(path: Path):
        if how == "shrink":
            os.truncate(path, 1 * MiB)
        else:
            with open(path, "ab") as f:
                f.write(b"more" * 1024)
    slow = [*ring_path(variant), "--direct", "--block-size", "4096", "--queue-depth", "1", "--buffers", "1"]
    for attempt in range(4):
        path = tmp_path / f"changing-{attempt}.bin"
        shutil.copyfile(data_file(64 * MiB), path)
        result, change_started = hash_while(variant, path, change, slow)
        if change_started:
            break
    assert change_started, "the hasher finished before the file could be changed"
    if result.returncode == 0:
        # Only acceptable if the printed hash is of the file as it now is (the change came after the last read).
        assert result.stdout == b3sum_lines([path])
    else:
        one_line_error(result, 1, variant)
        assert any(s in result.stderr for s in (b"shrank", b"changed", b"past its size")), result.stderr


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", [b"back\\slash.bin", b"new\nline.bin", b"both\\and\n.bin", b"space and tab\t.bin",
                                  b"caf\xe9-latin1.bin", b"bad\xff\xfeutf8.bin", b"trunc\xe2\x82.bin",
                                  "okay-\u00e9.bin".encode()], ids=repr)
def test_paths_escaped_like_b3sum(variant, name, tmp_path):
    path = os.path.join(os.fsencode(tmp_path), name)
    with open(path, "wb") as f:
        f.write(b"hello ringsum\n")
    ours = subprocess.run([os.fsencode(program(variant)), path], capture_output=True, timeout=10)
    official = subprocess.run([os.fsencode(B3SUM), path], capture_output=True, timeout=10)
    assert ours.returncode == official.returncode == 0
    assert ours.stdout == official.stdout


@pytest.mark.parametrize("variant", VARIANTS)
def test_symlink_is_followed(variant, tmp_path):
    link = tmp_path / "link.bin"
    link.symlink_to(data_file(4097))
    assert run([program(variant), link]).stdout == b3sum_lines([link])


def test_notrace_build_refuses_trace(tmp_path):
    variant = "liburing_b3sum_singlethread"
    result = run([NOTRACE_BIN / variant, "--trace", tmp_path / "trace.csv", data_file(1)])
    one_line_error(result, 2, variant, "no trace code")
    assert not (tmp_path / "trace.csv").exists()


@pytest.mark.parametrize("variant", URING_VARIANTS)
def test_iopoll_refused_where_the_device_cannot_poll(variant):
    """The article saw IOPOLL spin unkillably; here it is refused up front unless the device has poll queues."""
    path = data_file(4097)
    st = os.stat(path)
    io_poll = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/queue/io_poll")
    if io_poll.exists() and io_poll.read_text().strip() == "1":
        pytest.skip("this device can poll; the refusal path is not reachable here")
    result = run([program(variant), "--iopoll", "--direct", path], timeout=10)
    if variant != "liburing_b3sum_singlethread":
        one_line_error(result, 2, variant, "use the single-threaded variant")
    else:
        one_line_error(result, 1, variant, "IOPOLL needs a block device with poll queues")
