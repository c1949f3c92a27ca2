"""second_order_dropped (checks/second_order.py): MAML's inner update written through ``.data`` after a
``create_graph=True`` gradient (the outside development program
batch15/bugs/maml_sine_inner_update_through_data.py, from https://github.com/KanishJebaMathewM/Truxify/issues/13118)
is named at the ``.data`` line; the same update kept on the graph with ``torch.func.functional_call`` and a plain
manual SGD step through ``.data`` (no second-order graph) are silent."""

from __future__ import annotations

import copy
import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402
from torch.func import functional_call  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _maml(how: str) -> tuple[list, int, nn.Module]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    line = 0
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            xs, xq = torch.randn(8, 1), torch.randn(8, 1)
            ys, yq = xs.sin(), xq.sin()
            if how == "data":
                fast = copy.deepcopy(model)
                grads = torch.autograd.grad(F.mse_loss(fast(xs), ys), list(fast.parameters()), create_graph=True)
                for p, g in zip(fast.parameters(), grads, strict=True):
                    line = inspect.currentframe().f_lineno + 1
                    p.data -= 0.1 * g
                loss = F.mse_loss(fast(xq), yq)
            elif how == "functional":
                params = dict(model.named_parameters())
                grads = torch.autograd.grad(F.mse_loss(model(xs), ys), list(params.values()), create_graph=True)
                fast_params = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads, strict=True)}
                loss = F.mse_loss(functional_call(model, fast_params, (xq,)), yq)
            else:  # a first-order manual step through .data, then an ordinary step
                loss = F.mse_loss(model(xs), ys)
                for p in model.parameters():
                    p.data = p - 1e-3 * p.detach().sign()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "second_order_dropped"], line, model


def test_an_inner_update_written_through_data_drops_the_second_order_graph():
    (f,), line, _ = _maml("data")
    assert f.line == line and f.file == __file__
    assert f.evidence["create_graph_line"] == line - 3


@pytest.mark.parametrize("how", ["functional", "manual_step"])
def test_an_update_kept_on_the_graph_and_a_first_order_data_write_are_silent(how):
    found, _, model = _maml(how)
    assert found == []
    assert all(p.grad is not None for p in model.parameters())
