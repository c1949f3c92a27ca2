"""Physics-informed network for a damped harmonic oscillator trained only from the ODE residual.

Unusual but correct: there are no data labels at all.  The loss is built from
derivatives of the network output with respect to its *input* time t, obtained
with torch.autograd.grad(..., create_graph=True) twice, so the second derivative
is itself differentiable and the residual u'' + 2*zeta*w0*u' + w0^2*u can be
back-propagated into the weights (a double-backward).  The initial conditions
u(0)=1 and u'(0)=0 are separate soft penalties; the derivative for u'(0) is also
taken with create_graph=True.  The input is the physical t, so no chain-rule
rescaling is needed.

Source: https://allamaprabhuani.github.io/tutorials/05-pinns/
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

ZETA, W0, T_MAX = 0.2, 2 * math.pi, 1.0
OPT = {"steps": 300, "lr": 1e-2, "n_colloc": 32, "ic_weight": 20.0}


def exact(t):
    wd = W0 * math.sqrt(1 - ZETA**2)
    a = ZETA * W0
    return torch.exp(-a * t) * (torch.cos(wd * t) + a / wd * torch.sin(wd * t))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, t):
        return self.f(t)


def derivative(y, x):
    return torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]


def main():
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=OPT["lr"])
    t0 = torch.zeros(1, 1, requires_grad=True)
    for step in range(OPT["steps"]):
        t = (torch.rand(OPT["n_colloc"], 1) * T_MAX).requires_grad_(True)
        u = net(t)
        du = derivative(u, t)
        d2u = derivative(du, t)
        residual = d2u + 2 * ZETA * W0 * du + W0**2 * u
        loss_phys = (residual**2).mean() / W0**4
        u0 = net(t0)
        du0 = derivative(u0, t0)
        loss_ic = (u0 - 1.0).pow(2).mean() + (du0 / W0).pow(2).mean()
        loss = loss_phys + OPT["ic_weight"] * loss_ic
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 75 == 0 or step == OPT["steps"] - 1:
            print(f"step {step:4d} physics {loss_phys.item():.2e} ic {loss_ic.item():.2e}")
    tt = torch.linspace(0, T_MAX, 200).unsqueeze(1)
    with torch.no_grad():
        err = ((net(tt) - exact(tt)).norm() / exact(tt).norm()).item()
    print(f"relative L2 error vs analytic solution {err:.3f}")


if __name__ == "__main__":
    main()
