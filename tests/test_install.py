"""Installing the hashers: make install/uninstall (PREFIX, DESTDIR), the man pages and completions made
from --help, uring_b3sum as b3sum, and ringsum outside the checkout finding the installed hashers
(the .deb: tests/test_deb.py).

In the machine's line (not independent): these run make in the checkout, which must not race."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hashers_support import ALL_VARIANTS, B3SUM, REPO, make, run

PROGRAMS = tuple(ALL_VARIANTS)  # the programs the build lists in share/ringsum/variants
OPTION = re.compile(r"^  (?:-\w, |    )(--[\w-]+)", re.M)


def installed_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


def help_options(program: Path) -> set[str]:
    return set(OPTION.findall(run([program, "--help"]).stdout.decode()))


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("destdir")
    make("install", f"DESTDIR={root}", "PREFIX=/usr", "AS_B3SUM=yes")
    return root


def test_install_puts_programs_pages_and_completions_under_prefix(staged: Path) -> None:
    expected = sorted(
        [f"usr/bin/{p}" for p in (*PROGRAMS, "b3sum")]
        + [f"usr/share/man/man1/{p}.1" for p in (*PROGRAMS, "b3sum")]
        + [f"usr/share/bash-completion/completions/{p}" for p in (*PROGRAMS, "b3sum")]
        + [f"usr/share/zsh/site-functions/_{p}" for p in (*PROGRAMS, "b3sum")]
        + ["usr/share/ringsum/variants", "usr/lib/ringsum/parallel_hash.so"])
    assert installed_files(staged) == expected
    assert os.readlink(staged / "usr/bin/b3sum") == "uring_b3sum"
    assert os.readlink(staged / "usr/share/man/man1/b3sum.1") == "uring_b3sum.1"
    for p in PROGRAMS:
        assert os.access(staged / "usr/bin" / p, os.X_OK)


def test_installed_programs_hash_on_every_core_with_the_installed_library(staged: Path, tmp_path: Path) -> None:
    """Hashing on every core is parallel_hash.so, which the programs load from ../lib/ringsum when first
    needed (hashers/parallel_load.c): a small file's run loads nothing; without the library a hash that
    wants every core is said to go on one, and is still b3sum's."""
    data = tmp_path / "data"
    data.write_bytes(os.urandom(8 << 20))
    expected = subprocess.run([B3SUM, data], capture_output=True, timeout=60).stdout
    program = staged / "usr/bin/uring_b3sum"
    traced = subprocess.run(["strace", "-f", "-e", "trace=openat", program, "--parallel-hash", data],
                            capture_output=True, timeout=60)
    assert traced.stdout == expected and f"{staged}/usr/bin/../lib/ringsum/parallel_hash.so".encode() in traced.stderr
    small = tmp_path / "small"
    small.write_bytes(b"ring" * 1024)
    traced = subprocess.run(["strace", "-f", "-e", "trace=openat", program, small], capture_output=True, timeout=60)
    assert traced.returncode == 0 and b"parallel_hash.so" not in traced.stderr and b"libtbb" not in traced.stderr
    # nor do a few small files (side by side is tried after 8 MiB of them: tests/test_side_trial.py), on any cores
    for how in ([], ["--serial-hash"], ["--num-threads", "1"]):
        traced = subprocess.run(["strace", "-f", "-e", "trace=openat", program, *how, small, small], capture_output=True,
                                timeout=60)
        assert traced.returncode == 0 and b"parallel_hash.so" not in traced.stderr, how
    moved = tmp_path / "bin"
    moved.mkdir()
    shutil.copy2(program, moved / "uring_b3sum")
    alone = subprocess.run([moved / "uring_b3sum", "--parallel-hash", data], capture_output=True, timeout=60)
    assert alone.returncode == 0 and alone.stdout == expected
    assert alone.stderr.decode() == (f"uring_b3sum: cannot load parallel_hash.so (not in {moved}/../lib/ringsum): "
                                     "hashing on one core\n")


