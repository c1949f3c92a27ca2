"""Train a DeepSets network (per-element encoder, sum pooling, decoder) to regress a population
statistic, the entropy-like log-variance of each set of 1-D samples, as in the DeepSets "PopStats"
experiment. The hand-written MSE subtracts a (B,)-shaped target from the (B, 1)-shaped prediction, so
broadcasting produces a (B, B) matrix and the loss compares every prediction with every target.
The optimum is the batch-average statistic for every set. A hand-written loss gives no shape
warning, and the value decreases.

Source: https://github.com/manzilzaheer/DeepSets/pull/1
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
SET = 30


def make_sets(b):
    log_var = torch.rand(b) * 3 - 1.5
    x = torch.randn(b, SET, 1) * (0.5 * log_var).exp()[:, None, None]
    return x, log_var


class DeepSets(nn.Module):
    def __init__(self):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(1, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.rho = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.rho(self.phi(x).mean(1))


model = DeepSets()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for step in range(200):
    x, y = make_sets(64)
    pred = model(x)
    loss = ((pred - y) ** 2).mean()  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
x, y = make_sets(512)
with torch.no_grad():
    mse = ((model(x).squeeze(1) - y) ** 2).mean().item()
print(
    "final train loss",
    round(loss.item(), 4),
    "per-set test mse",
    round(mse, 4),
    "target variance",
    round(y.var().item(), 4),
)
