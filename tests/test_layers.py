"""The import direction of ARCHITECTURE.md, checked by parsing every module's imports.

errors <- models, hardware <- stages (data stats check train memory perf finetune runs diagnose)
       <- sweep <- render <- cli, labs

``models`` (the model description read from config.json) and ``hardware`` (the GPU registry) sit below every
stage that needs them, so memory and perf share them without importing each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import expkit

SRC = Path(expkit.__file__).parent
STAGES = {"data", "stats", "check", "train", "memory", "perf", "finetune", "runs", "diagnose"}
TOP = {"cli", "labs"}
BASE = {"models", "hardware"}  # below the stages, above errors: what memory and perf both read
MANY_RUNS = "sweep"  # above the stages (it runs `runs` and judges with `stats`), below render


def _layer(part: str) -> str:
    if part in STAGES:
        return "stage"
    if part in TOP:
        return "top"
    if part in BASE:
        return "base"
    if part == MANY_RUNS:
        return "sweep"
    return part  # errors, render, __init__, __main__


FORBIDDEN = {
    "errors": {"base", "stage", "sweep", "render", "top"},
    "base": {"stage", "sweep", "render", "top"},
    "stage": {"sweep", "render", "top"},
    "sweep": {"render", "top"},
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
