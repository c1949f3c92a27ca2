"""Physics-informed network for the 1-D heat equation u_t = k u_xx on [0,1]x[0,0.5] with u(x,0) = sin(pi x) and zero boundary values, trained in two stages: Adam for a few steps, then torch.optim.LBFGS with a closure that recomputes the residual (first and second derivatives via autograd.grad with create_graph=True) and calls backward inside the closure, as LBFGS requires. Unusual but correct: a second optimizer takes over mid-run, the closure re-evaluates the loss several times per step, and the collocation points are fixed inputs that require grad.
Source: https://pytorch.org/docs/stable/generated/torch.optim.LBFGS.html
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
K = 0.1
net = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
xc = torch.rand(128, 1, requires_grad=True)
tc = (0.5 * torch.rand(128, 1)).requires_grad_(True)
x0 = torch.rand(64, 1)
xb_t = 0.5 * torch.rand(64, 1)


def loss_fn():
    u = net(torch.cat([xc, tc], 1))
    u_t, u_x = torch.autograd.grad(u, (tc, xc), torch.ones_like(u), create_graph=True)
    u_xx = torch.autograd.grad(u_x, xc, torch.ones_like(u_x), create_graph=True)[0]
    pde = (u_t - K * u_xx).pow(2).mean()
    ic = (net(torch.cat([x0, torch.zeros_like(x0)], 1)) - torch.sin(math.pi * x0)).pow(2).mean()
    bc = (
        net(torch.cat([torch.zeros_like(xb_t), xb_t], 1)).pow(2).mean()
        + net(torch.cat([torch.ones_like(xb_t), xb_t], 1)).pow(2).mean()
    )
    return pde + ic + bc


adam = torch.optim.Adam(net.parameters(), lr=3e-3)
for step in range(30):
    loss = loss_fn()
    adam.zero_grad()
    loss.backward()
    adam.step()
    if step % 10 == 0:
        print(f"adam {step} loss {loss.item():.5f}")

lbfgs = torch.optim.LBFGS(net.parameters(), lr=0.5, max_iter=4, history_size=10, line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    l = loss_fn()
    l.backward()
    return l


for step in range(6):
    l = lbfgs.step(closure)
    print(f"lbfgs {step} loss {l.item():.6f}")
