"""Fit a physics-informed network u(x) to the ODE u'(x) = cos(x) on [0, 6] with u(0) = 0 (solution
sin x), using a data term at x=0 and a derivative-residual term at collocation points. The
derivative du/dx is taken with torch.autograd.grad without create_graph=True, so the returned
derivative is a constant tensor with no graph back to the weights: the residual loss is printed and
added to the total, but contributes zero gradient. Only the single boundary point is fitted; there
is no error or warning.

Source: https://github.com/pytorch/pytorch/issues/31984
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(net.parameters(), lr=5e-3)
x0 = torch.zeros(1, 1)
for step in range(300):
    x = (torch.rand(128, 1) * 6.0).requires_grad_(True)
    u = net(x)
    du = torch.autograd.grad(u.sum(), x)[0]  # BUG-LINE
    residual = ((du - torch.cos(x)) ** 2).mean()
    boundary = (net(x0) ** 2).mean()
    loss = residual + boundary
    opt.zero_grad()
    loss.backward()
    opt.step()
with torch.no_grad():
    xt = torch.linspace(0, 6, 200)[:, None]
    err = (net(xt) - torch.sin(xt)).abs().max().item()
print("final residual", round(residual.item(), 4), "boundary", round(boundary.item(), 6))
print("max abs error vs sin(x)", round(err, 4))
