"""The shape of a checkout, measured from its files: lines per package, the package graph and its
cycles, the C call graph and its circles, the path the run options take from `ringsum run` to the
executed command, and the sizes of the doc pages. `make structure` prints it for this checkout;
`python -m analysis.structure --root DIR` for another (an older commit's `git worktree`), so a
redesign shows its before and after by one command. tests/test_layout.py enforces the graphs with
the same functions. Nothing of the measured checkout is imported or run; its C files are compiled."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("harness", "analysis")
# `ringsum run`'s function in harness/cli (named _cmd_run before the command line was split by command)
RUN_COMMAND = ("cmd_run", "_cmd_run")


def modules(root: Path, package: str) -> list[Path]:
    return sorted((root / package).rglob("*.py"))


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for pkg in PACKAGES for p in modules(root, pkg)}


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the project modules it imports anywhere (in a function, under TYPE_CHECKING too):
    `from harness.check import decide` is an import of harness.check.decide."""
    paths = project_modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in paths}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    edges.add(sub if sub in paths else node.module)
        graph[name] = {e for e in edges if e in paths and e != name and not name.startswith(e + ".")
                       and paths[e].name != "__init__.py"}
    return graph


def package_of(module: str) -> str:
    """harness.pipeline for everything under harness/pipeline/; a top-level module is its own node."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph with each package one node."""
    packages: dict[str, set[str]] = {}
    for module, edges in graph.items():
        packages.setdefault(package_of(module), set()).update(package_of(e) for e in edges)
    return {p: edges - {p} for p, edges in packages.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def object_symbols(obj: Path) -> tuple[set[str], set[str]]:
    """The global symbols an object file defines, and those it needs from elsewhere (nm's U)."""
    out = subprocess.run(["nm", "-g", "-P", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        name, kind = line.split()[:2]
        (needed if kind == "U" else defined).add(name)
    return defined, needed


def c_call_graph(symbols: dict[str, tuple[set[str], set[str]]]) -> dict[str, set[str]]:
    """file -> the files whose functions (or data) it uses: a symbol it needs that the other defines.
    A header's static inline functions belong to no file."""
    return {a: {b for b, (defined, _) in symbols.items() if b != a and needed & defined}
            for a, (_, needed) in symbols.items()}


def compiled_symbols(root: Path, blake3_include: Path) -> dict[str, tuple[set[str], set[str]]]:
    """hashers/*.c (the core every program links) compiled here, file by file, to its symbols."""
    symbols = {}
    with tempfile.TemporaryDirectory() as tmp:
        for source in sorted((root / "hashers").glob("*.c")):
            obj = Path(tmp) / f"{source.stem}.o"
            subprocess.run(["cc", "-c", "-std=gnu11", "-D_GNU_SOURCE", "-DBLAKE3_USE_TBB", "-DRINGSUM_LIBURING_VERSION=\"\"",
                            "-pthread", f"-I{blake3_include}", f"-I{root / 'hashers'}", str(source), "-o", str(obj)],
                           check=True, capture_output=True)
            symbols[source.name] = object_symbols(obj)
    return symbols


@dataclass
class Function:
    module: str
    name: str  # Class.method for a method
    node: ast.FunctionDef
    path: Path

    @property
    def params(self) -> list[str]:
        a = self.node.args
        names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        return names[1:] if "." in self.name and names[:1] in (["self"], ["cls"]) else names


@dataclass
class Module:
    functions: dict[str, Function] = field(default_factory=dict)  # local name -> function
    classes: set[str] = field(default_factory=set)
    imported: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # alias -> (module, name or None)


def index(root: Path) -> dict[str, Module]:
    """Each project module's functions and methods, and what its imported names stand for."""
    paths = project_modules(root)
    mods: dict[str, Module] = {}
    for name, path in paths.items():
        mod = mods[name] = Module()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                mod.functions[node.name] = Function(name, node.name, node, path)
            elif isinstance(node, ast.ClassDef):
                mod.classes.add(node.name)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        qual = f"{node.name}.{item.name}"
                        mod.functions[qual] = Function(name, qual, item, path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    mod.imported[a.asname or a.name] = (sub, None) if sub in paths else (node.module, a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        mod.imported[a.asname] = (a.name, None)
    return mods


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _carries(mods: dict[str, Module], fn: Function, expr: ast.AST, tainted: set[str]) -> bool:
    """Whether an expression's value is made from the tainted names: a record built from them or a
    part of them is; what a project function returns when given them is that function's result."""
    if isinstance(expr, ast.Name):
        return expr.id in tainted
    if isinstance(expr, ast.Call) and _callee(mods, fn, expr) is not None and not _is_class(mods, fn, expr):
        return False
    return any(_carries(mods, fn, child, tainted) for child in ast.iter_child_nodes(expr))


def _tainted(mods: dict[str, Module], fn: Function, param: str) -> set[str]:
    """The parameter and every local name assigned from a value made from it (to a fixed point)."""
    tainted = {param}
    while True:
        before = len(tainted)
        for node in ast.walk(fn.node):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _carries(mods, fn, node.value, tainted):
                    tainted |= {t for target in targets for t in _names(target)}
            elif isinstance(node, (ast.For, ast.comprehension)) and _carries(mods, fn, node.iter, tainted):
                tainted |= _names(node.target)
            elif (isinstance(node, ast.withitem) and node.optional_vars is not None
                  and _carries(mods, fn, node.context_expr, tainted)):
                tainted |= _names(node.optional_vars)
        if len(tainted) == before:
            return tainted


def _target(mods: dict[str, Module], fn: Function, call: ast.Call) -> tuple[str, str] | None:
    """(module, name) of what a call calls, where the name is bound by an import or defined here."""
    mod = mods[fn.module]
    if isinstance(call.func, ast.Name):
        name = call.func.id
        if name in mod.functions or name in mod.classes:
            return fn.module, name
        return mod.imported.get(name) if mod.imported.get(name, (None, None))[1] else None
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id in mod.imported:
        module, name = mod.imported[call.func.value.id]
        return (module, call.func.attr) if name is None else None
    return None


def _is_class(mods: dict[str, Module], fn: Function, call: ast.Call) -> bool:
    target = _target(mods, fn, call)
    return target is not None and target[0] in mods and target[1] in mods[target[0]].classes


def _callee(mods: dict[str, Module], fn: Function, call: ast.Call) -> Function | None:
    mod = mods[fn.module]
    target, attr = None, None
    if isinstance(call.func, ast.Name):
        name = call.func.id
        if name in mod.functions:
            return mod.functions[name]
        if name in mod.imported:
            target, attr = mod.imported[name]
    elif isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        base = call.func.value.id
        if base in ("self", "cls") and "." in fn.name:
            return mod.functions.get(f"{fn.name.split('.')[0]}.{call.func.attr}")
        if base in mod.imported:
            module, name = mod.imported[base]
            target, attr = (module, call.func.attr) if name is None else (module, f"{name}.{call.func.attr}")
    if target not in mods or attr is None:
        return None
    functions = mods[target].functions
    # a class called is its __init__ (a dataclass's is generated: the class is then a place with nothing to follow)
    return functions.get(attr) or functions.get(f"{attr}.__init__") or functions.get(f"{attr}.__post_init__")


def _handed(call: ast.Call, callee: Function, tainted: set[str]) -> list[str]:
    """The callee's parameters that receive something made from the tainted names."""
    params = callee.params
    got = [params[i] for i, arg in enumerate(call.args) if i < len(params) and _names(arg) & tainted]
    got += [k.arg for k in call.keywords if k.arg in params and _names(k.value) & tainted]
    return got


@dataclass
class Walk:
    start: str
    steps: list[str]  # module:function(param), in the order reached
    places: list[str]  # module:function, each once
    files: list[str]
    returns: int  # steps into a file the walk had already left


def run_option_walk(root: Path) -> Walk:
    """Follow the run options from `ringsum run` to the executed command: start at the parameter of
    the run command's function (its parsed arguments), and follow every call that passes a value made
    from them (a local name assigned from one, a record built from one) to the callee's parameter
    that receives it, depth first. A place is a function's parameter; calls that cannot be resolved
    statically (a method of an object held in a variable) are not followed."""
    mods = index(root)
    start = next((fn for name, mod in sorted(mods.items()) if name.startswith("harness.cli")
                  for fn in mod.functions.values() if fn.name in RUN_COMMAND), None)
    if start is None:
        raise SystemExit(f"structure: no function {' or '.join(RUN_COMMAND)} under {root}/harness/cli")
    seen: set[tuple[str, str, str]] = set()
    order: list[tuple[Function, str]] = []

    def follow(fn: Function, param: str) -> None:
        if (fn.module, fn.name, param) in seen:
            return
        seen.add((fn.module, fn.name, param))
        order.append((fn, param))
        tainted = _tainted(mods, fn, param)
        for call in sorted((n for n in ast.walk(fn.node) if isinstance(n, ast.Call)), key=lambda c: (c.lineno, c.col_offset)):
            callee = _callee(mods, fn, call)
            if callee is not None:
                for p in _handed(call, callee, tainted):
                    follow(callee, p)

    follow(start, start.params[0])
    files: list[str] = []
    returns = 0
    for fn, _ in order:
        path = str(fn.path.relative_to(root))
        if files and path != files[-1] and path in files:
            returns += 1
        files.append(path)
    places = list(dict.fromkeys(f"{fn.module}:{fn.name}" for fn, _ in order))
    return Walk(f"{start.module}.{start.name}({start.params[0]})", [f"{fn.module}:{fn.name}({p})" for fn, p in order],
                places, sorted(set(files)), returns)


def lines_per_package(root: Path) -> dict[str, int]:
    """harness.pipeline for harness/pipeline/; the modules directly under harness/ (or analysis/) together."""
    lines: dict[str, int] = {}
    for name, path in project_modules(root).items():
        key = package_of(name) if path.parent != root / name.split(".")[0] else f"{name.split('.')[0]}/*.py"
        lines[key] = lines.get(key, 0) + len(path.read_text(encoding="utf-8").splitlines())
    return dict(sorted(lines.items()))


def doc_sizes(root: Path) -> dict[str, int]:
    """docs/*.md, the guide's pages (kept run directories' READMEs are data, not pages), in bytes."""
    return {p.name: p.stat().st_size for p in sorted((root / "docs").glob("*.md"))}


def report(root: Path, blake3_include: Path) -> str:
    out = [f"# Structure of {root}", ""]
    lines = lines_per_package(root)
    out += ["## Lines per package", *(f"{n:7d}  {p}" for p, n in lines.items()), f"{sum(lines.values()):7d}  in all", ""]
    graph = import_graph(root)
    packages = package_graph(graph)
    reaching = {p: sum(package_of(e) == p for m, edges in graph.items() if package_of(m) != p for e in edges)
                for p in sorted(set(map(package_of, graph)))}
    out += ["## Package graph (package -> the packages it imports)",
            *(f"{p} -> {', '.join(sorted(e)) or '-'}" for p, e in sorted(packages.items())),
            f"cycles: {cycles(packages) or 'none'}",
            "imports reaching into a package from other packages (module to module): "
            + ", ".join(f"{p} {n}" for p, n in sorted(reaching.items(), key=lambda x: -x[1]) if n >= 10), ""]
    calls = c_call_graph(compiled_symbols(root, blake3_include))
    out += ["## C call graph (file -> the files whose functions it calls)",
            *(f"{f} -> {', '.join(sorted(e)) or '-'}" for f, e in sorted(calls.items())),
            f"circles: {cycles(calls) or 'none'}", ""]
    walk = run_option_walk(root)
    out += ["## The run options from `ringsum run` to the executed command",
            f"{len(walk.places)} places (functions; {len(walk.steps)} with the parameter each receives) in "
            f"{len(walk.files)} files, {walk.returns} returns to a file already left; from {walk.start}, in order:",
            *(f"  {p}" for p in walk.steps), ""]
    docs = doc_sizes(root)
    out += ["## Doc pages (docs/*.md, bytes)", *(f"{n:7d}  {p}" for p, n in docs.items()),
            f"{sum(docs.values()):7d}  in all, {len(docs)} pages, largest {max(docs.values(), default=0)}"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.structure", description=__doc__.split("\n\n")[0])
    here = Path(__file__).resolve().parent.parent
    p.add_argument("--root", type=Path, default=here, help="the checkout to measure (default this one)")
    p.add_argument("--blake3-include", type=Path, help="BLAKE3's c/ folder, for the C files' includes "
                   "(default this checkout's build/vendor/blake3-*/c)")
    a = p.parse_args(argv)
    include = a.blake3_include or next(iter(sorted(here.glob("build/vendor/blake3-*/c"))), None)
    if include is None or not (include / "blake3.h").is_file():
        print("structure: no BLAKE3 headers (run `make deps`, or pass --blake3-include)", file=sys.stderr)
        return 2
    if not (a.root / "harness").is_dir():
        print(f"structure: {a.root} is not a ringsum checkout (no harness/)", file=sys.stderr)
        return 2
    sys.stdout.write(report(a.root.resolve(), include))
    return 0


if __name__ == "__main__":
    sys.exit(main())
