"""Physics-informed network for u'' + 4u = 0 with derivatives taken w.r.t. the input.

Source: https://discuss.pytorch.org/t/computing-derivative-of-nn-output-wrt-to-input/206175

The thread computes dy/dt of a network output with respect to its input using
torch.autograd.grad(y, t, torch.ones_like(y), create_graph=True), which is what a
PINN residual needs. This program trains a small tanh MLP u(t) so that the ODE
residual u'' + 4u vanishes on random collocation points and u(0)=1, u'(0)=0. Unusual
on purpose: the input tensor requires grad, first and second derivatives are
obtained with autograd.grad and create_graph=True (so the loss is differentiated
through them), there is no labelled data at all, and collocation points are
resampled at random each step.
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

net = nn.Sequential(nn.Linear(1, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(), nn.Linear(24, 1))
opt = torch.optim.Adam(net.parameters(), lr=5e-3)


def derivs(t):
    u = net(t)
    du = torch.autograd.grad(u, t, torch.ones_like(u), create_graph=True)[0]
    d2u = torch.autograd.grad(du, t, torch.ones_like(du), create_graph=True)[0]
    return u, du, d2u


t_test = torch.linspace(0, 2, 50).unsqueeze(1)
for step in range(1, 401):
    t = (torch.rand(32, 1) * 2).requires_grad_(True)
    u, du, d2u = derivs(t)
    residual = (d2u + 4 * u).pow(2).mean()
    t0 = torch.zeros(1, 1, requires_grad=True)
    u0, du0, _ = derivs(t0)
    ic = (u0 - 1).pow(2).mean() + du0.pow(2).mean()
    loss = residual + 10 * ic
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        with torch.no_grad():
            err = (net(t_test) - torch.cos(2 * t_test)).abs().max()
        print(f"step {step} loss {loss.item():.5f} max err vs cos(2t) {err.item():.4f}")
