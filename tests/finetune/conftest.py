"""Fixtures for the finetune tests: the quick demo model (built once, cached on disk and per session)
and small chat data files."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(scope="session")
def demo_model_dir():
    """The quick demo model directory (~0.13M parameters; built in seconds on first use, then cached)."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    from expkit.finetune.demomodel import ensure_demo_model

    return ensure_demo_model(quick=True).path


@pytest.fixture
def chat_jsonl(tmp_path):
    """A function writing ``n`` synthetic conversations to a JSONL file and returning its path."""
    from expkit.finetune.chatdata import generate_chat_examples, write_chat_jsonl

    def make(n: int = 40, seed: int = 0, name: str = "train.jsonl"):
        return write_chat_jsonl(generate_chat_examples(n=n, seed=seed), tmp_path / name)

    return make
