"""The package layout the code promises: small modules (Python and C), imports in one direction
only (analysis -> harness; the command line, harness/cli/main.py, parser.py, completion.py and
run.py, is the one place that reaches into both), no import cycle between modules nor between
packages, no C file calling round a circle, no deferred import but for start-up time, and no
private name reached from outside its module. Static (every import statement, lazy ones in
functions included) and dynamic (what importing each module really loads)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import structure
from analysis.structure import c_call_graph, cycles, object_symbols, package_graph

pytestmark = pytest.mark.independent

REPO = Path(__file__).resolve().parent.parent
MAX_LINES = 450
# package -> the packages it must never import
FORBIDDEN = {"harness": ("analysis",), "analysis": ("harness.cli", "harness.__main__")}
# the command line: its parser (and the completions made from it), its dispatch and the run commands
# (--report) wire analysis in
COMMAND_LINE = {"harness/cli/main.py", "harness/cli/parser.py", "harness/cli/completion.py", "harness/cli/run.py",
                "harness/__main__.py"}
PACKAGES = ("harness", "analysis")


def forbidden(package: str, name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package])


def modules(package: str) -> list[Path]:
    return structure.modules(REPO, package)


def module_name(path: Path) -> str:
    return structure.module_name(REPO, path)


def rel(path: Path) -> str:
    return str(path.relative_to(REPO))


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
    long = {rel(p): n for p in modules(package) if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"{package}: modules over {MAX_LINES} lines: {long}"


def test_no_c_file_over_the_line_limit():
    """The hashers under the same cap as the Python: a file does one job and reads on a few screens."""
    sources = [p for ext in ("c", "h", "cpp") for p in (REPO / "hashers").rglob(f"*.{ext}")]
    long = {rel(p): n for p in sources if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert sources and not long, f"C sources over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_go_one_way_statically(package):
    bad = {f"{rel(p)}: {name}" for p in modules(package) if rel(p) not in COMMAND_LINE
           for name in imported(p) if forbidden(package, name)}
    assert not bad, f"{package} must not import {FORBIDDEN[package]}: {sorted(bad)}"


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_go_one_way_when_loaded(package):
    names = [module_name(p) for p in modules(package) if p.stem != "__main__" and rel(p) not in COMMAND_LINE]
    code = ("import importlib, sys\n"
            f"for n in {names!r}: importlib.import_module(n)\n"
            f"bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + '.') for f in {FORBIDDEN[package]!r}))\n"
            "print(' '.join(bad)); sys.exit(1 if bad else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"importing {package} loaded {r.stdout.strip()}{r.stderr[-500:]}"


def import_graph() -> dict[str, set[str]]:
    return structure.import_graph(REPO)


def test_the_import_graph_has_no_cycle():
    assert cycles(import_graph()) == []


def test_cycles_are_found():
    """The check above can fail: a made-up graph with a cycle through three modules."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_package_graph_has_no_cycle():
    """Packages import in one direction too: modules of two packages importing each other's (no cycle
    between modules) still tie the packages into one."""
    assert cycles(package_graph(import_graph())) == []


def test_package_cycles_are_found():
    """The check above can fail: a made-up graph where no two modules import each other, but the
    packages a and b do, and c only imports a."""
    graph = {"harness.a.plan": {"harness.b.spec"}, "harness.a.run": {"harness.a.plan"},
             "harness.b.spec": set(), "harness.b.emulation": {"harness.a.plan"},
             "harness.c": {"harness.a.run"}}
    assert cycles(graph) == []
    assert cycles(package_graph(graph)) == [["harness.a", "harness.b"]]


def built_objects() -> dict[str, Path]:
    """hashers/*.c -> its object in build/obj, made by `make all` after the last change to the file
    and to the headers (as make rebuilds it)."""
    sources = sorted((REPO / "hashers").glob("*.c"))
    headers = max(p.stat().st_mtime for p in (REPO / "hashers").glob("*.h"))
    objects = {p.name: REPO / "build" / "obj" / f"{p.stem}.o" for p in sources}
    stale = [rel(objects[p.name]) for p in sources if not objects[p.name].exists()
             or objects[p.name].stat().st_mtime < max(p.stat().st_mtime, headers)]
    assert sources and not stale, f"objects missing or older than their sources (run `make all`): {stale}"
    return objects


def test_no_c_file_calls_round_a_circle():
    """The C files call each other in one direction only: each file's object, by the symbols it
    defines and needs (nm), is a node; a file using another's function is an edge."""
    graph = c_call_graph({name: object_symbols(obj) for name, obj in built_objects().items()})
    assert cycles(graph) == []


def test_c_call_circles_are_found(tmp_path):
    """The check above can fail: made-up symbols where a.c and b.c use each other's, and two
    files compiled with a circle of their own through a variable and a function."""
    symbols = {"a.c": ({"a_run"}, {"b_help", "malloc"}), "b.c": ({"b_help"}, {"a_run"}),
               "main.c": ({"main"}, {"a_run"})}
    assert cycles(c_call_graph(symbols)) == [["a.c", "b.c"]]
    (tmp_path / "ring.c").write_text("int consume(void);\nint ring_head;\nint request(void) { return consume(); }\n")
    (tmp_path / "hash.c").write_text("extern int ring_head;\nint consume(void) { return ring_head; }\n")
    planted = {}
    for name in ("ring.c", "hash.c"):
        subprocess.run(["cc", "-c", name, "-o", f"{name}.o"], cwd=tmp_path, check=True)
        planted[name] = object_symbols(tmp_path / f"{name}.o")
    assert cycles(c_call_graph(planted)) == [["hash.c", "ring.c"]]


