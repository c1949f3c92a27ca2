"""A student learns from a frozen teacher's temperature-softened distribution.

Source: https://arxiv.org/abs/1910.11015
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 5)).eval()
student = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 5))
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
X = torch.randn(32, 10)
for _step in range(3):
    opt.zero_grad()
    with torch.no_grad():
        t = F.softmax(teacher(X) / 2.0, dim=-1)
    loss = F.kl_div(F.log_softmax(student(X) / 2.0, dim=-1), t, reduction="batchmean") * 4.0
    loss.backward()
    opt.step()
