"""Physics-informed network for the 1-D Poisson problem -u''(x) = pi^2 sin(pi x) on [0, 1] with
u(0) = u(1) = 0 (solution sin(pi x)). The second derivative is obtained with two nested
torch.autograd.grad calls using create_graph=True so the residual is differentiable w.r.t. the
weights. Training runs a short Adam warm-up followed by L-BFGS, whose closure re-evaluates the loss
and calls backward several times per optimizer step, as is standard for PINNs.

Source: https://arxiv.org/abs/1711.10561
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
xc = torch.linspace(0, 1, 64)[1:-1, None]
xb = torch.tensor([[0.0], [1.0]])


def loss_fn():
    x = xc.clone().requires_grad_(True)
    u = net(x)
    du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
    d2u = torch.autograd.grad(du.sum(), x, create_graph=True)[0]
    res = -d2u - math.pi**2 * torch.sin(math.pi * x)
    return res.pow(2).mean() + 10 * net(xb).pow(2).mean()


adam = torch.optim.Adam(net.parameters(), lr=1e-2)
for step in range(100):
    loss = loss_fn()
    adam.zero_grad()
    loss.backward()
    adam.step()
lbfgs = torch.optim.LBFGS(net.parameters(), lr=1.0, max_iter=20, line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    l = loss_fn()
    l.backward()
    return l


for step in range(8):
    loss = lbfgs.step(closure)
with torch.no_grad():
    xt = torch.linspace(0, 1, 101)[:, None]
    err = (net(xt) - torch.sin(math.pi * xt)).abs().max().item()
print("final loss", round(loss.item(), 6), "max error", round(err, 5))
