"""The import direction of ARCHITECTURE.md, checked by parsing every module's imports.

errors <- models, hardware <- stages (data stats check train memory perf finetune runs diagnose)
       <- sweep, doctor <- render <- cli, labs, ui

``models`` (the model description read from config.json) and ``hardware`` (the GPU registry) sit below every
stage that needs them, so memory and perf share them without importing each other.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import expkit

SRC = Path(expkit.__file__).parent
STAGES = {"data", "stats", "check", "train", "memory", "perf", "finetune", "runs", "diagnose"}
TOP = {"cli", "labs", "ui"}  # ui: the web view (`expkit ui`), beside the CLI
BASE = {"models", "hardware"}  # below the stages, above errors: what memory and perf both read
MANY_RUNS = "sweep"  # above the stages (it runs `runs` and judges with `stats`), below render
LOOP_CHECKS = "doctor"  # above the stages (it reads tracebacks with `diagnose`, the first loss with `train`)


def _layer(part: str) -> str:
    if part in STAGES:
        return "stage"
    if part in TOP:
        return "top"
    if part in BASE:
        return "base"
    if part == MANY_RUNS:
        return "sweep"
    if part == LOOP_CHECKS:
        return "doctor"
    return part  # errors, render, __init__, __main__


FORBIDDEN = {
    "errors": {"base", "stage", "sweep", "doctor", "render", "top"},
    "base": {"stage", "sweep", "doctor", "render", "top"},
    "stage": {"sweep", "doctor", "render", "top"},
    "sweep": {"doctor", "render", "top"},
    "doctor": {"sweep", "render", "top"},
    "render": {"top"},
}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes under ``if TYPE_CHECKING:``: annotations only, no import at run time."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _type_checking_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_every_module_imports_only_downwards():
    violations = []
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 10, "the package looks empty: wrong path?"
    for path in modules:
        rel = path.relative_to(SRC)
        own = _layer(rel.parts[0].removesuffix(".py"))
        for lineno, name in _imports(path):
            parts = name.split(".")
            if parts[0] != "expkit" or len(parts) < 2:
                continue
            target = _layer(parts[1])
            if target in FORBIDDEN.get(own, set()):
                violations.append(f"{rel}:{lineno} ({own}) imports {name} ({target})")
    assert not violations, "\n".join(violations)


def test_layer_check_catches_a_violation(tmp_path):
    # the checker itself must be able to fail: a stage module importing render is reported
    bad = tmp_path / "bad.py"
    bad.write_text("from expkit.render.report import write_report\n")
    assert _imports(bad) == [(1, "expkit.render.report")]
    assert "render" in FORBIDDEN[_layer("stats")]
    # a stage may not reach up into sweep, and sweep may not reach up into render
    assert "sweep" in FORBIDDEN[_layer("runs")] and "render" in FORBIDDEN[_layer("sweep")]
    # doctor sits beside sweep: no stage reaches up into it, and it does not reach into render
    assert "doctor" in FORBIDDEN[_layer("train")] and "render" in FORBIDDEN[_layer("doctor")]


def test_only_render_and_cli_print():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] in {"render", "cli", "__main__.py"}:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, "library code must return data, not print: " + ", ".join(offenders)


def test_labs_do_not_import_the_cli():
    # labs and cli both sit on top; a lab that needs a figure or a helper gets it from render or a stage
    offenders = []
    for path in sorted((SRC / "labs").rglob("*.py")):
        for lineno, name in _imports(path):
            if name.startswith("expkit.cli"):
                offenders.append(f"labs/{path.name}:{lineno} imports {name}")
    assert not offenders, "\n".join(offenders)


# --- circles: no two packages import each other, by any path, at any depth of a function --------------


def _package(rel: Path) -> str:
    """``memory`` for ``memory/ledger.py``, ``errors`` for the top-level ``errors.py``."""
    return rel.parts[0].removesuffix(".py")


def _every_import(path: Path, rel: Path, pkg: str) -> list[tuple[int, str]]:
    """Every module ``path`` imports: function-local, TYPE_CHECKING and relative imports included.

    A TYPE_CHECKING import is a dependency a reader has to hold too (shape.py counts it), so a circle
    through one counts as a circle.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from ..memory import x, inside pkg/perf/roofs.py -> pkg.memory
                base = [pkg, *rel.parts[:-1]][: len(rel.parts) - node.level + 1]
                found.append((node.lineno, ".".join([*base, *([node.module] if node.module else [])])))
            elif node.module:
                found.append((node.lineno, node.module))
    return found


def import_graph(src: Path) -> dict[str, dict[str, str]]:
    """package -> {package it imports: the first place it does so (``perf/roofs.py:12``)}."""
    pkg = src.name
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        own = _package(rel)
        if own in {"__init__", "__main__"}:
            continue
        for lineno, name in _every_import(path, rel, pkg):
            parts = name.split(".")
            if parts[0] != pkg or len(parts) < 2 or parts[1] in {own, "__init__"}:
                continue
            graph[own].setdefault(parts[1], f"{rel}:{lineno}")
    return graph


def find_circles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if v not in index:
            visit(v)
    return sorted(circles)


def _describe(circle: list[str], graph: dict[str, dict[str, str]]) -> str:
    edges = [f"{a} -> {b} ({graph[a][b]})" for a in circle for b in circle if b in graph.get(a, {})]
    return " <-> ".join(circle) + ": " + "; ".join(edges)


def test_no_packages_import_each_other():
    graph = import_graph(SRC)
    assert "render" in graph and "labs" in graph, "the graph looks empty: wrong path?"
    circles = find_circles(graph)
    assert not circles, "packages that import each other:\n" + "\n".join(_describe(c, graph) for c in circles)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_circle_check_sees_function_local_and_relative_imports(tmp_path):
    # the checker must be able to fail: a circle hidden inside functions, and one through a relative import
    src = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "perf/__init__.py": "",
            "perf/roofs.py": "def f():\n    from pkg.memory.ledger import g\n    return g\n",
            "memory/__init__.py": "",
            "memory/ledger.py": "def g():\n    if True:\n        import pkg.perf.roofs\n",
            "stats/__init__.py": "from ..data import x\n",
            "data/x.py": "class C:\n    def m(self):\n        from pkg.stats import y\n",
            "errors.py": "",
            "check/a.py": "import pkg.errors\n",  # one direction only: no circle
        },
    )
    graph = import_graph(src)
    assert graph["perf"]["memory"] == "perf/roofs.py:2" and graph["memory"]["perf"] == "memory/ledger.py:3"
    assert find_circles(graph) == [["data", "stats"], ["memory", "perf"]]


def test_circle_check_sees_a_longer_circle():
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:1"}, "c": {"a": "c.py:1"}, "d": {"a": "d.py:1"}}
    assert find_circles(graph) == [["a", "b", "c"]]
    assert find_circles({"a": {"b": "x"}, "b": {}}) == []
