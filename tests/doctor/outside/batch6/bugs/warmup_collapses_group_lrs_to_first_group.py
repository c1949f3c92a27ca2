"""A linear-warmup scheduler reads the target learning rate as ``[g["lr"] for g in opt.param_groups][0]`` and
broadcasts it to every group, so the head group (configured at 10x the backbone lr) silently warms up to and
keeps the backbone's small learning rate. Training runs; the per-group configuration is discarded.

Source: https://github.com/deepspeedai/DeepSpeed/pull/8171
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(16, 64), nn.ReLU())
head = nn.Linear(64, 3)
opt = torch.optim.AdamW([{"params": backbone.parameters(), "lr": 1e-4}, {"params": head.parameters(), "lr": 1e-3}])


class WarmupLR:
    def __init__(self, optimizer, warmup_steps):
        self.opt, self.warmup, self.step_num = optimizer, warmup_steps, 0
        self.max_lrs = next(g["lr"] for g in optimizer.param_groups)  # BUG-LINE
        self.step()

    def step(self):
        self.step_num += 1
        scale = min(1.0, self.step_num / self.warmup)
        for g in self.opt.param_groups:
            g["lr"] = self.max_lrs * scale


sched = WarmupLR(opt, warmup_steps=4)
X, y = torch.randn(256, 16), torch.randint(0, 3, (256,))
for i in range(0, 256, 32):
    loss = F.cross_entropy(head(backbone(X[i : i + 32])), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
