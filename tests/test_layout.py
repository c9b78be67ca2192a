"""The package layout the code promises: small modules, and imports in one direction only,
analysis -> harness; the command line (harness/cli.py, the `ringsum` entry point) is the one module
that reaches into both, and only where a report command runs. Static (every import statement, lazy
ones in functions included) and dynamic (what importing each module really loads)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
MAX_LINES = 450
# package -> the packages it must never import
FORBIDDEN = {"harness": ("analysis",), "analysis": ("harness.cli", "harness.__main__")}
COMMAND_LINE = {"cli.py", "__main__.py"}  # harness's entry point: dispatches to analysis lazily


def forbidden(package: str, name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package])


def modules(package: str) -> list[Path]:
    return sorted((REPO / package).glob("*.py"))


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", ["harness", "analysis"])
def test_no_module_over_the_line_limit(package):
    long = {p.name: n for p in modules(package) if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"{package}: modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_go_one_way_statically(package):
    bad = {f"{p.name}: {name}" for p in modules(package) if p.name not in COMMAND_LINE
           for name in imported(p) if forbidden(package, name)}
    assert not bad, f"{package} must not import {FORBIDDEN[package]}: {sorted(bad)}"


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_go_one_way_when_loaded(package):
    names = [f"{package}.{p.stem}" for p in modules(package) if p.stem not in ("__main__",)]
    code = ("import importlib, sys\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            f"bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + '.') for f in {FORBIDDEN[package]!r}))\n"
            "print(' '.join(bad)); sys.exit(1 if bad else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"importing {package} loaded {r.stdout.strip()}{r.stderr[-500:]}"


def test_no_fixed_name_in_a_shared_temporary_directory():
    """The suite and the scripts run as root: a fixed name under /tmp is one a local user can plant
    first as a symlink (to a file root then truncates) or hold locked forever. Temporary files come
    from tmp_path, mkdtemp or mktemp, and locks from the private state directory (harness/state.py)."""
    fixed = re.compile(r"""(?<![\w.{-])/(?:var/)?tmp/""")
    scripts = [*REPO.glob("tests/**/*.py"), *REPO.glob("harness/**/*.py"), *REPO.glob("analysis/**/*.py"),
               *REPO.glob("hashers/**/*.sh"), *REPO.glob("tests/**/*.sh"), *REPO.glob("harness/**/*.yml"),
               REPO / "Makefile", REPO / ".ci" / "run"]
    found = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in scripts
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if fixed.search(line) and "(the old /tmp/" not in line]
    assert not found, "fixed names in a shared temporary directory:\n" + "\n".join(found)


def makefile_list(name: str) -> list[str]:
    """A `NAME := words \\ words` assignment of the Makefile, its words."""
    text = (REPO / "Makefile").read_text()
    m = re.search(rf"^{name}\s*:=((?:.*\\\n)*.*)$", text, re.M)
    assert m, name
    return m.group(1).replace("\\\n", " ").split()


def test_readme_lists_the_packages_the_makefile_installs():
    """docs/setup.md, which the README links for set-up, names every package `make deps` installs, perf's both ways."""
    readme = " ".join((REPO / "docs" / "setup.md").read_text().split())
    wanted = makefile_list("APT_PACKAGES") + makefile_list("FLEET_APT_PACKAGES")
    assert wanted and not [p for p in wanted if p not in readme]
    assert "`linux-perf`" in readme and "linux-tools-common linux-tools-$(uname -r)" in readme
    assert "linux-perf" in (REPO / "Makefile").read_text() and "linux-tools-$(shell uname -r)" in (REPO / "Makefile").read_text()


def test_the_github_workflow_builds_as_the_runner_user():
    """`sudo make` would lose ~/.cargo/bin to sudo's secure_path: make calls sudo for apt-get itself."""
    workflow = (REPO / "docs" / "github-actions-ringsum-check.yml").read_text()
    assert "sudo make" not in workflow
    assert "make -C base deps all" in workflow and "make -C pr deps all" in workflow


def test_ringsum_alone_lists_its_commands() -> None:
    r = subprocess.run([sys.executable, "-m", "harness"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and not r.stderr
    assert all(f"    {cmd} " in r.stdout for cmd in ("run", "plan", "report", "check", "tune", "sysinfo"))
