"""Mean Teacher: the teacher is an exponential moving average of the student. It is never given to an optimizer;
its weights are updated in place under torch.no_grad() after each student step, and the consistency loss uses
its predictions as fixed targets. A teacher without gradients whose weights still change is intended.

Source: https://arxiv.org/abs/1703.01780
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
student = nn.Sequential(nn.Linear(16, 48), nn.ReLU(), nn.Linear(48, 4))
teacher = copy.deepcopy(student)
for p in teacher.parameters():
    p.requires_grad_(False)
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
X, y = torch.randn(160, 16), torch.randint(0, 4, (160,))
for i in range(0, 160, 32):
    xb = X[i : i + 32]
    logits = student(xb + 0.05 * torch.randn_like(xb))
    with torch.no_grad():
        t_prob = F.softmax(teacher(xb + 0.05 * torch.randn_like(xb)), dim=1)
    loss = F.cross_entropy(logits, y[i : i + 32]) + F.mse_loss(F.softmax(logits, dim=1), t_prob)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for tp, sp in zip(teacher.parameters(), student.parameters(), strict=False):
            tp.mul_(0.99).add_(sp, alpha=0.01)
