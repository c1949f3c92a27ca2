"""Tiny configs and a small local corpus so training tests take a second or two each."""

from __future__ import annotations

import pytest

from expkit.train import CharLMConfig, TrainConfig, load_corpus

TINY_MODEL = CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32)


def tiny_train(**kw) -> TrainConfig:
    base = dict(batch_size=4, seq_len=32, warmup_steps=2, max_steps=6, eval_windows=8, log_interval=1,
                eval_interval=1000)
    base.update(kw)
    return TrainConfig(**base)


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
