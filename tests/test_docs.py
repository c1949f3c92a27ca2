"""README and docs/: the generated parts match the code, no page repeats ``--help`` by hand, every link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from expkit.cli.docs import (
    REGEN_COMMAND,
    STAGE_COMMANDS,
    blocks_for,
    blocks_in,
    claims_table,
    iter_commands,
    lab_stages,
    main,
    option_table,
    regenerate,
    stale_blocks,
)
from expkit.labs.registry import CLAIMS, all_labs

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


def _outside_generated(text: str) -> str:
    return re.sub(r"^<!-- BEGIN GENERATED: .*?^<!-- END GENERATED: [^>]*-->", "", text, flags=re.S | re.M)


def test_every_docs_page_generated_part_matches_the_code() -> None:
    stale = {}
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        found = stale_blocks(text, blocks_for(page, text))
        if found:
            stale[page.name] = found
    assert not stale, f"generated parts of docs/ drifted from the code: {stale}; regenerate with: {REGEN_COMMAND}"


def test_every_command_with_options_has_them_generated_on_a_docs_page() -> None:
    generated = {b.name for page in DOCS.glob("*.md") for b in blocks_in(page.read_text(encoding="utf-8"))}
    groups = {path[0] for path, cmd in iter_commands() if [p for p in cmd.params if p.name != "help"]}
    missing = sorted(g for g in groups if f"options {g}" not in generated)
    assert not missing, f"commands whose options no docs page generates: {missing}"


def test_no_docs_page_repeats_a_commands_options_by_hand() -> None:
    # a hand-written table row names the command only; its options live in the generated block
    commands = {" ".join(path) for path, _ in iter_commands()}
    offenders = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for line in _outside_generated(page.read_text(encoding="utf-8")).splitlines():
            cell = re.match(r"\| `expkit ([^`]*)`", line)
            if cell and cell.group(1) not in commands:
                offenders.append(f"{page.name}: `expkit {cell.group(1)}`")
    assert not offenders, f"hand-written synopses (generate them from --help instead): {offenders}"


def test_the_runs_page_shows_every_runs_exec_option_including_full_hash() -> None:
    text = (DOCS / "runs.md").read_text(encoding="utf-8")
    exec_cmd = next(cmd for path, cmd in iter_commands() if path == ("runs", "exec"))
    for param in exec_cmd.params:
        if param.name != "help" and param.param_type_name == "option":
            assert f"| `{max(param.opts, key=len)}" in text, f"runs.md lacks {max(param.opts, key=len)}"
    assert "| `--full-hash` | off |" in text


def test_a_changed_help_text_makes_the_options_block_stale() -> None:
    text = regenerate(
        "<!-- BEGIN GENERATED: options runs -->\n<!-- END GENERATED: options runs -->\n",
        blocks_in("<!-- BEGIN GENERATED: options runs -->\n<!-- END GENERATED: options runs -->\n"),
    )
    assert "`expkit runs exec " in text and "| `--full-hash` |" in text
    assert stale_blocks(text, blocks_in(text)) == []
    dropped = "\n".join(line for line in text.splitlines() if not line.startswith("| `--full-hash`"))
    assert stale_blocks(dropped, blocks_in(dropped)) == ["options runs"]
    # a block for one command does not swallow its group's block, nor the reverse
    both = regenerate(
        "<!-- BEGIN GENERATED: options runs exec -->\n<!-- END GENERATED: options runs exec -->\n" + text,
        blocks_in("<!-- BEGIN GENERATED: options runs exec -->\n<!-- END GENERATED: options runs exec -->\n" + text),
    )
    assert stale_blocks(both, blocks_in(both)) == []
    assert option_table(["runs", "exec"]) in both


def test_an_unknown_block_or_group_is_named() -> None:
    with pytest.raises(ValueError, match="'optoins runs'"):
        blocks_in("<!-- BEGIN GENERATED: optoins runs -->\n<!-- END GENERATED: optoins runs -->")
    with pytest.raises(ValueError, match="expkit nosuch"):
        option_table(["nosuch"])


def test_claims_page_is_generated_from_the_registry_with_every_claim() -> None:
    text = (DOCS / "claims.md").read_text(encoding="utf-8")
    assert stale_blocks(text, blocks_in(text)) == [], f"docs/claims.md drifted; regenerate with: {REGEN_COMMAND}"
    covered = {claim for lab in all_labs() for claim in lab.claims}
    assert covered <= set(CLAIMS), f"labs cover claims without a text in CLAIMS: {sorted(covered - set(CLAIMS))}"
    for claim in CLAIMS:
        assert f"\n| {claim} | {CLAIMS[claim]} |" in claims_table() or claim not in covered
    uncovered = sorted(set(CLAIMS) - covered)
    assert not uncovered, f"claims no lab measures: {uncovered}"


def test_each_lab_names_the_tools_it_imports() -> None:
    commands = {"expkit " + " ".join(path) for path, _ in iter_commands()}
    for stage_commands in STAGE_COMMANDS.values():
        assert set(stage_commands) <= commands, f"STAGE_COMMANDS names a missing command: {stage_commands}"
    stages = {lab.id: lab_stages(lab.module) for lab in all_labs()}
    assert stages["C1.1"] == ["data"] and stages["C2.2"] == ["stats"]
    assert "runs" in stages["C6.4"]
    assert stages["C1.5"] == []  # Python's own protocols: the lab calls no expkit stage
