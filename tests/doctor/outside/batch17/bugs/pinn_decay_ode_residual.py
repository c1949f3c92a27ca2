"""PINN for the decay ODE u'(t) = -k u(t), u(0) = 1, trained on collocation points.

Bug: the derivative du/dt is taken with torch.autograd.grad(...) without create_graph=True, so the
returned derivative (retain_graph=True only keeps the forward graph alive) is a constant with no graph back to the network weights. The residual term
(du/dt + k u) then only pushes u towards a frozen target -du/dt / k; the derivative part of the
physics loss never contributes a gradient. Nothing fails, the loss goes down, but the network does
not learn the ODE solution. The forum answer says the derivative must be taken with
create_graph=True so that a loss built from it can be backpropagated.

Source: https://discuss.pytorch.org/t/loss-function-which-uses-the-derivative-of-the-net-w-r-t-input/13409
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

K = 1.5


class PINN(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(1, width),
            nn.Tanh(),
            nn.Linear(width, width),
            nn.Tanh(),
            nn.Linear(width, 1),
        )

    def forward(self, t):
        return self.net(t)


def residual(model, t):
    t = t.clone().requires_grad_(True)
    u = model(t)
    du_dt = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), retain_graph=True)[0]  # BUG-LINE
    return du_dt + K * u


def main():
    model = PINN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    t0 = torch.zeros(1, 1)
    t_test = torch.linspace(0, 2, 50).unsqueeze(1)
    u_true = torch.exp(-K * t_test)
    for step in range(300):
        t_col = torch.rand(128, 1) * 2.0
        r = residual(model, t_col)
        loss_pde = (r**2).mean()
        loss_ic = ((model(t0) - 1.0) ** 2).mean()
        loss = loss_pde + 10.0 * loss_ic
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == 299:
            with torch.no_grad():
                err = (model(t_test) - u_true).abs().max().item()
            print(
                f"step {step:4d} loss {loss.item():.5f} pde {loss_pde.item():.5f} "
                f"ic {loss_ic.item():.5f} max_err {err:.4f}"
            )


if __name__ == "__main__":
    main()
