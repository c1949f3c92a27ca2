"""The optimizer is created from the parameters that require grad while the
backbone is frozen (head-only warm-up). Later the backbone is unfrozen by setting
requires_grad=True, but the optimizer is never rebuilt or given a new param
group: the backbone now receives gradients yet is never updated, so the
"full fine-tuning" phase still trains only the head.

Source: https://github.com/skorch-dev/skorch/issues/261
"""

import torch
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
head = nn.Linear(32, 3)
model = nn.Sequential(backbone, head)
for p in backbone.parameters():
    p.requires_grad_(False)
opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)  # BUG-LINE
x = torch.randn(96, 10)
y = (x[:, :3] * x[:, 3:6]).argmax(1)
for step in range(8):
    if step == 2:
        for p in backbone.parameters():
            p.requires_grad_(True)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("loss", loss.item())
