"""The shape of src/expkit in five counts, each held at or below a ceiling (issue 20 item 4 and "Done when").

The definitions are those of the shared ``shape.py`` tool (which CI, on a clean clone, does not have), read
with ``ast``:

- ``long_bodies``: functions (methods and nested functions too) whose body, signature and docstring left
  out, is over 80 lines, outside ``labs/`` (a lab may read top to bottom as one experiment);
- ``many_params``: functions outside ``cli/`` with more than 8 loose parameters (positional-only, ordinary
  and keyword-only; ``self``/``cls``, ``*args`` and ``**kwargs`` not counted): a typed query object instead;
- ``json_out_branches``: ``if`` statements in ``cli/`` whose test mentions ``json_out`` (a command emits
  through ``expkit.cli.output.emit``);
- ``chdir_calls``: calls of ``os.chdir`` / ``chdir`` anywhere (pass ``cwd`` to the child instead);
- ``package_circles``: pairs of top-level packages that import each other, function-local imports included.

The target of every count is 0, and since issue 20 landed every count is 0: ``CEILING`` holds them there, so a
new long body, a new function with more than 8 loose parameters, an ``if json_out`` in cli/, an ``os.chdir`` or a
package circle fails this test (the failure message names the place).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import expkit

SRC = Path(expkit.__file__).parent
MAX_BODY_LINES = 80
MAX_LOOSE_PARAMS = 8

# Target: 0 on every line. Lower a ceiling when its count comes down; never raise one.
CEILING = {  # every count at its target since issue 20 landed: a new offence fails here
    "long_bodies": 0,
    "many_params": 0,
    "json_out_branches": 0,
    "chdir_calls": 0,
    "package_circles": 0,
}


@dataclass(frozen=True)
class Shape:
    """What the five counts count: one ``path:line name`` (or ``a<->b``) per finding."""

    long_bodies: list[str] = field(default_factory=list)
    many_params: list[str] = field(default_factory=list)
    json_out_branches: list[str] = field(default_factory=list)
    chdir_calls: list[str] = field(default_factory=list)
    package_circles: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in CEILING}


def _has_docstring(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = node.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's last line."""
    body = node.body[1:] if _has_docstring(node) and len(node.body) > 1 else node.body
    return (node.end_lineno or node.lineno) - body[0].lineno + 1


def _loose_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    return sum(1 for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls"))


def _imported_package(node: ast.ImportFrom, rel: Path, pkg: str) -> str | None:
    """The top-level package an ``from ... import`` names (absolute or relative), None outside ``pkg``."""
    if node.module is None:
        return None
    if node.level == 0:
        parts = node.module.split(".")
        return parts[1] if parts[0] == pkg and len(parts) > 1 else None
    base = list(rel.parts[:-1])
    up = node.level - 1
    if up > len(base):
        return None
    base = base[: len(base) - up] if up else base
    parts = base + node.module.split(".")
    return parts[0] if parts else None


def measure_shape(src: Path) -> Shape:
    """The five findings over every module under ``src`` (a package directory such as ``src/expkit``)."""
    pkg = src.name
    shape = Shape()
    imports: dict[str, set[str]] = defaultdict(set)
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        package = rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if package != "labs" and _body_lines(node) > MAX_BODY_LINES:
                    shape.long_bodies.append(f"{where} {node.name} ({_body_lines(node)} lines)")
                if package != "cli" and _loose_params(node) > MAX_LOOSE_PARAMS:
                    shape.many_params.append(f"{where} {node.name} ({_loose_params(node)} parameters)")
            elif isinstance(node, ast.If) and package == "cli" and "json_out" in ast.unparse(node.test):
                shape.json_out_branches.append(where)
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("os.chdir", "chdir"):
                shape.chdir_calls.append(where)
            elif isinstance(node, ast.ImportFrom):
                target = _imported_package(node, rel, pkg)
                if target and target != package:
                    imports[package].add(target)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == pkg and len(parts) > 1 and parts[1] != package:
                        imports[package].add(parts[1])
    pairs = {tuple(sorted((a, b))) for a in imports for b in imports[a] if a in imports.get(b, set())}
    shape.package_circles.extend(f"{a}<->{b}" for a, b in sorted(pairs))
    return shape


def test_no_shape_count_grows_past_its_ceiling() -> None:
    shape = measure_shape(SRC)
    over = {
        name: f"{len(getattr(shape, name))} > ceiling {CEILING[name]}: {getattr(shape, name)}"
        for name in CEILING
        if len(getattr(shape, name)) > CEILING[name]
    }
    assert not over, f"the shape of src/expkit grew (target 0 for each): {over}"


def test_each_count_sees_its_offence(tmp_path: Path) -> None:
    # the counter can fail: a throw-away package with one offence of each kind (and none just under the bars)
    pkg = tmp_path / "pkg"
    for sub in ("cli", "labs", "stats", "render"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    long_body = "\n".join(f"    x{i} = {i}" for i in range(MAX_BODY_LINES + 1))
    just_fits = "\n".join(f"    x{i} = {i}" for i in range(MAX_BODY_LINES))
    (pkg / "stats" / "work.py").write_text(
        "import os\n"
        "from ..render import table\n"
        f'def long():\n    """Doc."""\n{long_body}\n'
        f'def fits():\n    """Doc."""\n{just_fits}\n'
        "def many(self, a, b, c, d, e, f, g, h, *args, i, **kwargs):\n    os.chdir('/')\n"
        "def eight(a, b, c, d, e, f, g, h):\n    pass\n"
    )
    (pkg / "render" / "table.py").write_text("def f():\n    from pkg.stats import work\n")
    (pkg / "labs" / "lab.py").write_text(
        f"def lab_long(a, b, c, d, e, f, g, h, i):\n{long_body}\n"  # a long lab is allowed; 9 params are not
    )
    (pkg / "cli" / "cmd.py").write_text(
        "def command(a, b, c, d, e, f, g, h, i, json_out=False):\n    if json_out:\n        pass\n"
    )
    shape = measure_shape(pkg)
    assert shape.counts() == {
        "long_bodies": 1,
        "many_params": 2,
        "json_out_branches": 1,
        "chdir_calls": 1,
        "package_circles": 1,
    }, shape
    assert shape.long_bodies[0].startswith("stats/work.py:3 long (81 lines)")
    assert [p.split()[1] for p in shape.many_params] == ["lab_long", "many"]
    assert shape.package_circles == ["render<->stats"]
