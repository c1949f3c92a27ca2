"""PINN for a 1D Poisson problem whose PDE residual differentiates w.r.t. normalized inputs.

The physical domain is x in [0, L] with L = 4.  As is common, the collocation
points are rescaled to [0, 1] before entering the network, and the script then
asks autograd for d2u/dxn2 with respect to the *normalized* coordinate xn = x/L.
The residual u_xx - f(x) is assembled from that derivative without the chain-rule
factor 1/L**2, so the network is trained to satisfy L**2 * u'' = f instead of the
intended equation.  Both the PDE loss and the boundary loss go to ~0, so training
looks perfect, but the learned field is L**2 = 16 times smaller than the true
solution.  Nothing errors.

Source: https://github.com/weili101/Deep_Plates/issues/2
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

L = 4.0
SETTINGS = {"n_collocation": 128, "steps": 700, "lr": 3e-3, "bc_weight": 10.0}


def forcing(x):
    k = math.pi / L
    return -(k**2) * torch.sin(k * x)


def exact(x):
    return torch.sin(math.pi * x / L)


class MLP(nn.Module):
    def __init__(self, width=32, depth=3):
        super().__init__()
        layers, d = [], 1
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.Tanh()]
            d = width
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, xn):
        return self.net(xn)


def normalize(x):
    return x / L


def pde_residual(model, x):
    xn = normalize(x).requires_grad_(True)
    u = model(xn)
    du = torch.autograd.grad(u, xn, torch.ones_like(u), create_graph=True)[0]  # BUG-LINE
    d2u = torch.autograd.grad(du, xn, torch.ones_like(du), create_graph=True)[0]
    return d2u - forcing(x)


def main():
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=SETTINGS["lr"])
    xb = torch.tensor([[0.0], [L]])
    for step in range(SETTINGS["steps"]):
        x = torch.rand(SETTINGS["n_collocation"], 1) * L
        res = pde_residual(model, x)
        loss_pde = (res**2).mean()
        loss_bc = (model(normalize(xb)) ** 2).mean()
        loss = loss_pde + SETTINGS["bc_weight"] * loss_bc
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0 or step == SETTINGS["steps"] - 1:
            print(f"step {step:4d} pde {loss_pde.item():.2e} bc {loss_bc.item():.2e}")
    xt = torch.linspace(0, L, 201).unsqueeze(1)
    with torch.no_grad():
        pred = model(normalize(xt))
    rel = ((pred - exact(xt)).norm() / exact(xt).norm()).item()
    print(f"relative L2 error vs exact solution {rel:.3f}; u(L/2) pred {pred[100].item():.3f} exact 1.000")


if __name__ == "__main__":
    main()
