"""Tiny configs and a small local corpus so training tests take a second or two each."""

from __future__ import annotations

import pytest

from expkit.train import load_corpus


@pytest.fixture(scope="session")
def small_corpus_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    f = d / "text.txt"
    words = ["def", "return", "self", "import", "class", "(x)", "if", "else:", "for", "in", "range"]
    f.write_text("\n".join(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(8)) for i in range(1500)))
    return f


@pytest.fixture(scope="session")
def small_corpus(small_corpus_path):
    return load_corpus(small_corpus_path)