def test_a_bindir_of_its_own_takes_the_library_along(tmp_path: Path) -> None:
    """The programs look for parallel_hash.so in ../lib/ringsum: with bindir set, it goes there, and a
    pkglibdir elsewhere is refused in one line, not installed where no program finds it."""
    make("install", f"DESTDIR={tmp_path / 'a'}", "bindir=/opt/rs/bin")
    program = tmp_path / "a/opt/rs/bin/uring_b3sum"
    assert (tmp_path / "a/opt/rs/lib/ringsum/parallel_hash.so").is_file()
    data = tmp_path / "data"
    data.write_bytes(os.urandom(1 << 20))
    alone = subprocess.run([program, "--parallel-hash", data], capture_output=True, timeout=60)
    assert alone.returncode == 0 and alone.stderr == b""
    assert alone.stdout == subprocess.run([B3SUM, data], capture_output=True, timeout=60).stdout
    alone_env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # under make -j
    refused = subprocess.run(["make", "-s", "-C", str(REPO), "install", f"DESTDIR={tmp_path / 'b'}", "bindir=/opt/rs/bin",
                              "pkglibdir=/usr/lib/ringsum"], capture_output=True, text=True, timeout=600, env=alone_env)
    assert refused.returncode != 0 and not (tmp_path / "b").exists()
    ours = [line for line in refused.stderr.splitlines() if not line.startswith("make")]
    assert ours == [], refused.stderr
    assert ("make install: pkglibdir=/usr/lib/ringsum is not /opt/rs/bin/../lib/ringsum, where the programs look for "
            "parallel_hash.so") in refused.stderr.splitlines()


def test_without_as_b3sum_there_is_no_b3sum(tmp_path: Path) -> None:
    make("install", f"DESTDIR={tmp_path}", "PREFIX=/opt/rs")
    names = installed_files(tmp_path)
    assert "opt/rs/bin/uring_b3sum" in names and not any("b3sum.1" == Path(n).name or n.endswith("/b3sum")
                                                          for n in names)


def test_install_programs_chooses_what_goes_in_bindir_and_the_list(tmp_path: Path) -> None:
    make("install", f"DESTDIR={tmp_path}", "PREFIX=/usr", "INSTALL_PROGRAMS=uring_b3sum")
    assert [n for n in installed_files(tmp_path) if n.startswith("usr/bin/")] == ["usr/bin/uring_b3sum"]
    assert (tmp_path / "usr/share/ringsum/variants").read_text() == "uring_b3sum\n"
    assert (tmp_path / "usr/share/ringsum/variants").stat().st_mode & 0o777 == 0o644


def test_installed_as_b3sum_it_says_b3sum_byte_for_byte(staged: Path, tmp_path: Path) -> None:
    ours = staged / "usr/bin/b3sum"
    good = tmp_path / "good"
    good.write_bytes(b"ring" * 1000)
    checks = tmp_path / "sums"
    checks.write_text(f"{'0' * 64}  {good}\n")
    for argv in ([good, tmp_path / "missing"], ["--check", checks], [tmp_path]):
        theirs = subprocess.run([B3SUM, *argv], capture_output=True, timeout=60)
        mine = subprocess.run([ours, *argv], capture_output=True, timeout=60)
        assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert b"b3sum: " in mine.stderr
    named = subprocess.run([staged / "usr/bin/uring_b3sum", tmp_path / "missing"], capture_output=True, timeout=60)
    assert named.stderr.startswith(b"uring_b3sum: ") and named.returncode == 1


