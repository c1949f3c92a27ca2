"""Decoupled weight decay applied by hand, skipping biases and LayerNorm parameters.

Unusual on purpose: the optimizer is plain Adam with weight_decay=0, and after
each optimizer.step() the parameters are modified by hand under torch.no_grad()
(p.mul_(1 - lr * wd)) for weight matrices only; biases and LayerNorm
weights/biases (1-D tensors) are deliberately excluded, matching the practice
of not decaying normalisation and bias parameters. The LR used for the decay
follows the scheduler so decay stays decoupled (AdamW-style).

Source: https://forums.fast.ai/t/is-weight-decay-applied-to-the-bias-term/73212
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 800, 24, 4
X = torch.randn(N, D)
y = (X @ torch.randn(D, C) + 0.5 * torch.randn(N, C)).argmax(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(D, 64)
        self.norm = nn.LayerNorm(64)
        self.hid = nn.Linear(64, 64)
        self.out = nn.Linear(64, C)

    def forward(self, x):
        x = F.gelu(self.norm(self.inp(x)))
        return self.out(F.gelu(self.hid(x)))


model = Net()
decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "norm" not in n]
no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "norm" in n]
opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=0.0)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20))
wd = 0.05

for step in range(150):
    idx = torch.randint(0, 600, (64,))
    loss = F.cross_entropy(model(X[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    lr = opt.param_groups[0]["lr"]
    with torch.no_grad():
        for p in decay:
            p.mul_(1 - lr * wd)
    sched.step()
    if step % 30 == 0 or step == 149:
        with torch.no_grad():
            acc = (model(X[600:]).argmax(1) == y[600:]).float().mean().item()
            wn = sum(p.norm() ** 2 for p in decay).sqrt().item()
        print(
            f"step {step:3d} lr {lr:.4f} loss {loss.item():.4f} |W| {wn:.3f} val acc {acc:.3f} ({len(no_decay)} tensors not decayed)"
        )
