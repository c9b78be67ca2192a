"""--progress: drawn on stderr only when it is a terminal, cleared before every output line, so that
stdout (and the terminal's last screen) is b3sum's exactly. The faults build's RINGSUM_FAULTS=tick:0
redraws after every block and file, so that no test waits on the clock."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from hashers_support import B3SUM, REPO, program, run_on_terminal

pytestmark = pytest.mark.independent

FAULTS_URING_B3SUM = REPO / "build" / "faults" / "bin" / "uring_b3sum"
FULL_LINE = re.compile(r"^uring_b3sum: [\d.]+ (?:B|KiB|MiB|GiB) of [\d.]+ (?:B|KiB|MiB|GiB) \(\d+%\), "
                       r"\d+ of \d+ files?, [\d.]+ (?:B|KiB|MiB|GiB)/s(?:, \d+:\d\d left)?$")
TREE_LINE = re.compile(r"^uring_b3sum: [\d.]+ (?:B|KiB|MiB|GiB), \d+ files?, [\d.]+ (?:B|KiB|MiB|GiB)/s$")


def screen(data: bytes) -> list[str]:
    """What a terminal shows after `data`: \\r back to the line's start, ESC[K erases to its end."""
    lines, col = [""], 0
    for token in re.findall(rb"\r|\n|\x1b\[K|[^\r\n\x1b]+", data):
        if token == b"\r":
            col = 0
        elif token == b"\n":
            lines.append("")
            col = 0
        elif token == b"\x1b[K":
            lines[-1] = lines[-1][:col]
        else:
            text = token.decode()
            lines[-1] = lines[-1][:col] + text + lines[-1][col + len(text):]
            col += len(text)
    return lines[:-1] if lines[-1] == "" else lines


def drawn(data: bytes) -> list[str]:
    """Every progress line drawn: the text between a \\r and its ESC[K."""
    return [m.decode() for m in re.findall(rb"\r([^\r\n\x1b]+)\x1b\[K", data)]


def random_file(path: Path, size: int) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def b3sum(*argv: object) -> bytes:
    return subprocess.run([B3SUM, *map(str, argv)], capture_output=True, check=False, timeout=120).stdout


def test_a_big_file_shows_bytes_of_total_files_rate_and_time_left(tmp_path: Path) -> None:
    big = random_file(tmp_path / "big", 48 << 20)
    code, out, terminal = run_on_terminal([FAULTS_URING_B3SUM, "--progress", "--path", "ring",
                                           "--block-size", "1M", big], stdout_too=False,
                                          env={"RINGSUM_FAULTS": "tick:0"})
    assert code == 0 and out == b3sum(big)
    lines = drawn(terminal)
    assert len(lines) >= 48, lines[:3]  # a redraw per block
    assert all(FULL_LINE.match(line) for line in lines), [x for x in lines if not FULL_LINE.match(x)][:3]
    assert "of 48.0 MiB" in lines[0] and ", 0 of 1 file," in lines[0]
    assert any(" left" in line for line in lines)
    assert terminal.endswith(b"\r\x1b[K") and screen(terminal) == []  # cleared: nothing stays


def test_a_tree_counts_files_and_bytes_without_a_total(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for i in range(40):
        (tree / f"d{i % 4}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{i % 4}" / f"f{i}").write_bytes(os.urandom(1000 + i))
    code, out, terminal = run_on_terminal([FAULTS_URING_B3SUM, "--progress", "-r", tree], stdout_too=False,
                                          env={"RINGSUM_FAULTS": "tick:0"})
    assert code == 0 and out.count(b"\n") == 40
    lines = drawn(terminal)
    assert lines and all(TREE_LINE.match(line) for line in lines), lines[:3]
    files = [int(re.search(r", (\d+) files?,", line).group(1)) for line in lines]
    assert files == sorted(files) and files[-1] >= 39


def test_on_a_shared_terminal_the_screen_is_b3sums_output(tmp_path: Path) -> None:
    files = [random_file(tmp_path / f"f{i}", 3 << 20) for i in range(3)]
    missing = tmp_path / "missing"
    code, _, terminal = run_on_terminal([FAULTS_URING_B3SUM, "--progress", "--path", "ring", "--block-size", "1M",
                                         files[0], missing, *files[1:]], stdout_too=True,
                                        env={"RINGSUM_FAULTS": "tick:0"})
    expected = subprocess.run([B3SUM, files[0], missing, *files[1:]], capture_output=True, timeout=120)
    assert code == 1 and len(drawn(terminal)) >= 9
    shown = screen(terminal)
    assert shown == [line.replace("b3sum:", "uring_b3sum:") for line in
                     (expected.stdout.decode().splitlines()[:1] + expected.stderr.decode().splitlines()
                      + expected.stdout.decode().splitlines()[1:])]


def test_progress_stays_off_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    big = random_file(tmp_path / "big", 8 << 20)
    done = subprocess.run([FAULTS_URING_B3SUM, "--progress", "--path", "ring", "--block-size", "1M", big],
                          capture_output=True, env={**os.environ, "RINGSUM_FAULTS": "tick:0"}, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, b3sum(big), b"")


def test_without_the_option_a_terminal_sees_nothing(tmp_path: Path) -> None:
    big = random_file(tmp_path / "big", 8 << 20)
    code, out, terminal = run_on_terminal([FAULTS_URING_B3SUM, "--path", "ring", big], stdout_too=False,
                                          env={"RINGSUM_FAULTS": "tick:0"})
    assert (code, out, terminal) == (0, b3sum(big), b"")


def test_the_release_build_redraws_at_most_four_times_a_second(tmp_path: Path) -> None:
    """A stream fed for about 1.2 s: some redraws, never more than 4 a second (plus the first)."""
    read_end, write_end = os.pipe()
    fed = []

    def feed() -> None:
        start = time.monotonic()
        with os.fdopen(write_end, "wb") as w:
            for _ in range(25):
                chunk = os.urandom(64 << 10)
                w.write(chunk)
                w.flush()
                fed.append(chunk)
                time.sleep(0.05)
        fed.append(time.monotonic() - start)

    feeder = threading.Thread(target=feed)
    feeder.start()
    start = time.monotonic()
    code, out, terminal = run_on_terminal([program("uring_b3sum"), "--progress"], stdout_too=False, stdin=read_end)
    elapsed = time.monotonic() - start
    os.close(read_end)
    feeder.join()
    data = b"".join(fed[:-1])
    expected = subprocess.run([B3SUM], input=data, capture_output=True, timeout=60).stdout
    lines = drawn(terminal)
    assert code == 0 and out == expected
    assert 1 <= len(lines) <= 4 * elapsed + 1, (len(lines), elapsed)
    assert all(TREE_LINE.match(line) for line in lines), lines
    assert screen(terminal) == []
