"""The outside programs' manifest (issue 32): every program listed once with its public source, its bug line
where the program marks it, and the seeded dev/held-out split reproducible from the seed."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

OUTSIDE = Path(__file__).parent / "outside"
MANIFEST = json.loads((OUTSIDE / "manifest.json").read_text())


def test_every_program_is_listed_once_with_a_public_source():
    listed = [e["program"] for e in MANIFEST["programs"]]
    on_disk = sorted(f"{p.parent.name}/{p.name}" for p in OUTSIDE.glob("*/*.py"))
    assert sorted(listed) == on_disk and len(set(listed)) == len(listed)
    for e in MANIFEST["programs"]:
        assert e["source"].startswith("https://"), e["program"]
        assert e["source"] in (OUTSIDE / e["program"]).read_text(), e["program"]  # cited in the program too
        assert e["kind"] == ("bug" if e["program"].startswith("bugs/") else "clean")
    kinds = Counter(e["kind"] for e in MANIFEST["programs"])
    assert kinds["bug"] >= 60 and kinds["clean"] >= 30


def test_bug_line_is_the_marked_line():
    for e in MANIFEST["programs"]:
        lines = (OUTSIDE / e["program"]).read_text().splitlines()
        marked = [i + 1 for i, line in enumerate(lines) if "# BUG-LINE" in line]
        assert marked == ([e["bug_line"]] if e["kind"] == "bug" else []), e["program"]


def test_split_is_the_seeded_two_thirds_split():
    rng = random.Random(MANIFEST["seed"])
    for kind, folder in (("bug", "bugs"), ("clean", "clean")):
        names = sorted(p.stem for p in (OUTSIDE / folder).glob("*.py"))
        rng.shuffle(names)
        dev = set(names[: round(len(names) * 2 / 3)])
        for e in MANIFEST["programs"]:
            if e["kind"] == kind:
                assert e["split"] == ("dev" if Path(e["program"]).stem in dev else "held_out"), e["program"]


BATCH2 = MANIFEST["batch2"]


def test_second_batch_is_listed_once_with_sources_and_marked_lines():
    listed = [e["program"] for e in BATCH2["programs"]]
    on_disk = sorted(f"batch2/{p.parent.name}/{p.name}" for p in (OUTSIDE / "batch2").glob("*/*.py"))
    assert sorted(listed) == on_disk and len(set(listed)) == len(listed)
    for e in BATCH2["programs"]:
        text = (OUTSIDE / e["program"]).read_text()
        assert e["source"].startswith("https://") and e["source"] in text, e["program"]
        assert e["kind"] == ("bug" if "/bugs/" in e["program"] else "clean")
        marked = [i + 1 for i, line in enumerate(text.splitlines()) if "# BUG-LINE" in line]
        assert marked == ([e["bug_line"]] if e["kind"] == "bug" else []), e["program"]
    kinds = Counter(e["kind"] for e in BATCH2["programs"])
    assert kinds["bug"] >= 12 and kinds["clean"] >= 6
    assert sum(e["framework"] == "ddp_gloo" for e in BATCH2["programs"]) >= 4


def test_second_batch_split_is_its_own_seeded_split():
    rng = random.Random(BATCH2["seed"])
    for kind, folder in (("bug", "bugs"), ("clean", "clean")):
        names = sorted(p.stem for p in (OUTSIDE / "batch2" / folder).glob("*.py"))
        rng.shuffle(names)
        dev = set(names[: round(len(names) * 2 / 3)])
        for e in BATCH2["programs"]:
            if e["kind"] == kind:
                assert e["split"] == ("dev" if Path(e["program"]).stem in dev else "held_out"), e["program"]
