"""Binary classifier for a synthetic churn-like tabular data set (numeric features plus an embedded categorical
column) trained with AdamW and a linear-warmup schedule implemented with torch.optim.lr_scheduler.LambdaLR.
LambdaLR multiplies the optimizer's base learning rate by whatever the lambda returns, but the lambda returns
the intended absolute learning rate (base_lr * warmup factor). The effective learning rate is therefore
base_lr squared (1e-5 instead of 3e-3 at the end of warmup) and the model barely moves. The scheduler accepts
any float, so no warning is raised.
Source: https://github.com/pytorch/pytorch/issues/78917
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)
n = 3000
num = torch.randn(n, 6)
cat = torch.randint(0, 10, (n,))
cat_effect = torch.linspace(-1.5, 1.5, 10)[cat]
logit = 1.5 * num[:, 0] - num[:, 1] + 0.8 * num[:, 2] * num[:, 3] + cat_effect
y = (torch.rand(n) < torch.sigmoid(logit)).float()
loader = DataLoader(TensorDataset(num[:2400], cat[:2400], y[:2400]), batch_size=64, shuffle=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.mlp = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, xn, xc):
        return self.mlp(torch.cat([xn, self.emb(xc)], 1)).squeeze(1)


BASE_LR, WARMUP = 3e-3, 30
model = Net()
opt = torch.optim.AdamW(model.parameters(), lr=BASE_LR, weight_decay=1e-4)
warmup = lambda step: BASE_LR * min(1.0, (step + 1) / WARMUP)  # BUG-LINE
sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=warmup)
step = 0
for epoch in range(4):
    for xn, xc, yb in loader:
        loss = F.binary_cross_entropy_with_logits(model(xn, xc), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
    print(f"epoch {epoch} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
with torch.no_grad():
    p = model(num[2400:], cat[2400:])
    print("val acc:", round(((p > 0).float() == y[2400:]).float().mean().item(), 4))
