"""Multi-task training makes the per-task loss weights learnable parameters and minimises
``sum(w_i * loss_i)`` without the log/uncertainty regulariser. The cheapest way to lower that objective is to
drive the weights down (and negative), so the optimizer shrinks the task weights instead of fitting the tasks.

Source: https://github.com/rotmanfinhub/deep-macrofin/issues/35
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
trunk = nn.Sequential(nn.Linear(10, 64), nn.ReLU())
reg_head, cls_head = nn.Linear(64, 1), nn.Linear(64, 3)
task_w = nn.Parameter(torch.ones(2))
params = list(trunk.parameters()) + list(reg_head.parameters()) + list(cls_head.parameters()) + [task_w]
opt = torch.optim.Adam(params, lr=1e-2)
for _step in range(6):
    x = torch.randn(32, 10)
    y_reg, y_cls = x[:, :1] * 2, (x[:, 1] > 0).long() + (x[:, 2] > 0).long()
    h = trunk(x)
    losses = torch.stack([F.mse_loss(reg_head(h), y_reg), F.cross_entropy(cls_head(h), y_cls)])
    loss = (task_w * losses).sum()  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
