"""Neural ODE fitted to a damped spiral, integrated by a hand-written fixed-step RK4 solver.

Unusual on purpose: there is no ODE library and no adjoint; gradients flow directly through every
internal stage of the solver (the "backprop through the solver internals" mode discussed in the
referenced torchdiffeq issue, which the maintainer says works fine for well-behaved solvers). The
same dynamics network is called four times per step and many steps per trajectory, so one loss
term depends on hundreds of calls of one module. The time variable is concatenated to the state
(non-autonomous dynamics). Trajectory chunks start from observed states (multiple shooting), and
the observations are sliced on a time grid finer than the observation grid, so only every 2nd
solver state is compared with data.

Source: https://github.com/rtqichen/torchdiffeq/issues/100
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

A_TRUE = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])


def true_traj(n=120, dt=0.025):
    z = torch.tensor([2.0, 0.0])
    out = [z]
    sub = 20
    for _ in range(n - 1):
        for _ in range(sub):
            z = z + dt / sub * (z**3 @ A_TRUE.T)
        out.append(z)
    return torch.stack(out)


class Dynamics(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 64), nn.Tanh(), nn.Linear(64, 2))

    def forward(self, t, z):
        tt = t.expand(z.shape[0], 1)
        return self.net(torch.cat([z, tt], dim=1))


def rk4(f, z0, t0, dt, n_steps):
    zs = [z0]
    z, t = z0, t0
    for _ in range(n_steps):
        k1 = f(t, z)
        k2 = f(t + dt / 2, z + dt / 2 * k1)
        k3 = f(t + dt / 2, z + dt / 2 * k2)
        k4 = f(t + dt, z + dt * k3)
        z = z + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + dt
        zs.append(z)
    return torch.stack(zs, dim=1)


def main():
    obs_dt = 0.025
    data = true_traj(dt=obs_dt)
    data = data + 0.01 * torch.randn_like(data)
    func = Dynamics()
    opt = torch.optim.Adam(func.parameters(), lr=3e-3)
    chunk, batch = 8, 16
    for it in range(120):
        starts = torch.randint(0, len(data) - chunk, (batch,))
        z0 = data[starts]
        target = torch.stack([data[s : s + chunk + 1] for s in starts.tolist()])
        t0 = (starts.float() * obs_dt).unsqueeze(1)
        pred = rk4(func, z0, t0, obs_dt / 2, 2 * chunk)[:, ::2]
        loss = (pred - target).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 30 == 0 or it == 119:
            with torch.no_grad():
                full = rk4(func, data[:1], torch.zeros(1, 1), obs_dt, len(data) - 1)
                full_err = (full[0] - data).abs().mean().item()
            print(f"iter {it:3d} chunk_l1 {loss.item():.4f} full_traj_l1 {full_err:.4f}")


if __name__ == "__main__":
    main()
