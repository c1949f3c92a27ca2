"""Mean-teacher training: the teacher is an EMA copy (requires_grad off), updated under no_grad after each step.

Source: https://github.com/huggingface/peft/issues/1894
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)

student = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
teacher = copy.deepcopy(student).requires_grad_(False)
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
X, y = torch.randn(32, 10), torch.randint(0, 3, (32,))
for _step in range(3):
    opt.zero_grad()
    with torch.no_grad():
        target = teacher(X + 0.1 * torch.randn_like(X)).softmax(-1)
    logits = student(X)
    loss = F.cross_entropy(logits, y) + F.kl_div(logits.log_softmax(-1), target, reduction="batchmean")
    loss.backward()
    opt.step()
    with torch.no_grad():
        for t, s in zip(teacher.parameters(), student.parameters(), strict=True):
            t.mul_(0.99).add_(s, alpha=0.01)
