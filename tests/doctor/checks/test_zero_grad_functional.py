"""missing_zero_grad and torch.autograd.grad: MAML's inner loop takes gradients of the parameters with
``torch.autograd.grad(create_graph=True)`` and never writes them into ``.grad``; counting them as the step's
gradient read a correct second-order MAML as a missing zero_grad (the outside clean program
batch17/clean/maml_sine_functional_call_second_order.py, from
https://discuss.pytorch.org/t/another-way-to-implement-maml-model-agnostic-meta-learning/164439). Without the
zero_grad, the same loop is still found."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.func import functional_call  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _maml(zero_grad: bool):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            if zero_grad:
                opt.zero_grad()
            for _task in range(3):
                amp = float(torch.empty(1).uniform_(0.5, 3.0))
                xs, xq = torch.rand(10, 1) * 6 - 3, torch.rand(10, 1) * 6 - 3
                ys, yq = amp * torch.sin(xs), amp * torch.sin(xq)
                params = dict(model.named_parameters())
                inner = (functional_call(model, params, (xs,)) - ys).pow(2).mean()
                grads = torch.autograd.grad(inner, list(params.values()), create_graph=True)
                fast = {n: p - 0.01 * g for (n, p), g in zip(params.items(), grads, strict=True)}
                ((functional_call(model, fast, (xq,)) - yq).pow(2).mean() / 3).backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "missing_zero_grad"]


def test_second_order_maml_with_zero_grad_is_clean():
    assert _maml(zero_grad=True) == []


def test_second_order_maml_without_zero_grad_is_found():
    assert len(_maml(zero_grad=False)) == 1
