"""The generated parts of README.md and docs/: command and lab tables, each page's option tables, the claims.

Everything comes from the code: the typer app (``--help``: synopsis, options, defaults, help text) and the lab
registry (claims, seed figures, the library packages each lab calls). A block sits between
``<!-- BEGIN GENERATED: name (...) -->`` and ``<!-- END GENERATED: name -->``; its name says what it holds:
``commands`` and ``labs`` (README.md), ``claims`` (docs/claims.md) and ``options GROUP [COMMAND]`` (the
options of every command under ``expkit GROUP [COMMAND]``, on that stage's page).

Regenerate after changing a command, a help text or a lab::

    .venv/bin/python -m expkit.cli.docs            # rewrites the blocks in README.md and docs/*.md
    .venv/bin/python -m expkit.cli.docs --check    # exit 1 and name the file and block when one is stale

``tests/test_docs.py`` runs the check, so a table that drifts from the code fails the build.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "REGEN_COMMAND",
    "STAGE_COMMANDS",
    "GeneratedBlock",
    "blocks_in",
    "claims_table",
    "command_table",
    "iter_commands",
    "lab_table",
    "main",
    "option_table",
    "regenerate",
    "stale_blocks",
]

REGEN_COMMAND = ".venv/bin/python -m expkit.cli.docs"


@dataclass(frozen=True)
class GeneratedBlock:
    """A block of README between ``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name -->``."""

    name: str
    text: str

    @property
    def begin(self) -> str:
        return f"<!-- BEGIN GENERATED: {self.name} ({REGEN_COMMAND}; do not edit by hand) -->"

    @property
    def end(self) -> str:
        return f"<!-- END GENERATED: {self.name} -->"


def iter_commands() -> Iterator[tuple[tuple[str, ...], Any]]:
    """``(("stats", "ci"), click_command)`` for every command and group of ``expkit``, in name order."""
    import typer.main

    from expkit.cli.app import app

    def walk(group: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        for name, cmd in sorted(getattr(group, "commands", {}).items()):
            if not cmd.hidden:
                yield (*path, name), cmd
                yield from walk(cmd, (*path, name))

    yield from walk(typer.main.get_command(app), ())


def _param_synopsis(param: Any) -> str:
    """``--seq SEQ`` / ``[--quick]`` / ``MODEL`` / ``[IDS]...``: one parameter as a usage line shows it."""
    if param.param_type_name == "argument":
        text = param.metavar or param.name.upper()
        if param.nargs == -1:
            text += "..."
        return text if param.required else f"[{text}]"
    name = max(param.opts, key=len)  # the long form
    if param.is_flag:
        text = name if not param.secondary_opts else f"{name}/{param.secondary_opts[0]}"
    else:
        text = f"{name} {param.metavar or param.name.upper()}"
    return text if param.required else f"[{text}]"


def _first_paragraph(help_text: str | None) -> str:
    """The help's first paragraph on one line (the summary ``--help`` shows at the top)."""
    para = (help_text or "").strip().split("\n\n")[0]
    return " ".join(para.split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def command_table() -> str:
    """A Markdown table: command, its arguments and options (``--help`` left out), what it does."""
    lines = ["| command | arguments and options | what it does |", "|---|---|---|"]
    for path, cmd in iter_commands():
        params = [p for p in cmd.params if p.name != "help"]
        is_group = bool(getattr(cmd, "commands", None))
        if is_group and not params:  # a plain group: its summary, its commands follow
            synopsis = "COMMAND ..."
        else:
            synopsis = " ".join(_param_synopsis(p) for p in params)
            if is_group:
                synopsis = f"{synopsis} (or a COMMAND below)".strip()
        lines.append(f"| `expkit {' '.join(path)}` | `{_cell(synopsis)}` | {_cell(_first_paragraph(cmd.help))} |")
    return "\n".join(lines)


def lab_table() -> str:
    """A Markdown table of ``expkit labs list``: lab, claims, title, the seed's figures."""
    from expkit.labs.registry import all_labs

    lines = ["| lab | claims | title | seed figures |", "|---|---|---|---|"]
    for lab in all_labs():
        seed = "; ".join(dict.fromkeys(s.text for s in lab.seed_figures)) or "(behaviour)"
        lines.append(f"| {lab.id} | {', '.join(lab.claims)} | {_cell(lab.title)} | {_cell(seed)} |")
    return "\n".join(lines)


def _default_cell(param: Any) -> str:
    """The default as ``--help`` would show it: ``required``, a value, a flag's state, the environment variable."""
    if param.required:
        text = "required"
    elif getattr(param, "is_flag", False) and param.secondary_opts:
        text = max(param.opts, key=len) if param.default else param.secondary_opts[0]
    elif getattr(param, "is_flag", False):
        text = "on" if param.default else "off"
    elif param.default is None or param.default == [] or param.default == ():
        text = ""
    elif isinstance(param.default, (list, tuple)):
        text = "`" + ",".join(str(v) for v in param.default) + "`"
    else:
        text = f"`{param.default}`"
    if param.envvar:
        text = f"{text} (env `{param.envvar}`)".strip()
    return text


def option_table(group: Sequence[str]) -> str:
    """Every command under ``expkit GROUP...`` with its synopsis, then one row per argument and option:
    its default and its help text, as ``--help`` prints them (``--help`` itself left out)."""
    group = tuple(group)
    sections = []
    for path, cmd in iter_commands():
        params = [p for p in cmd.params if p.name != "help"]
        if path[: len(group)] != group or not params:
            continue
        synopsis = " ".join(_param_synopsis(p) for p in params)
        rows = [
            f"`expkit {' '.join(path)} {synopsis}`",
            "",
            "| argument / option | default | meaning |",
            "|---|---|---|",
        ]
        for param in params:
            name = _param_synopsis(param).strip("[]")
            help_text = " ".join((getattr(param, "help", None) or "").split())
            rows.append(f"| `{_cell(name)}` | {_cell(_default_cell(param))} | {_cell(help_text)} |")
        sections.append("\n".join(rows))
    if not sections:
        raise ValueError(f"no command with options under 'expkit {' '.join(group)}'")
    return "\n\n".join(sections)


# The command a user runs for each library stage a lab calls (one CLI group per stage, as the README's
# stage headings name them); tests/test_docs.py checks each names a command that exists.
STAGE_COMMANDS: dict[str, tuple[str, ...]] = {
    "data": ("expkit data",),
    "stats": ("expkit stats", "expkit plot"),
    "check": ("expkit check",),
    "train": ("expkit train",),
    "memory": ("expkit mem",),
    "perf": ("expkit roofline", "expkit profile"),
    "finetune": ("expkit sft",),
    "runs": ("expkit runs",),
    "diagnose": ("expkit why",),
    "sweep": ("expkit sweep", "expkit compare"),
}


def lab_stages(module: str) -> list[str]:
    """The library stages (``STAGE_COMMANDS`` keys) that a lab module imports, function-local imports included,
    in ``STAGE_COMMANDS`` order: what the lab measures the claim with."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ValueError(f"lab module {module} not found")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    used: set[str] = set()
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        used.update(n.split(".")[1] for n in names if n.startswith("expkit.") and n.count(".") >= 1)
    return [stage for stage in STAGE_COMMANDS if stage in used]


def claims_table() -> str:
    """One row per claim a lab covers: the claim as the seed states it, its figures, the lab, and the tools
    (CLI commands and library packages) the lab measures it with."""
    from expkit.labs.registry import all_labs, claim_text

    lines = ["| claim | the claim | seed figures | lab | tools |", "|---|---|---|---|---|"]
    rows = [(claim, entry) for entry in all_labs() for claim in entry.claims]
    for claim, entry in sorted(rows, key=lambda r: ([int(x) for x in re.findall(r"\d+", r[0])], r[1].id)):
        seed = "; ".join(dict.fromkeys(s.text for s in entry.seed_figures)) or "(behaviour)"
        stages = lab_stages(entry.module)
        tools = ", ".join([f"`{c}`" for s in stages for c in STAGE_COMMANDS[s]] + [f"`expkit.{s}`" for s in stages])
        tools = tools or "(none: the lab shows the behaviour directly)"
        lab_cell = f"{entry.id}: {entry.title}"
        lines.append(f"| {claim} | {_cell(claim_text(claim))} | {_cell(seed)} | {_cell(lab_cell)} | {tools} |")
    return "\n".join(lines)


def generated_blocks() -> list[GeneratedBlock]:
    """The blocks README.md must have."""
    return [GeneratedBlock("commands", command_table()), GeneratedBlock("labs", lab_table())]


_BLOCK_NAME = re.compile(r"^<!-- BEGIN GENERATED: ([\w. -]+?)(?: \(| -->)", re.M)  # markers on lines of their own


def blocks_in(text: str) -> list[GeneratedBlock]:
    """The current content of every generated block whose markers ``text`` has, in order.

    Raises:
        ValueError: a block name that no generator knows (naming it).
    """
    blocks = []
    for name in dict.fromkeys(_BLOCK_NAME.findall(text)):
        if name == "commands":
            blocks.append(GeneratedBlock(name, command_table()))
        elif name == "labs":
            blocks.append(GeneratedBlock(name, lab_table()))
        elif name == "claims":
            blocks.append(GeneratedBlock(name, claims_table()))
        elif name.startswith("options "):
            blocks.append(GeneratedBlock(name, option_table(name.split()[1:])))
        else:
            raise ValueError(f"unknown generated block {name!r}: commands, labs, claims or 'options GROUP'")
    return blocks


def _pattern(name: str) -> re.Pattern[str]:
    name = re.escape(name)
    return re.compile(rf"<!-- BEGIN GENERATED: {name}(?= \(| -->).*?-->\n(.*?)<!-- END GENERATED: {name} -->", re.S)


def regenerate(text: str, blocks: list[GeneratedBlock] | None = None) -> str:
    """``text`` with every generated block replaced by its current content.

    Raises:
        ValueError: a block's markers are missing from ``text`` (naming the block).
    """
    for block in generated_blocks() if blocks is None else blocks:
        found = _pattern(block.name).search(text)
        if found is None:
            raise ValueError(
                f"no markers for the generated block {block.name!r}: "
                f"add '{block.begin}' and '{block.end}' on lines of their own"
            )
        text = f"{text[: found.start()]}{block.begin}\n{block.text}\n{block.end}{text[found.end() :]}"
    return text


def stale_blocks(text: str, blocks: list[GeneratedBlock] | None = None) -> list[str]:
    """Names of the generated blocks whose content in ``text`` differs from the code's (empty: up to date)."""
    stale = []
    for block in generated_blocks() if blocks is None else blocks:
        found = _pattern(block.name).search(text)
        if found is None or found.group(1).strip() != block.text.strip():
            stale.append(block.name)
    return stale


def blocks_for(path: Path, text: str) -> list[GeneratedBlock]:
    """The blocks a file must hold: README.md's ``commands`` and ``labs``, then whatever other markers it has."""
    required = generated_blocks() if path.name == "README.md" else []
    return required + [b for b in blocks_in(text) if b.name not in {r.name for r in required}]


def doc_files(root: Path) -> list[Path]:
    """README.md and every page of docs/ under ``root`` (the repository)."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    """``python -m expkit.cli.docs [--check] [FILE...]``: README.md and docs/*.md by default; the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [Path(a) for a in args if a != "--check"] or doc_files(Path("."))
    missing = [p for p in paths if not p.is_file()]
    if missing:
        names = ", ".join(map(str, missing))
        print(f"error: {names} not found (run from the repository root or pass the files' paths)", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            blocks = blocks_for(path, text)
            new = text if check else regenerate(text, blocks)
        except ValueError as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            return 2
        if check:
            stale = stale_blocks(text, blocks)
            if stale:
                print(
                    f"{path}: generated blocks out of date: {', '.join(stale)}; regenerate with: {REGEN_COMMAND}",
                    file=sys.stderr,
                )
                status = 1
        elif new != text:
            path.write_text(new, encoding="utf-8")
            print(f"{path}: regenerated {', '.join(b.name for b in blocks)}")
    if check and status == 0:
        print(f"generated blocks up to date in {len(paths)} file(s)")
    return status


if __name__ == "__main__":
    sys.exit(main())
