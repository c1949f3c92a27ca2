"""no_position_information: a sequence model whose per-position outputs come back exactly shuffled when the
positions are shuffled (a positional encoding indexed with one position, or none) is found; a proper learned or
sinusoidal encoding, a causal LM, an RNN and a per-token model are spared."""

from __future__ import annotations

import inspect
import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

V, D, T = 30, 16, 12


def _line(marker: str, obj) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _run(model, ids: bool):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            if ids:
                x = torch.randint(0, V, (4, T))
                loss = F.cross_entropy(model(x).reshape(-1, V), x.roll(1, dims=1).reshape(-1))
            else:
                x = torch.randn(4, T, 3)
                loss = F.mse_loss(model(x), x.cumsum(1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "no_position_information"]


class Sinusoid(nn.Module):
    def __init__(self, bug: bool):
        super().__init__()
        self.bug = bug
        pos = torch.arange(50).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, D, 2).float() * (-math.log(1e4) / D))
        pe = torch.zeros(50, D)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, h):
        if self.bug:
            return h + self.pe[h.shape[1]]  # the single position
        return h + self.pe[: h.shape[1]]


class SeqRegressor(nn.Module):
    def __init__(self, bug: bool):
        super().__init__()
        self.inp = nn.Linear(3, D)
        self.pos = Sinusoid(bug)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 2, 32, 0.0, batch_first=True), 1)
        self.out = nn.Linear(D, 3)

    def forward(self, x):
        return self.out(self.enc(self.pos(self.inp(x))))


class TokenEncoder(nn.Module):
    """Token ids through a transformer encoder: with a learned position embedding, without one, or causal."""

    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Embedding(T, D)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 2, 32, 0.0, batch_first=True), 1)
        self.out = nn.Linear(D, V)

    def forward(self, tok):
        h = self.emb(tok)
        mask = None
        if self.how in ("learned", "causal"):
            h = h + self.pos(torch.arange(tok.shape[1]))
        if self.how in ("causal", "causal_nopos"):
            mask = nn.Transformer.generate_square_subsequent_mask(tok.shape[1])
        return self.out(self.enc(h, mask=mask, is_causal=mask is not None))


class RNNTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.rnn = nn.GRU(D, D, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * D, V)

    def forward(self, tok):
        return self.out(self.rnn(self.emb(tok))[0])


class PerToken(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Embedding(V, D), nn.ReLU(), nn.Linear(D, V))

    def forward(self, tok):
        return self.net(tok)


def test_a_positional_encoding_indexed_with_one_position_is_named_where_it_is_read():
    (f,) = _run(SeqRegressor(bug=True), ids=False)
    assert f.line == _line("# the single position", Sinusoid)
    assert _run(SeqRegressor(bug=False), ids=False) == []


def test_token_ids_without_a_position_embedding_are_found():
    (f,) = _run(TokenEncoder("none"), ids=True)
    assert f.evidence["positions"] == T


def test_learned_positions_causal_models_rnns_and_per_token_models_are_spared():
    assert _run(TokenEncoder("learned"), ids=True) == []
    assert _run(TokenEncoder("causal"), ids=True) == []
    assert _run(TokenEncoder("causal_nopos"), ids=True) == []  # a causal mask carries order by itself
    assert _run(RNNTagger(), ids=True) == []
    assert _run(PerToken(), ids=True) == []
