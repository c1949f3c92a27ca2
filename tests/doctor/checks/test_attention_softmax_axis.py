"""attention_softmax_axis (checks/measured.py): attention scores softmaxed over the heads (the outside development
program batch14/bugs/dot_attention_softmax_over_heads_axis.py) or over the queries, against correct twins: the
softmax over the keys (with dropout on the weights), attention pooling whose (B, T, 1) weights are transposed
before the matmul, and a segmentation softmax over the class axis that no matmul applies."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class Attention(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.qkv = nn.Linear(16, 48)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(16, 3)

    def forward(self, x):  # (B, T, 16), 2 heads of 8
        b, t, _ = x.shape
        q, k, v = (z.view(b, t, 2, 8).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        weights = self.drop(F.softmax(q @ k.transpose(-2, -1) / 8**0.5, dim=self.dim))  # the softmax
        return self.head((weights @ v).transpose(1, 2).reshape(b, t, 16))


class Pooling(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(16, 1)
        self.head = nn.Linear(16, 3)

    def forward(self, x):  # (B, T, 16)
        weights = F.softmax(self.score(x), dim=1)  # (B, T, 1): over the positions, on purpose
        return self.head((weights.transpose(1, 2) @ x).squeeze(1)).unsqueeze(1).expand(-1, x.shape[1], -1)


def _run(model: nn.Module) -> list:
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            out = model(torch.randn(4, 6, 16))
            loss = F.cross_entropy(out.flatten(0, 1), torch.randint(0, 3, (24,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "attention_softmax_axis"]


@pytest.mark.parametrize("dim", [1, 2])
def test_scores_softmaxed_over_the_heads_or_the_queries_are_found_at_the_softmax(dim):
    (f,) = _run(Attention(dim))
    lines, first = inspect.getsourcelines(Attention.forward)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the softmax" in t)
    assert f.evidence == {"softmax_dim": dim, "shape": [4, 2, 6, 6]}


def test_the_keys_softmax_with_dropout_and_an_attention_pooling_are_silent():
    assert _run(Attention(-1)) == []
    assert _run(Pooling()) == []


def test_a_segmentation_softmax_over_the_class_axis_is_silent():
    torch.manual_seed(0)
    model = nn.Conv2d(3, 4, 3, padding=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            probs = F.softmax(model(torch.randn(2, 3, 8, 8)), dim=1)  # (B, C, H, W): classes on axis 1
            loss = F.nll_loss(torch.log(probs + 1e-8), torch.randint(0, 4, (2, 8, 8)))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not [f for f in w.findings if f.check == "attention_softmax_axis"]
