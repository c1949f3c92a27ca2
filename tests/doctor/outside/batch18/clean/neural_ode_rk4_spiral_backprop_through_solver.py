"""Neural ODE fitted to a damped spiral by back-propagating through a hand-written RK4 solver.

Unusual but correct: the model has no layers applied to the data directly.  A
small vector field f_theta(t, z) (an nn.Module registered as a submodule of the
wrapper, so its parameters are in model.parameters() and the optimizer) is
integrated with a fixed-step Runge-Kutta-4 loop written in plain torch; the loss
compares the integrated trajectory with observed points, and gradients flow
through every solver stage (discretize-then-optimize, no adjoint).  Sub-
trajectories with random start points are used as mini-batches.

Source: https://github.com/rtqichen/torchdiffeq/issues/79
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

TRUE_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])
RUN = {"iters": 120, "lr": 1e-2, "batch": 16, "seg_len": 10, "n_obs": 200, "t_end": 10.0}


def true_trajectory():
    t = torch.linspace(0, RUN["t_end"], RUN["n_obs"])
    z = torch.tensor([[2.0, 0.0]])
    zs = [z]
    dt = t[1] - t[0]
    for _ in range(len(t) - 1):
        z = z + dt * z @ TRUE_A.T
        zs.append(z)
    return t, torch.cat(zs) + 0.01 * torch.randn(len(t), 2)


class VectorField(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))

    def forward(self, t, z):
        return self.net(z)


class NeuralODE(nn.Module):
    def __init__(self):
        super().__init__()
        self.func = VectorField()

    def forward(self, z0, t):
        zs = [z0]
        z = z0
        for i in range(len(t) - 1):
            h = t[i + 1] - t[i]
            k1 = self.func(t[i], z)
            k2 = self.func(t[i] + h / 2, z + h / 2 * k1)
            k3 = self.func(t[i] + h / 2, z + h / 2 * k2)
            k4 = self.func(t[i] + h, z + h * k3)
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            zs.append(z)
        return torch.stack(zs, dim=0)


def main():
    t, obs = true_trajectory()
    model = NeuralODE()
    opt = torch.optim.Adam(model.parameters(), lr=RUN["lr"])
    for it in range(RUN["iters"]):
        starts = torch.randint(0, RUN["n_obs"] - RUN["seg_len"], (RUN["batch"],))
        z0 = obs[starts]
        target = torch.stack([obs[starts + k] for k in range(RUN["seg_len"])], dim=0)
        pred = model(z0, t[: RUN["seg_len"]])
        loss = (pred - target).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 30 == 0 or it == RUN["iters"] - 1:
            print(f"iter {it:3d} segment L1 {loss.item():.4f}")
    with torch.no_grad():
        full = model(obs[:1], t).squeeze(1)
    print(f"full-trajectory L1 from the first observation {(full - obs).abs().mean().item():.4f}")


if __name__ == "__main__":
    main()
