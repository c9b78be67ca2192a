"""Other revisions of this repository, built each in a directory of its own under a run directory.

Nothing is written to the repository or its working tree: a bare clone in the run directory
shares the repository's objects (read only, `git clone --shared`), `git archive` exports a
revision from it, and that revision's own Makefile builds it (`make all`: its hashers in
<export>/build/bin). The bare clone is also where `git bisect` keeps its state.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.machine.processes import run_group

BUILD_TIMEOUT_S = 1800.0  # a cold build fetches BLAKE3 with cargo and compiles every program
GIT_TIMEOUT_S = 120.0


class RevisionError(Exception):
    """A revision that cannot be named, exported or built; the message is one line."""


@dataclass(frozen=True)
class Revision:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:12]

    def text(self) -> str:
        return f"{self.short} {self.subject}"


def _git(repo: Path, *args: str, bare: bool = False) -> str:
    where = ["--git-dir", str(repo)] if bare else ["-C", str(repo)]
    try:
        done = subprocess.run(["git", *where, *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RevisionError(f"git {' '.join(args)}: {e}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise RevisionError(f"git {' '.join(args)}: {first}")
    return done.stdout


class Repository:
    """The repository at `source`, seen through a private bare clone at `clone`."""

    def __init__(self, source: Path) -> None:
        try:
            self.source = Path(_git(source, "rev-parse", "--show-toplevel").strip())
        except RevisionError:
            raise RevisionError(f"{source}: not a git repository") from None
        self.clone: Path | None = None

    def attach(self, clone: Path) -> None:
        """Make the private bare clone (in the run directory) that bisects and exports."""
        if not clone.exists():
            _git(self.source, "clone", "--quiet", "--bare", "--shared", str(self.source), str(clone))
        self.clone = clone

    def resolve(self, name: str) -> Revision:
        """A commit named as git names it (a hash, a branch, HEAD~3), looked up in the repository."""
        if name.startswith("-"):
            raise RevisionError(f"{name!r}: not a revision")
        try:
            sha = _git(self.source, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}").strip()
        except RevisionError:
            raise RevisionError(f"{name!r}: no such commit in {self.source}") from None
        return self.revision(sha)

    def revision(self, sha: str) -> Revision:
        return Revision(sha, _git(self.source, "log", "-1", "--format=%s", sha).strip())

    def is_ancestor(self, older: Revision, newer: Revision) -> bool:
        try:
            _git(self.source, "merge-base", "--is-ancestor", older.sha, newer.sha)
            return True
        except RevisionError:
            return False

    def _clone(self) -> Path:
        if self.clone is None:
            raise RevisionError("no private clone: attach() one first")
        return self.clone

    def git(self, *args: str) -> str:
        """A git command in the private clone (git bisect keeps its state there)."""
        return _git(self._clone(), *args, bare=True)

    def git_said(self, *args: str) -> str:
        """A git command in the private clone, its output whatever its exit status (git bisect
        ends a bisection with a status of its own)."""
        try:
            done = subprocess.run(["git", "--git-dir", str(self._clone()), *args], capture_output=True, text=True,
                                  timeout=GIT_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise RevisionError(f"git {' '.join(args)}: {e}") from None
        return done.stdout + done.stderr

    def build(self, rev: Revision, builds: Path) -> Path:
        """Export `rev` to builds/<short hash>/ and build it; its bin directory. A build made
        before (its bin directory and list of programs present) is reused."""
        tree = builds / rev.short
        bin_dir = tree / "build" / "bin"
        done = tree / "build" / ".ringsum-built"
        if done.is_file():
            return bin_dir
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "--git-dir", str(self._clone()), "archive", "--format=tar", rev.sha],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            untar = subprocess.run(["tar", "-x", "-C", str(tree), "--no-same-owner"], stdin=archive.stdout,
                                   capture_output=True, timeout=GIT_TIMEOUT_S)
        finally:
            if archive.stdout:
                archive.stdout.close()
            archive.wait(timeout=GIT_TIMEOUT_S)
        if archive.returncode != 0 or untar.returncode != 0:
            raise RevisionError(f"{rev.short}: git archive | tar failed")
        log = tree / "build.log"
        argv = ["make", "-C", str(tree), f"-j{os.cpu_count() or 1}", "all"]
        with log.open("w") as out:
            code, _, err = run_group(argv, BUILD_TIMEOUT_S, stdout=out)
            out.write(err)
        if code != 0:
            why = "timed out" if code is None else f"failed (exit {code})"
            raise RevisionError(f"{rev.short}: `make all` {why}; its output: {log}")
        if not bin_dir.is_dir():
            raise RevisionError(f"{rev.short}: `make all` built no {bin_dir}")
        done.write_text(rev.sha + "\n")
        return bin_dir
