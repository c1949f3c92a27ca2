"""Data fingerprints: sampled blocks for large files, full hash on request, Hub names with revision."""

from __future__ import annotations

from pathlib import Path

from expkit.runs import fingerprint
from expkit.runs.fingerprint import fingerprint_input


def test_small_file_is_hashed_whole_and_changes_are_seen(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_text('{"x": 1}\n')
    a = fingerprint_input(f)
    f.write_text('{"x": 2}\n')  # same size, other content
    b = fingerprint_input(f)
    assert a.hash_scheme == "full" and a.size_bytes == b.size_bytes and a.hash != b.hash


def test_large_file_sampled_with_mtime_unless_full_requested(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(fingerprint, "FULL_HASH_MAX_BYTES", 1024 * 1024)  # 8 MiB is "large" here
    f = tmp_path / "big.bin"
    f.write_bytes(bytes(8 * 1024 * 1024))
    sampled = fingerprint_input(f)
    full = fingerprint_input(f, full_hash=True)
    assert sampled.hash_scheme == "sampled+mtime" and full.hash_scheme == "full" and sampled.hash != full.hash
    with open(f, "r+b") as fh:  # a change inside the first sampled block
        fh.write(b"\1")
    assert fingerprint_input(f).hash != sampled.hash
    # the recorded scheme is recomputed on request (runs repro): same file, same hash
    assert fingerprint_input(f, scheme="full").hash == fingerprint_input(f, full_hash=True).hash


def test_same_size_label_edit_is_detected_by_default(tmp_path: Path) -> None:
    """Issue 14: a sampled fingerprint missed a same-size label edit in a 25 MB JSONL. Below
    FULL_HASH_MAX_BYTES every byte is hashed, so the flip of one label is seen."""
    f = tmp_path / "train.jsonl"
    line = '{"text": "%s", "label": "pos"}\n'
    rows = [line % ("x" * 200) for _ in range(120_000)]  # ~25 MB
    f.write_text("".join(rows))
    before = fingerprint_input(f)
    legacy_before = fingerprint_input(f, scheme="sampled")
    rows[70_001] = rows[70_001].replace('"pos"', '"neg"')  # same size, between any sampled blocks
    f.write_text("".join(rows))
    after = fingerprint_input(f)
    assert before.size_bytes == after.size_bytes > 24_000_000
    assert before.hash_scheme == "full" and before.hash != after.hash
    # the old default (16 sampled blocks, no mtime) misses exactly this edit: the file is a real witness
    assert fingerprint_input(f, scheme="sampled").hash == legacy_before.hash


def test_directory_hf_and_missing(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_text("1")
    (tmp_path / "d" / "y.txt").write_text("2")
    d = fingerprint_input(tmp_path / "d")
    assert d.kind == "dir" and d.files == 2 and d.size_bytes == 2
    pinned = fingerprint_input("hf://org/data@v1.0")
    unpinned = fingerprint_input("hf://org/data")
    assert pinned.revision == "v1.0" and pinned.reason is None
    assert unpinned.revision is None and "not pinned" in unpinned.reason
    missing = fingerprint_input(tmp_path / "nope")
    assert missing.hash is None and missing.reason == "the path does not exist"
