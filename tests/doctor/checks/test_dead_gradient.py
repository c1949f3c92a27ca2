"""zero_gradient names the layer where the gradient died: the first parameter-free layer after the dead modules
whose output is the same for every sample (a softmax over a single unit)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _loop(last: nn.Module):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(5, 16),
        nn.ReLU(),
        nn.Linear(16, 1),
        last,
        nn.Linear(1, 1),  # trained: its bias gets a gradient, so the dead layers stand out
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    X, y = torch.randn(64, 5), torch.rand(64, 1)
    with watch(model, opt, steps=2) as w:
        for i in range(3):
            loss = F.mse_loss(model(X[16 * i : 16 * i + 16]), y[16 * i : 16 * i + 16])
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors
    return [f for f in w.findings if f.check == "zero_gradient"]


def test_a_softmax_over_one_unit_is_named_as_the_layer_where_the_gradient_died():
    (f,) = _loop(nn.Softmax(dim=1))
    assert f.evidence["dead_layer"] == "Softmax"  # its construction line is the finding's (under expkit doctor)
    assert _loop(nn.Sigmoid()) == []
