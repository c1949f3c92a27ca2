"""PINN for the 1D Poisson problem u''(x) = -pi^2 sin(pi x), u(0) = u(1) = 0, with a small data term.

Unusual on purpose: the loss contains derivatives of the network output with respect to its input.
u_x and u_xx are obtained with torch.autograd.grad(..., create_graph=True), so the residual stays
differentiable and loss.backward() performs a third-order pass through the network. The
collocation inputs are leaf tensors with requires_grad=True that are not parameters and are not
optimized. The physics, boundary and data losses are weighted and summed. A small helper computes
the repeated derivative the same way as the diff(y, xs) helper in the referenced forum thread about
computing PINN derivatives with autograd.

Source: https://discuss.pytorch.org/t/efficient-calculation-of-derivatives-for-pinn-solvers-in-pytorch/177249
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)


def diff(y, x, order=1):
    for _ in range(order):
        y = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)[0]
    return y


def main():
    net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    xb = torch.tensor([[0.0], [1.0]])
    x_obs = torch.rand(8, 1)
    u_obs = torch.sin(math.pi * x_obs)
    x_test = torch.linspace(0, 1, 101).unsqueeze(1)
    u_test = torch.sin(math.pi * x_test)
    for step in range(400):
        x = torch.rand(96, 1, requires_grad=True)
        u = net(x)
        u_xx = diff(u, x, order=2)
        res = u_xx + math.pi**2 * torch.sin(math.pi * x)
        loss_pde = (res**2).mean() / math.pi**4
        loss_bc = (net(xb) ** 2).mean()
        loss_data = ((net(x_obs) - u_obs) ** 2).mean()
        loss = loss_pde + 10 * loss_bc + loss_data
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 80 == 0 or step == 399:
            with torch.no_grad():
                err = (net(x_test) - u_test).abs().max().item()
            print(
                f"step {step:3d} loss {loss.item():.5f} pde {loss_pde.item():.5f} "
                f"bc {loss_bc.item():.5f} max_err {err:.4f}"
            )


if __name__ == "__main__":
    main()
