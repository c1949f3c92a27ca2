"""flow_logdet_sign: an affine coupling layer whose returned log-determinant is minus the log|det| of the map it
computes (the MAF/RealNVP sign slip, https://github.com/bayesiains/nflows/issues/26 and batch 11's outside
program), beside the right sign, an ActNorm-style layer and a volume-preserving layer."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class Coupling(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 2))

    def forward(self, x):
        x1, x2 = x[:, :1], x[:, 1:]
        m, a = self.net(x1).chunk(2, dim=1)
        a = torch.tanh(a)
        if self.how == "additive":  # volume preserving: log|det| is 0
            return torch.cat([x1, x2 - m], 1), torch.zeros(x.shape[0])
        u2 = (x2 - m) * torch.exp(-a)
        logdet = a.sum(1) if self.how == "flipped" else -a.sum(1)  # the log-determinant
        return torch.cat([x1, u2], 1), logdet


def _fit(how: str):
    torch.manual_seed(0)
    flows = nn.ModuleList([Coupling(how), Coupling(how)])
    opt = torch.optim.Adam(flows.parameters(), lr=1e-2)
    with watch(steps=2) as w:
        for _ in range(3):
            x = torch.randn(64, 2) * torch.tensor([0.5, 2.0])
            total = torch.zeros(64)
            for f in flows:
                x, ld = f(x.flip(1))
                total = total + ld
            loss = -((-0.5 * x.pow(2) - 0.5 * math.log(2 * math.pi)).sum(1) + total).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "flow_logdet_sign"]


def test_a_coupling_that_returns_the_inverse_maps_log_determinant_is_found_where_it_is_made():
    (f,) = _fit("flipped")
    assert f.line == _line_of("# the log-determinant", Coupling.forward)
    assert f.evidence["returned"][0] == pytest.approx(-f.evidence["measured_log_abs_det"][0], rel=1e-4)


@pytest.mark.parametrize("how", ["right", "additive"])
def test_the_right_sign_and_a_volume_preserving_coupling_are_silent(how):
    assert _fit(how) == []


class Flow(nn.Module):
    """A container whose forward sums its couplings' log-determinants: the flip is named inside the coupling."""

    def __init__(self, how: str):
        super().__init__()
        self.layers = nn.ModuleList([Coupling(how), Coupling(how)])

    def forward(self, x):
        total = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x.flip(1))
            total = total + ld
        return x, total


def test_a_flipped_coupling_inside_a_flow_container_is_named_in_the_coupling():
    torch.manual_seed(0)
    flow = Flow("flipped")
    opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
    with watch(steps=2) as w:
        for _ in range(3):
            z, logdet = flow(torch.randn(64, 2))
            loss = -((-0.5 * z.pow(2)).sum(1) + logdet).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    (f,) = [f for f in w.findings if f.check == "flow_logdet_sign"]
    assert f.line == _line_of("# the log-determinant", Coupling.forward)
