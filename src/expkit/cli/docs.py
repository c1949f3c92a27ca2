"""The README's command and lab tables, generated from the CLI itself (``--help``) and the lab registry.

Regenerate after adding or changing a command or a lab::

    .venv/bin/python -m expkit.cli.docs            # rewrites the blocks between the markers in README.md
    .venv/bin/python -m expkit.cli.docs --check    # exit 1 and name the block when README.md is stale

``tests/test_docs.py`` runs the check, so a table that drifts from the code fails the build.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "REGEN_COMMAND",
    "GeneratedBlock",
    "command_table",
    "iter_commands",
    "lab_table",
    "main",
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
        seed = "; ".join(s.text for s in lab.seed_figures) or "(behaviour)"
        lines.append(f"| {lab.id} | {', '.join(lab.claims)} | {_cell(lab.title)} | {_cell(seed)} |")
    return "\n".join(lines)


def generated_blocks() -> list[GeneratedBlock]:
    return [GeneratedBlock("commands", command_table()), GeneratedBlock("labs", lab_table())]


def _pattern(name: str) -> re.Pattern[str]:
    name = re.escape(name)
    return re.compile(rf"<!-- BEGIN GENERATED: {name}\b.*?-->\n(.*?)<!-- END GENERATED: {name} -->", re.S)


def regenerate(text: str, blocks: list[GeneratedBlock] | None = None) -> str:
    """``text`` with every generated block replaced by its current content.

    Raises:
        ValueError: a block's markers are missing from ``text`` (naming the block).
    """
    for block in generated_blocks() if blocks is None else blocks:
        found = _pattern(block.name).search(text)
        if found is None:
            raise ValueError(
                f"README has no markers for the generated block {block.name!r}: "
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


def main(argv: list[str] | None = None) -> int:
    """``python -m expkit.cli.docs [--check] [README]``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    readme = Path(paths[0] if paths else "README.md")
    if not readme.is_file():
        print(f"error: {readme} not found (run from the repository root or pass the README's path)", file=sys.stderr)
        return 2
    text = readme.read_text(encoding="utf-8")
    if check:
        stale = stale_blocks(text)
        if stale:
            print(
                f"{readme}: generated blocks out of date: {', '.join(stale)}; regenerate with: {REGEN_COMMAND}",
                file=sys.stderr,
            )
            return 1
        print(f"{readme}: generated blocks up to date")
        return 0
    try:
        new = regenerate(text)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if new != text:
        readme.write_text(new, encoding="utf-8")
        print(f"{readme}: regenerated {', '.join(b.name for b in generated_blocks())}")
    else:
        print(f"{readme}: already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
