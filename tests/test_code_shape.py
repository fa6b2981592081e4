"""The shape of the code: the import graph, the size of functions, who calls the statistics.

Read from the source (Python's ``ast``), so each check says which file breaks it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("zcl_assets", "resources", "contracts", "sql")
CORE = ("zcl_assets.stats", "zcl_assets.analysis", "zcl_assets.ingest", "zcl_assets.reports", "zcl_assets.experience_gain",
        "zcl_assets.funnel", "zcl_assets.importers", "zcl_assets.simulation", "zcl_assets.portability")
"""The packages below the code location's Dagster definitions (``zcl_assets.defs``)."""
SHAPED = PACKAGES
"""Folders whose functions are held to :data:`MAX_LINES` and :data:`MAX_PARAMETERS`: all the code but the
tests and the benchmarks."""
MAX_LINES, MAX_PARAMETERS = 80, 10


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``module`` imports (at any depth of its code)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(module.split(".")[: -node.level] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found |= {n for n in names if n in known}
    return found - {module}


def test_the_import_graph_has_no_cycle_and_no_core_package_imports_the_definitions():
    modules = _modules()
    graph = {m: _imports(m, p, set(modules)) for m, p in modules.items()}
    upward = sorted(f"{m} -> {t}" for m, ts in graph.items() if m.startswith(CORE) for t in ts
                    if t.startswith("zcl_assets.defs"))
    assert upward == []
    # a cycle between modules (Tarjan's strongly connected components of more than one module)
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    # a package's __init__ re-exporting its modules is not a cycle of behaviour
    cycles = [c for c in cycles if not all(m == c[0] or m.startswith(c[0] + ".") for m in c[1:])]
    assert cycles == []


def _functions(path: Path):
    text = path.read_text()
    lines = text.splitlines()
    blank = {i + 1 for i, line in enumerate(lines) if not line.strip() or line.strip().startswith("#")}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = set()
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                doc = set(range(first.lineno, first.end_lineno + 1))
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            code = [n for n in range(start, node.end_lineno + 1) if n not in doc and n not in blank]
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs] + [x for x in (a.vararg, a.kwarg) if x]
            if params and params[0].arg in ("self", "cls"):
                params = params[1:]
            yield node.name, node.lineno, len(code), len(params)


def test_functions_stay_short_and_take_a_handful_of_arguments():
    # code lines, the docstring, blank lines and comment lines left out
    offenders = [f"{path.relative_to(ROOT)}:{line} {name}: {size} lines, {params} parameters"
                 for folder in SHAPED for path in sorted((ROOT / folder).rglob("*.py"))
                 for name, line, size, params in _functions(path) if size > MAX_LINES or params > MAX_PARAMETERS]
    assert offenders == []


def test_every_public_function_of_the_statistics_has_a_caller_outside_the_tests():
    stats = ROOT / "zcl_assets" / "stats"
    public = {node.name: path for path in stats.glob("[!_]*.py") for node in ast.parse(path.read_text()).body
              if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
    called = set()
    for package in ("zcl_assets", "resources", "contracts", "benchmarks"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            scopes = [(f.name, f) for f in tree.body if isinstance(f, (ast.FunctionDef, ast.ClassDef))]
            scopes += [(None, n) for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))]
            for own, scope in scopes:  # a function calling itself is no caller
                for node in ast.walk(scope):
                    if isinstance(node, ast.Call):
                        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                        if name in public and name != own:
                            called.add(name)
    assert sorted(set(public) - called) == []


def test_the_text_report_loads_no_dagster():
    # the core packages run without the framework: reading the warehouse and writing a report
    # needs neither Dagster nor its resources
    done = subprocess.run([sys.executable, "-c", "import zcl_assets.reports.text, sys; assert 'dagster' not in sys.modules"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
