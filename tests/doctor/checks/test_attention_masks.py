"""additive_mask_of_ones: a float attention mask of 0s and 1s (added to the logits, +1 at the masked keys) is
named where the mask was assigned; boolean, 0/-inf and ALiBi-style float masks are spared. Also
padding_changes_output on a model with a position table exactly as long as the batch (one pad column fewer)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

V, D, T = 30, 16, 10


def _line(marker: str, obj) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _batches(n: int = 3, rows: int = 8):
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        lengths = torch.randint(3, T + 1, (rows,), generator=g)
        lengths[0] = T
        ids = torch.randint(1, V, (rows, T), generator=g)
        ids[torch.arange(T)[None, :] >= lengths[:, None]] = 0
        out.append((ids, torch.randint(0, 2, (rows,), generator=g)))
    return out


def _run(model, check):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for ids, y in _batches():
            loss = F.cross_entropy(model(ids), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == check]


MASKS = {
    "ones": lambda tok: (tok == 0).float(),
    "bool": lambda tok: tok == 0,
    "inf": lambda tok: torch.zeros(tok.shape).masked_fill(tok == 0, float("-inf")),
}


class MHAClassifier(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.emb = nn.Embedding(V, D, padding_idx=0)
        self.attn = nn.MultiheadAttention(D, 2, batch_first=True)
        self.fc = nn.Linear(D, 2)

    def forward(self, tok):
        x = self.emb(tok)
        pad = MASKS[self.how](tok)  # the float mask
        if self.how == "ones":
            x = x * 1.0  # a line between the mask and the call
        h, _ = self.attn(x, x, x, key_padding_mask=pad)
        return self.fc(h[:, 0])


def _alibi():  # an ALiBi-style bias: many float values
    pos = torch.arange(T, dtype=torch.float32)
    return -(pos[:, None] - pos[None, :]).abs() * 0.5


CAUSAL = {
    "ones": lambda: torch.triu(torch.ones(T, T), diagonal=1),
    "bool": lambda: torch.ones(T, T, dtype=torch.bool).tril(),
    "alibi": _alibi,
}


def _attend(q, mask):  # a helper of the user's: the mask arrives as an argument
    return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


class SDPAModel(nn.Module):
    """A hand-written attention through F.scaled_dot_product_attention."""

    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.emb = nn.Embedding(V, D)
        self.fc = nn.Linear(D, 2)

    def forward(self, tok):
        q = self.emb(tok).unsqueeze(1)  # (B, 1, T, D)
        causal = CAUSAL[self.how]()  # the causal mask of ones
        h = _attend(q, causal).squeeze(1)
        return self.fc(h.mean(1))


def test_a_float_key_padding_mask_of_ones_is_named_where_it_was_made():
    (f,) = _run(MHAClassifier("ones"), "additive_mask_of_ones")
    assert f.line == _line("# the float mask", MHAClassifier)
    assert f.evidence["argument"] == "key_padding_mask"


def test_sdpa_with_a_float_mask_of_ones_is_followed_out_of_the_helper():
    (f,) = _run(SDPAModel("ones"), "additive_mask_of_ones")
    assert f.line == _line("# the causal mask of ones", SDPAModel)


def test_boolean_minus_inf_and_alibi_masks_are_spared():
    assert _run(MHAClassifier("bool"), "additive_mask_of_ones") == []
    assert _run(MHAClassifier("inf"), "additive_mask_of_ones") == []
    assert _run(SDPAModel("bool"), "additive_mask_of_ones") == []
    assert _run(SDPAModel("alibi"), "additive_mask_of_ones") == []


class FixedLengthEncoder(nn.Module):
    """A learned position table exactly as long as the batch: the replay cannot append a pad column."""

    def __init__(self, masked: bool):
        super().__init__()
        self.masked = masked
        self.emb = nn.Embedding(V, D, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(1, T, D) * 0.1)
        self.layer = nn.TransformerEncoderLayer(D, 2, 32, dropout=0.0, batch_first=True)
        self.fc = nn.Linear(D, 2)

    def forward(self, tok):
        x = self.emb(tok) + self.pos[:, : tok.size(1)]
        mask = tok == 0 if self.masked else x.abs().sum(-1) == 0
        h = self.layer(x, src_key_padding_mask=mask)  # the layer call
        return self.fc(h[:, 0])


def test_padding_is_judged_with_one_pad_column_fewer_when_the_model_cannot_take_more():
    (f,) = _run(FixedLengthEncoder(masked=False), "padding_changes_output")
    assert abs(f.line - _line("# the layer call", FixedLengthEncoder)) <= 1
    assert f.evidence["padding"] == "one pad column fewer"
    assert _run(FixedLengthEncoder(masked=True), "padding_changes_output") == []
