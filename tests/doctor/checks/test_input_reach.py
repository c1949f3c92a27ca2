"""input_ignored: the first training forward replayed with one sample's input changed, whole and after its first
position; a sample's output that stays the same is a model that does not read its input, or reads only position 0.
Each bug beside correct twins that read everything (the last LSTM state, a causal model's last token, a bag of
words whose order does not matter, padding left alone)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

V, T = 50, 12


def _line(marker: str, obj) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, text in enumerate(lines) if marker in text)


class RNNClassifier(nn.Module):
    def __init__(self, read: str):
        super().__init__()
        self.read = read
        self.embed = nn.Embedding(V, 16, padding_idx=0)
        self.rnn = nn.LSTM(16, 32, batch_first=True)
        self.head = nn.Linear(32, 3)

    def forward(self, ids):
        out, (h, _) = self.rnn(self.embed(ids))
        if self.read == "first":
            return self.head(out[:, 0])  # reads the first state
        if self.read == "h_n":
            return self.head(h[-1])
        return self.head(out[:, -1])


class CausalPooled(nn.Module):
    def __init__(self, pool: str):
        super().__init__()
        self.pool = pool
        self.embed = nn.Embedding(V, 16)
        self.pos = nn.Parameter(torch.zeros(T, 16))
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1)
        self.head = nn.Linear(16, 3)

    def forward(self, ids):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1])
        h = self.encoder(self.embed(ids) + self.pos[: ids.shape[1]], mask=mask, is_causal=True)
        return self.head(h[:, 0] if self.pool == "first" else h[:, -1])  # the pooling


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(V, 16, mode="mean")
        self.head = nn.Linear(16, 3)

    def forward(self, ids):
        return self.head(self.embed(ids))


class Cached(nn.Module):
    """A forward that keeps an old tensor and drops its argument."""

    def __init__(self, drop: bool):
        super().__init__()
        self.drop = drop
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        self.register_buffer("bias_input", torch.randn(8, 8))

    def forward(self, x):
        h = x * 0 if self.drop else x  # the input dropped
        return self.net(h + self.bias_input[: x.shape[0]])


def _train(model, make_x, classes=3):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(make_x()), torch.randint(0, classes, (8,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "input_ignored"]


def _ids(pad_tail: int = 0):
    def make():
        ids = torch.randint(1, V, (8, T))
        if pad_tail:
            ids[:, -pad_tail:] = 0
        return ids

    return make


def test_an_rnn_read_at_its_first_state_is_named_at_the_read():
    (f,) = _train(RNNClassifier("first"), _ids())
    assert f.line == _line("# reads the first state", RNNClassifier)
    assert f.evidence["changed"] == "after position 0"
    assert _train(RNNClassifier("h_n"), _ids()) == []
    assert _train(RNNClassifier("last"), _ids()) == []


def test_a_causal_model_pooled_at_its_first_token_is_named_at_the_pooling():
    (f,) = _train(CausalPooled("first"), _ids())
    assert f.line == _line("# the pooling", CausalPooled)
    assert _train(CausalPooled("last"), _ids()) == []


def test_a_forward_that_drops_its_input_is_named_where_it_drops_it():
    (f,) = _train(Cached(drop=True), lambda: torch.randn(8, 8))
    assert f.line == _line("# the input dropped", Cached)
    assert f.evidence["changed"] == "whole sample"
    assert _train(Cached(drop=False), lambda: torch.randn(8, 8)) == []


def test_order_blind_models_and_padding_are_not_flagged():
    assert _train(BagOfWords(), _ids()) == []  # the row's ids change to other ids, not to a permutation
    # the LSTM reads its last real step's state through h_n; positions after the padding are not changed
    assert _train(RNNClassifier("h_n"), _ids(pad_tail=4)) == []


def test_a_hugging_face_model_given_input_ids_as_a_keyword_is_replayed():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(vocab_size=V, n_positions=T, n_embd=16, n_layer=1, n_head=2, num_labels=3)
    cfg.pad_token_id = 0

    class FirstTokenHead(nn.Module):
        def __init__(self, first: bool):
            super().__init__()
            self.first = first
            self.body = transformers.GPT2Model(cfg)
            self.head = nn.Linear(16, 3)

        def forward(self, input_ids, attention_mask=None):
            h = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.head(h[:, 0] if self.first else h[:, -1])  # the summary token

    for first, expected in ((True, 1), (False, 0)):
        torch.manual_seed(0)
        model = FirstTokenHead(first)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        with watch(model, opt, steps=2) as w:
            for _ in range(3):
                ids = torch.randint(1, V, (8, T))
                logits = model(input_ids=ids, attention_mask=torch.ones_like(ids))
                loss = F.cross_entropy(logits, torch.randint(0, 3, (8,)))
                opt.zero_grad()
                loss.backward()
                opt.step()
        found = [f for f in w.findings if f.check == "input_ignored"]
        assert len(found) == expected, found
        if found:
            assert found[0].line == _line("# the summary token", FirstTokenHead)


def test_a_zero_initialised_model_is_judged_after_its_first_update():
    # a logistic regression with zero weights gives 0 for every input before its first step: correct, not a bug
    model = nn.Linear(8, 3)
    nn.init.zeros_(model.weight)
    nn.init.zeros_(model.bias)
    assert _train(model, lambda: torch.randn(8, 8)) == []
