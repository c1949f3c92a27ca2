"""output_cannot_reach_target: a regression loss on the output of a bounded activation (by its grad_fn) with 10 %+
of the targets outside the activation's range; targets inside it are clean."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _found(last: nn.Module, y: torch.Tensor):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1), last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.randn(y.shape[0], 4)
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            loss = F.mse_loss(model(X), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors
    return [f for f in w.findings if f.check == "output_cannot_reach_target"]


def test_relu_output_with_negative_targets_is_found():
    y = -torch.rand(32, 1) - 1  # every target below 0
    (f,) = _found(nn.ReLU(), y)
    assert (f.evidence["activation"], f.evidence["targets_outside"]) == ("Relu", 32)


def test_targets_inside_the_range_are_clean():
    assert _found(nn.Sigmoid(), torch.rand(32, 1)) == []
    assert _found(nn.Tanh(), torch.rand(32, 1) * 2 - 1) == []