def deferred_imports(path: Path) -> list[str]:
    """Imports inside a function without a comment saying they wait for start-up time."""
    lines = path.read_text(encoding="utf-8").splitlines()
    bad = []
    for fn in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    near = " ".join(lines[max(0, node.lineno - 3):node.lineno])
                    if "start-up" not in near:
                        bad.append(f"{rel(path)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return bad


def test_no_deferred_import_but_for_start_up_time():
    bad = [b for pkg in PACKAGES for p in modules(pkg) for b in deferred_imports(p)]
    assert not bad, "imports inside functions (hoist them, or say they wait for start-up time):\n" + "\n".join(bad)


def private_reaches(path: Path) -> list[str]:
    """`from m import _x` and `m._x` where m is a project module: a private used outside its module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound: set[str] = set()
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    bad.append(f"{rel(path)}:{node.lineno}: from {node.module} import {a.name}")
                bound.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            bound |= {a.asname or a.name for a in node.names if a.name.split(".")[0] in PACKAGES}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            bad.append(f"{rel(path)}:{node.lineno}: {node.value.id}.{node.attr}")
    return bad


def test_no_private_reached_from_outside_its_module():
    bad = [b for pkg in PACKAGES for p in modules(pkg) for b in private_reaches(p)]
    assert not bad, "\n".join(bad)


def test_the_layout_page_names_every_module():
    """docs/layout.md is the map a new engineer reads: it names every module, package and C file
    there is (by its file name; the variants by their folder), and none that is gone."""
    page = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    files = [p for pkg in PACKAGES for p in modules(pkg) if p.name not in ("__init__.py", "__main__.py")]
    # a variant's file is named for its program and described by itself: the page names its folder
    files += [p for ext in ("c", "h", "cpp") for p in (REPO / "hashers").rglob(f"*.{ext}")
              if p.parent.name != "variants"]
    missing = sorted(rel(p) for p in files if f"`{p.name}`" not in page)
    packages = sorted(rel(p.parent) for p in (REPO / "harness").glob("*/__init__.py"))
    missing += [f"{d}/" for d in packages if f"`{d}/`" not in page]
    named = set(re.findall(r"`([\w.]+\.(?:py|c|h|cpp))`", page))
    present = {p.name for p in files} | {"__init__.py", "__main__.py", "completion.py"}
    assert not missing and not named - present, f"not named: {missing}; gone: {sorted(named - present)}"


def test_no_fixed_name_in_a_shared_temporary_directory():
    """The suite and the scripts run as root: a fixed name under /tmp is one a local user can plant
    first as a symlink (to a file root then truncates) or hold locked forever. Temporary files come
    from tmp_path, mkdtemp or mktemp, and locks from the private state directory (harness/machine/state.py)."""
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


def test_ringsum_alone_is_a_short_usage_and_one_error_line() -> None:
    r = subprocess.run([sys.executable, "-m", "harness"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and not r.stdout
    lines = r.stderr.splitlines()
    assert lines[0].startswith("usage: ringsum") and lines[-1] == "ringsum: no command given (see ringsum --help)"
    assert all(cmd in r.stderr for cmd in ("run", "plan", "report", "check", "tune", "sysinfo", "wisdom"))
    assert len(lines) <= 4  # the usage, not the whole help


def test_the_run_option_walk_follows_the_options_and_counts_returns(tmp_path):
    """`make structure`'s count of places the run options pass: a planted checkout where the options go
    cli -> plan -> execute -> plan again (one return to a file already left), a record built from them
    carries them, and a function's result does not."""
    files = {
        "harness/cli/run.py": "from harness.pipeline import plan\n"
                              "def cmd_run(a):\n    return plan.expand(a.config, Options(rounds=a.rounds))\n"
                              "class Options:\n    pass\n",
        "harness/pipeline/plan.py": "from harness.pipeline.execute import execute\n"
                                    "def expand(path, opts):\n    got = count(path)\n    return execute(opts, got)\n"
                                    "def count(path):\n    return 1\n"
                                    "def argv(opts):\n    return [opts]\n"
                                    "def unrelated(x):\n    return x\n",
        "harness/pipeline/execute.py": "from harness.pipeline import plan\n"
                                       "def execute(opts, n):\n    cmd = plan.argv(opts)\n    return plan.unrelated(n)\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    walk = structure.run_option_walk(tmp_path)
    assert walk.places == ["harness.cli.run:cmd_run", "harness.pipeline.plan:expand", "harness.pipeline.plan:count",
                           "harness.pipeline.execute:execute", "harness.pipeline.plan:argv"]
    assert walk.returns == 1 and len(walk.files) == 3


def test_structure_measures_this_checkout():
    """`make structure` on this checkout: no package cycle, no C circle, and the walk reaches the
    execution of a command (harness/pipeline/execute.py)."""
    r = subprocess.run([sys.executable, "-m", "analysis.structure"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert "\ncycles: none\n" in r.stdout and "\ncircles: none\n" in r.stdout
    assert "harness.pipeline.execute:execute(" in r.stdout
