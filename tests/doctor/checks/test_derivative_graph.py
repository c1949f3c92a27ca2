"""derivative_without_graph: a PINN's du/dt taken with torch.autograd.grad without create_graph=True and combined
with the network's output into the residual (the outside development program
batch17/bugs/pinn_decay_ode_residual.py, from
https://discuss.pytorch.org/t/loss-function-which-uses-the-derivative-of-the-net-w-r-t-input/13409) is found at
the grad call; with create_graph=True it is clean, and so is an adversarial example (the input's gradient fed
back to a residual model as data)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "derivative_without_graph"


def _pinn(create_graph: bool):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    with watch(net, opt, steps=2) as w:
        for _ in range(3):
            t = (torch.rand(32, 1) * 2).requires_grad_(True)
            u = net(t)
            keep = {"retain_graph": True, "create_graph": create_graph}
            (du,) = torch.autograd.grad(u, t, torch.ones_like(u), **keep)  # the derivative
            loss = (du + 0.5 * u).pow(2).mean() + (net(torch.zeros(1, 1)) - 1).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def test_a_residual_on_a_derivative_taken_without_create_graph_is_found_at_the_grad_call():
    (f,) = _pinn(create_graph=False)
    assert f.line == line_of("# the derivative", _pinn)


def test_a_residual_on_a_derivative_taken_with_create_graph_is_clean():
    assert _pinn(create_graph=True) == []


class _Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.out = nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.out(x + torch.relu(self.fc(x)))


def test_an_adversarial_example_from_the_inputs_gradient_is_clean():
    torch.manual_seed(0)
    model = _Residual()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(16, 8).requires_grad_(True), torch.randint(0, 3, (16,))
            (gx,) = torch.autograd.grad(F.cross_entropy(model(x), y), x)
            x_adv = (x + 0.1 * gx.sign()).detach()
            loss = F.cross_entropy(model(x_adv), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and [f for f in w.findings if f.check == CHECK] == []