def test_man_page_documents_every_option_of_help(staged: Path, tmp_path: Path) -> None:
    for p in PROGRAMS:
        page = subprocess.run(["man", "-l", staged / f"usr/share/man/man1/{p}.1"], capture_output=True, text=True,
                              env={**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"}, timeout=60)
        assert page.returncode == 0, page.stderr
        text = re.sub(r".\x08", "", page.stdout).replace("\u2010", "-")
        assert text.splitlines()[0].startswith(p.upper() + "(1)")
        assert set(re.findall(r"--[\w-]+", text)) >= help_options(staged / "usr/bin" / p), p


def complete(completion: Path, command: str, words: list[str], cwd: Path | None = None) -> list[str]:
    """What bash offers for the last word, with the installed completion loaded as bash-completion would."""
    script = (f'source "{completion}"; COMP_WORDS=({" ".join(map(repr, [command, *words]))}); '
              f'COMP_CWORD={len(words)}; $(complete -p {command} | sed "s/.*-F \\([^ ]*\\) .*/\\1/"); '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, timeout=60, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completion_offers_the_options_of_help(staged: Path, tmp_path: Path) -> None:
    compdir = staged / "usr/share/bash-completion/completions"
    for command in (*PROGRAMS, "b3sum"):
        registered = subprocess.run(["bash", "--norc", "-c", f'source "{compdir / command}"; complete -p {command}'],
                                    capture_output=True, text=True, timeout=60)
        assert registered.stdout.strip().endswith(f" {command}"), registered
    program = staged / "usr/bin/uring_b3sum"
    offered = complete(compdir / "uring_b3sum", "uring_b3sum", ["--"])
    assert set(offered) == {o for o in help_options(program)}
    assert complete(compdir / "uring_b3sum", "uring_b3sum", ["--prog"]) == ["--progress"]
    assert complete(compdir / "uring_b3sum", "uring_b3sum", ["--path", ""]) == ["auto", "memory", "ring"]
    assert complete(compdir / "uring_b3sum", "uring_b3sum", ["--block-size", ""]) == []
    (tmp_path / "only-file").write_text("x")
    assert complete(compdir / "b3sum", "b3sum", ["only"], cwd=tmp_path) == ["only-file"]


def test_zsh_completion_parses_and_names_every_option(staged: Path) -> None:
    for p in (*PROGRAMS, "b3sum"):
        completion = staged / f"usr/share/zsh/site-functions/_{p}"
        text = completion.read_text()
        assert text.startswith(f"#compdef {p}\n")
        assert subprocess.run(["zsh", "-n", completion], capture_output=True, timeout=60).returncode == 0
        program = staged / "usr/bin" / p
        assert set(re.findall(r"--[\w-]+", text)) == help_options(program)


def test_uninstall_removes_what_install_put_and_keeps_a_b3sum_of_its_own(tmp_path: Path) -> None:
    make("install", f"DESTDIR={tmp_path}", "PREFIX=/usr", "AS_B3SUM=yes")
    make("uninstall", f"DESTDIR={tmp_path}", "PREFIX=/usr")
    assert installed_files(tmp_path) == []
    make("install", f"DESTDIR={tmp_path}", "PREFIX=/usr")
    other = tmp_path / "usr/bin/b3sum"
    shutil.copy(B3SUM, other)  # somebody else's b3sum
    make("uninstall", f"DESTDIR={tmp_path}", "PREFIX=/usr")
    assert installed_files(tmp_path) == ["usr/bin/b3sum"]


def test_ringsum_outside_the_checkout_runs_the_installed_hashers(staged: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                            "--target", site, str(REPO)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    env = {k: v for k, v in os.environ.items() if k != "RINGSUM_BIN_DIR"}
    env.update(PYTHONPATH=str(site), PATH=f"{staged / 'usr/bin'}:{env['PATH']}")
    where = subprocess.run([sys.executable, "-c", "import harness.catalog.variants as v; print(v.__file__); "
                            "print(v.default_bin_dir())"], capture_output=True, text=True, cwd=tmp_path, env=env)
    module, bin_dir = where.stdout.split()
    assert Path(module).is_relative_to(site) and Path(bin_dir) == staged / "usr/bin", where
    knobs = subprocess.run([sys.executable, "-m", "harness", "knobs"], capture_output=True, text=True,
                           cwd=tmp_path, env=env, timeout=120)
    assert knobs.returncode == 0 and "block_size" in knobs.stdout, knobs.stderr
