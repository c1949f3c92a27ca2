"""Multi-step forecaster with reversible instance normalisation (RevIN) per series.

Unusual but correct: each input window is normalised with ITS OWN mean and std
computed over the time axis (not dataset statistics), a learnable affine is
applied, the MLP forecasts the next H steps in normalised space, and the output
is de-normalised with the same per-window statistics before the loss against the
raw future values. Targets are the series shifted into the future (window
t..t+L-1 -> t+L..t+L+H-1). Series have very different levels and scales, which
is what RevIN is for; the author explains it normalises each input instance with
its own statistics rather than the training-set statistics.

Source: https://github.com/ts-kim/RevIN/issues/10
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

L, H, N_SERIES, LEN = 48, 12, 24, 400
t = torch.arange(LEN).float()
level = torch.randn(N_SERIES, 1) * 50
scale = torch.rand(N_SERIES, 1) * 20 + 0.5
series = level + scale * (torch.sin(2 * 3.14159 * t / 24) + 0.01 * t + 0.2 * torch.randn(N_SERIES, LEN))


class RevIN(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(1))
        self.beta = nn.Parameter(torch.zeros(1))

    def norm(self, x):
        self.mu = x.mean(dim=-1, keepdim=True).detach()
        self.sd = (x.var(dim=-1, keepdim=True, unbiased=False) + self.eps).sqrt().detach()
        return (x - self.mu) / self.sd * self.gamma + self.beta

    def denorm(self, y):
        return (y - self.beta) / (self.gamma + self.eps) * self.sd + self.mu


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.revin = RevIN()
        self.mlp = nn.Sequential(nn.Linear(L, 64), nn.ReLU(), nn.Linear(64, H))

    def forward(self, x):
        return self.revin.denorm(self.mlp(self.revin.norm(x)))


def windows(bs, hi):
    s = torch.randint(0, N_SERIES, (bs,))
    start = torch.randint(0, hi - L - H, (bs,))
    idx = start[:, None] + torch.arange(L + H)
    w = series[s[:, None], idx]
    return w[:, :L], w[:, L:]


model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(100):
    x, y = windows(64, 300)
    pred = model(x)
    loss = F.mse_loss(pred / scale.mean(), y / scale.mean())
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0 or step == 99:
        print(f"step {step:3d} scaled mse {loss.item():.4f}")

with torch.no_grad():
    x, y = windows(256, LEN)
    mae_model = (model(x) - y).abs().mean()
    mae_naive = (x[:, -1:] - y).abs().mean()
    print(f"MAE model {mae_model:.3f} vs last-value {mae_naive:.3f}")
