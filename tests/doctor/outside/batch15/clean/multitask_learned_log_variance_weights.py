"""Multi-task learning with homoscedastic-uncertainty loss weights (Kendall et al.).

Source: https://github.com/wandb/senpai/pull/1157

The pull request replaces hand-tuned loss weights with one learnable log-variance per
task, loss = sum_i exp(-log_var_i) * loss_i + 0.5 * log_var_i. This program does the
same for two regression heads on a shared trunk whose targets have very different
noise levels. Unusual on purpose: the loss weights are nn.Parameters that live
outside the model and are passed to the optimizer as their own parameter group with a
larger learning rate and no weight decay; the +0.5*log_var term means the total loss
can become negative, which is expected.
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
log_vars = nn.Parameter(torch.zeros(2))
opt = torch.optim.AdamW(
    [
        {"params": model.parameters(), "lr": 2e-3, "weight_decay": 1e-4},
        {"params": [log_vars], "lr": 2e-2, "weight_decay": 0.0},
    ]
)

for epoch in range(1, 21):
    perm = torch.randperm(N)
    for idx in perm.split(128):
        p1, p2 = model(X[idx])
        losses = torch.stack([F.mse_loss(p1, y1[idx]), F.mse_loss(p2, y2[idx])])
        total = (torch.exp(-log_vars) * losses + 0.5 * log_vars).sum()
        opt.zero_grad()
        total.backward()
        opt.step()
    if epoch % 4 == 0:
        w = torch.exp(-log_vars).tolist()
        print(
            f"epoch {epoch} total {total.item():.4f} task losses {[round(v, 4) for v in losses.tolist()]} weights {[round(v, 3) for v in w]}"
        )
