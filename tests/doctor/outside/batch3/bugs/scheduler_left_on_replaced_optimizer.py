"""A fine-tuning script builds AdamW and a cosine schedule, then (after unfreezing the backbone) builds a fresh
AdamW over all parameters but keeps the old scheduler: ``scheduler.step()`` now decays the learning rate of an
optimizer that no longer steps, and the optimizer that trains stays at its initial learning rate for the whole
run. PyTorch only warns that the scheduler stepped before its optimizer (it never did), which names the
wrong cause.

Source: https://github.com/huggingface/transformers/pull/24758
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(10, 64), nn.ReLU())
head = nn.Linear(64, 4)
backbone.requires_grad_(False)
optimizer = torch.optim.AdamW(head.parameters(), lr=1e-3)
total_steps = 40
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)
# unfreeze the backbone: the optimizer must be rebuilt to see its parameters
backbone.requires_grad_(True)
optimizer = torch.optim.AdamW([*backbone.parameters(), *head.parameters()], lr=1e-3)  # BUG-LINE
X, y = torch.randn(320, 10), torch.randint(0, 4, (320,))
for step in range(total_steps):
    i = (step * 32) % 320
    loss = F.cross_entropy(head(backbone(X[i : i + 32])), y[i : i + 32])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
