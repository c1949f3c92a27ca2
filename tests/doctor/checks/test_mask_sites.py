"""future_tokens_seen names the masking line: a masked_fill whose value does not mask (0 instead of -inf), else the
line that built the mask a layer was given (a tril for a triu), seen while the replay runs."""

from __future__ import annotations

import inspect
import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

V, T, D = 20, 8, 16


def _line(marker: str, obj) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, text in enumerate(lines) if marker in text)


class FillLM(nn.Module):
    def __init__(self, fill: float):
        super().__init__()
        self.fill = fill
        self.tok, self.qkv, self.head = nn.Embedding(V, D), nn.Linear(D, 3 * D), nn.Linear(D, V)

    def forward(self, idx):
        h = self.tok(idx)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        future = torch.triu(torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool), diagonal=1)
        scores = (q @ k.transpose(1, 2) / math.sqrt(D)).masked_fill(future, self.fill)  # the fill
        return self.head(h + F.softmax(scores, dim=-1) @ v)


class LayerLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.head = nn.Embedding(V, D), nn.Linear(D, V)
        self.block = nn.TransformerEncoderLayer(D, 2, 32, dropout=0.0, batch_first=True)

    def forward(self, idx):
        n = idx.shape[1]
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1)  # the mask, built the wrong way round
        return self.head(self.block(self.tok(idx), src_mask=mask))


def _findings(model):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    seqs = torch.randint(0, V, (3, 8, T + 1))
    with watch(model, opt, steps=2) as w:
        for s in seqs:
            loss = F.cross_entropy(model(s[:, :-1]).reshape(-1, V), s[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "future_tokens_seen"]


def test_a_fill_of_zero_is_named_at_the_masked_fill():
    (f,) = _findings(FillLM(0.0))
    assert f.line == _line("# the fill", FillLM)
    assert _findings(FillLM(float("-inf"))) == []


def test_a_mask_built_the_wrong_way_is_named_where_it_was_built():
    (f,) = _findings(LayerLM())
    assert f.line == _line("# the mask, built", LayerLM)


class _SdpaLM(torch.nn.Module):
    """A causal LM whose attention builds its own boolean mask and hands it to scaled_dot_product_attention."""

    def __init__(self, inverted: bool):
        super().__init__()
        self.inverted = inverted
        self.emb, self.qkv, self.out = torch.nn.Embedding(20, 16), torch.nn.Linear(16, 48), torch.nn.Linear(16, 20)

    def forward(self, ids):
        h = self.emb(ids)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        n = ids.shape[1]
        if self.inverted:
            allowed = torch.ones(n, n, dtype=torch.bool).triu()  # THE MASK: the future allowed, the past hidden
        else:
            allowed = torch.ones(n, n, dtype=torch.bool).tril()
        return self.out(torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed))


@pytest.mark.parametrize("inverted", [True, False])
def test_a_mask_built_inside_the_attention_and_given_to_sdpa_is_named_where_it_was_built(inverted):
    import inspect

    from expkit.doctor import watch

    torch.manual_seed(0)
    model = _SdpaLM(inverted)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            ids = torch.randint(0, 20, (4, 10))
            loss = torch.nn.functional.cross_entropy(model(ids[:, :-1]).reshape(-1, 20), ids[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = [f for f in w.findings if f.check == "future_tokens_seen"]
    if not inverted:
        assert found == []
        return
    (f,) = found
    lines, first = inspect.getsourcelines(_SdpaLM.forward)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# THE MASK" in t)
