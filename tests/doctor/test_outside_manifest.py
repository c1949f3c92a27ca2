"""The outside programs' manifest (issue 32): every program listed once with its public source, its bug line
where the program marks it, and the seeded dev/held-out split reproducible from the seed."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

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


# each later batch: (its field, at least that many bugs, clean programs, DDP programs)
LATER_BATCHES = [
    ("batch2", 12, 6, 4),
    ("batch3", 24, 12, 2),
    ("batch4", 30, 15, 5),
    ("batch5", 30, 15, 5),
    ("batch6", 30, 15, 5),
    ("batch7", 30, 15, 5),
    ("batch8", 30, 15, 5),
    ("batch9", 26, 17, 3),  # five programs from reports batch 8 had used were removed before the split
    ("batch10", 41, 15, 5),  # two writers (plain PyTorch; the libraries and DDP), merged before the split
    ("batch11", 33, 13, 5),  # two writers again; one program of a source both used was dropped before the split
    ("batch12", 42, 19, 2),  # four writers (three of bugs and clean programs, one of clean library programs)
    ("batch13", 42, 20, 5),  # three writers (plain PyTorch; the libraries and DDP; other domains)
    ("batch14", 36, 33, 5),  # three writers (sequence models; the libraries and DDP; the training machinery)
    ("batch15", 24, 42, 4),  # three writers (vision; language models, the HF libraries and DDP; RL, graphs, science)
    ("batch16", 18, 42, 3),  # three writers (speech, time series, tabular; the libraries and DDP; training recipes)
    ("batch17", 15, 45, 5),  # three writers, three clean programs to each bug (doing on purpose what looks wrong)
    ("batch18", 30, 30, 6),  # three writers, as many clean programs as bugs, bugs written as reported
    ("batch19", 30, 31, 4),  # three writers again (vision, audio, retrieval; the HF libraries; the machinery)
]


@pytest.mark.parametrize(("batch", "min_bugs", "min_clean", "min_ddp"), LATER_BATCHES)
def test_later_batch_is_listed_once_with_sources_and_marked_lines(batch, min_bugs, min_clean, min_ddp):
    entries = MANIFEST[batch]["programs"]
    listed = [e["program"] for e in entries]
    on_disk = sorted(f"{batch}/{p.parent.name}/{p.name}" for p in (OUTSIDE / batch).glob("*/*.py"))
    assert sorted(listed) == on_disk and len(set(listed)) == len(listed)
    for e in entries:
        text = (OUTSIDE / e["program"]).read_text()
        assert e["source"].startswith("https://") and e["source"] in text, e["program"]
        assert e["kind"] == ("bug" if "/bugs/" in e["program"] else "clean")
        marked = [i + 1 for i, line in enumerate(text.splitlines()) if "# BUG-LINE" in line]
        assert marked == ([e["bug_line"]] if e["kind"] == "bug" else []), e["program"]
    kinds = Counter(e["kind"] for e in entries)
    assert kinds["bug"] >= min_bugs and kinds["clean"] >= min_clean
    assert sum(e["framework"] == "ddp_gloo" for e in entries) >= min_ddp


@pytest.mark.parametrize("batch", [b for b, *_ in LATER_BATCHES])
def test_later_batch_split_is_its_own_seeded_split(batch):
    rng = random.Random(MANIFEST[batch]["seed"])
    for kind, folder in (("bug", "bugs"), ("clean", "clean")):
        names = sorted(p.stem for p in (OUTSIDE / batch / folder).glob("*.py"))
        rng.shuffle(names)
        dev = set(names[: round(len(names) * 2 / 3)])
        for e in MANIFEST[batch]["programs"]:
            if e["kind"] == kind:
                assert e["split"] == ("dev" if Path(e["program"]).stem in dev else "held_out"), e["program"]


@pytest.mark.parametrize("batch", [b for b, *_ in LATER_BATCHES if b != "batch2"])
def test_a_later_batch_uses_no_source_of_the_earlier_batches(batch):
    earlier = {e["source"] for e in MANIFEST["programs"]}
    for before, *_ in LATER_BATCHES[: [b for b, *_ in LATER_BATCHES].index(batch)]:
        earlier |= {e["source"] for e in MANIFEST[before]["programs"]}
    assert not earlier & {e["source"] for e in MANIFEST[batch]["programs"]}
