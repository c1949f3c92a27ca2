"""Multi-task uncertainty weighting whose log-variance parameters are never optimized.

Source: https://github.com/Mikoto10032/AutomaticWeightedLoss/issues/3

The report: with AutomaticWeightedLoss the learned task weights stayed at exactly 1
for the whole run. The resolution in the thread was that the loss-weighting module's
parameters must also be put in the optimizer; only model.parameters() had been passed.
The weighted loss still backpropagates into log_vars (their .grad is filled every
step) but nothing ever applies it, so the weighting silently degenerates to a plain
unweighted sum.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D = 2048, 10
X = torch.randn(N, D)
w1, w2 = torch.randn(D), torch.randn(D)
y1 = X @ w1 + 0.1 * torch.randn(N)
y2 = torch.sin(X @ w2) * 3 + 1.5 * torch.randn(N)


class AutomaticWeightedLoss(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.log_vars = nn.Parameter(torch.zeros(n))

    def forward(self, *losses):
        losses = torch.stack(losses)
        return (torch.exp(-self.log_vars) * losses + 0.5 * self.log_vars).sum()


class TwoHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.h1 = nn.Linear(64, 1)
        self.h2 = nn.Linear(64, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.h1(h).squeeze(-1), self.h2(h).squeeze(-1)


model = TwoHead()
awl = AutomaticWeightedLoss(2)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)  # BUG-LINE

for epoch in range(1, 16):
    for idx in torch.randperm(N).split(128):
        p1, p2 = model(X[idx])
        total = awl(F.mse_loss(p1, y1[idx]), F.mse_loss(p2, y2[idx]))
        opt.zero_grad()
        total.backward()
        opt.step()
    if epoch % 3 == 0:
        print(
            f"epoch {epoch} total {total.item():.4f} weights {[round(v, 3) for v in torch.exp(-awl.log_vars).tolist()]}"
        )
