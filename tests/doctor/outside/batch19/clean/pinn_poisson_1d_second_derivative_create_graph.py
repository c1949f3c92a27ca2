"""Physics-informed network for the 1-D Poisson equation with autograd residuals (correct).

Unusual but correct: the loss is built from derivatives of the network output
with respect to its *input*.  ``torch.autograd.grad(..., create_graph=True)`` is
used for both u_x and u_xx, so the PDE residual u_xx + pi^2 sin(pi x) stays a
differentiable function of the weights and the physics term really trains the
network (not only the boundary term).  Collocation points are resampled every
step and require grad; boundary conditions u(0)=u(1)=0 are a second loss term.
The exact solution is sin(pi x), which is used only to report the error.

Source: https://amm.zanotp.com/pinn
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)


class PINN(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(1, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1)
        )

    def forward(self, x):
        return self.net(x)


def derivative(y, x):
    return torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)[0]


def pde_residual(model, x):
    u = model(x)
    u_x = derivative(u, x)
    u_xx = derivative(u_x, x)
    return u_xx + math.pi**2 * torch.sin(math.pi * x)


def main():
    model = PINN()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    xb = torch.tensor([[0.0], [1.0]])
    x_test = torch.linspace(0, 1, 101).unsqueeze(1)
    for step in range(180):
        x = torch.rand(64, 1, requires_grad=True)
        loss_pde = pde_residual(model, x).pow(2).mean()
        loss_bc = model(xb).pow(2).mean()
        loss = loss_pde + 10.0 * loss_bc
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 45 == 0 or step == 179:
            with torch.no_grad():
                err = (model(x_test) - torch.sin(math.pi * x_test)).abs().max().item()
            print(f"step {step:3d} pde {loss_pde.item():.4f} bc {loss_bc.item():.5f} max_err {err:.4f}")


if __name__ == "__main__":
    main()
