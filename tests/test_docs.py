"""README and docs/: the generated tables match the code, and every link between the pages resolves."""

from __future__ import annotations

import re
from pathlib import Path

from expkit.cli.docs import REGEN_COMMAND, iter_commands, main, regenerate, stale_blocks
from expkit.labs.registry import all_labs

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_readme_generated_tables_match_help_and_labs_list() -> None:
    stale = stale_blocks(README.read_text(encoding="utf-8"))
    assert not stale, f"README.md's generated tables {stale} drifted from the code; regenerate with: {REGEN_COMMAND}"


def test_every_command_and_lab_is_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [" ".join(p) for p, _ in iter_commands() if f"| `expkit {' '.join(p)}` |" not in text]
    missing += [lab.id for lab in all_labs() if f"\n| {lab.id} |" not in text]
    assert not missing, f"not in README.md: {missing}; regenerate with: {REGEN_COMMAND}"


def test_a_changed_command_row_is_detected_and_regenerated() -> None:
    text = regenerate(README.read_text(encoding="utf-8"))
    row = next(line for line in text.splitlines() if line.startswith("| `expkit stats ci` |"))
    drifted = text.replace(row, row.replace("Confidence interval", "Credible interval"))
    assert stale_blocks(drifted) == ["commands"]
    assert stale_blocks(regenerate(drifted)) == []
    no_markers = re.sub(r"<!-- (BEGIN|END) GENERATED: labs.*?-->", "", text)
    assert "labs" in stale_blocks(no_markers)


def test_main_checks_and_rewrites_a_readme(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    text = regenerate(README.read_text(encoding="utf-8"))  # current, whether or not README.md itself is
    readme.write_text(text.replace("| C2.2 |", "| C2.2-old |"), encoding="utf-8")
    assert main(["--check", str(readme)]) == 1
    assert main([str(readme)]) == 0
    assert readme.read_text(encoding="utf-8") == text
    assert main(["--check", str(readme)]) == 0
    assert main([str(tmp_path / "absent.md")]) == 2


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves() -> None:
    pages = sorted(DOCS.glob("*.md"))
    assert len(pages) >= 8, "one page per stage"
    readme = README.read_text(encoding="utf-8")
    unlinked = [p.name for p in pages if f"](docs/{p.name})" not in readme]
    assert not unlinked, f"docs pages without a link from README.md: {unlinked}"
    broken = []
    for page in [README, *pages]:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, f"links to missing files: {broken}"
