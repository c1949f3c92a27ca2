"""Physics-informed neural network for the 1-D Poisson problem u''(x) = -pi^2 sin(pi x) on [0, 1] with u(0) = u(1) = 0, trained with Adam on a PDE-residual loss at random collocation points plus a boundary loss. The second derivative is obtained with a second torch.autograd.grad call that omits create_graph=True, so u_xx comes back as a constant without a graph: the residual loss has a value but contributes no gradient to the network parameters and only the boundary term is actually trained. No error is raised because the total loss still has a graph through the boundary term; the PDE is ignored from the first step.
Source: https://github.com/dragen1860/MAML-Pytorch/issues/26
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
xb = torch.tensor([[0.0], [1.0]])

for step in range(80):
    x = torch.rand(128, 1, requires_grad=True)
    u = net(x)
    u_x = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)[0]
    u_xx = torch.autograd.grad(u_x, x, torch.ones_like(u_x))[0]  # BUG-LINE
    residual = u_xx + math.pi**2 * torch.sin(math.pi * x)
    pde_loss = residual.pow(2).mean()
    bc_loss = net(xb).pow(2).mean()
    loss = pde_loss + 10.0 * bc_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} pde {pde_loss.item():.4f} bc {bc_loss.item():.6f}")

with torch.no_grad():
    xs = torch.linspace(0, 1, 101).unsqueeze(1)
    err = (net(xs) - torch.sin(math.pi * xs)).abs().max().item()
print("max abs error vs exact", round(err, 4))
