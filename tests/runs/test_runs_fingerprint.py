"""Data fingerprints: sampled blocks for large files, full hash on request, Hub names with revision."""

from __future__ import annotations

from pathlib import Path

from expkit.runs.fingerprint import fingerprint_input


def test_small_file_is_hashed_whole_and_changes_are_seen(tmp_path: Path) -> None:
    f = tmp_path / "a.jsonl"
    f.write_text('{"x": 1}\n')
    a = fingerprint_input(f)
    f.write_text('{"x": 2}\n')  # same size, other content
    b = fingerprint_input(f)
    assert a.hash_scheme == "full" and a.size_bytes == b.size_bytes and a.hash != b.hash


def test_large_file_sampled_unless_full_requested(tmp_path: Path) -> None:
    f = tmp_path / "big.bin"
    f.write_bytes(bytes(8 * 1024 * 1024))
    sampled = fingerprint_input(f)
    full = fingerprint_input(f, full_hash=True)
    assert sampled.hash_scheme == "sampled" and full.hash_scheme == "full" and sampled.hash != full.hash
    with open(f, "r+b") as fh:  # a change inside the first sampled block
        fh.write(b"\1")
    assert fingerprint_input(f).hash != sampled.hash


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
