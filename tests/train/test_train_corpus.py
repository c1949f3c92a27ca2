"""Corpus loading: default stdlib corpus, non-ASCII handling, split, empty corpus."""

from __future__ import annotations

import pytest

from expkit.errors import InputError
from expkit.train import encode_ascii, load_corpus


def test_non_ascii_is_dropped_and_counted(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("café naïve\n" * 20, encoding="utf-8")
    c = load_corpus(f)
    assert c.n_non_ascii == 40
    text = bytes(c.train.tolist() + c.val.tolist())
    assert text == b"caf nave\n" * 20


def test_non_ascii_can_be_replaced(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("é" * 50 + "a" * 50, encoding="utf-8")
    c = load_corpus(f, non_ascii="replace", val_fraction=0.5)
    assert c.n_non_ascii == 50
    assert bytes(c.train.tolist()) == b"?" * 50 and bytes(c.val.tolist()) == b"a" * 50


def test_encode_ascii_counts():
    assert encode_ascii("naïve café") == (b"nave caf", 2)


def test_empty_corpus_is_refused(tmp_path):
    f = tmp_path / "empty.txt"
    f.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="no ASCII text"):
        load_corpus(f)


def test_only_non_ascii_corpus_is_refused_with_the_count(tmp_path):
    f = tmp_path / "zh.txt"
    f.write_text("中文文本", encoding="utf-8")
    with pytest.raises(InputError, match="4 non-ASCII characters dropped"):
        load_corpus(f)


def test_missing_path_is_refused(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_corpus(tmp_path / "nope")


def test_directory_split_is_by_file_and_deterministic(tmp_path):
    for i in range(40):
        (tmp_path / f"f{i:02d}.txt").write_text(f"file {i} " * 10)
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    a, b = load_corpus(tmp_path), load_corpus(tmp_path)
    assert a.fingerprint == b.fingerprint
    assert a.skipped_files and a.skipped_files[0].endswith("blob.bin")
    assert 0 < a.n_val_chars < a.n_train_chars
    assert len(a.files) == 40


def test_default_corpus_is_the_stdlib():
    c = load_corpus()
    assert c.source.startswith("python-stdlib-")
    assert len(c.files) > 100 and "os.py" in c.files
    assert int(c.train.max()) < 128
    assert c.n_val_chars > 100_000
