"""Distillation with the frozen teacher kept inside the student's module: ``forward`` runs the teacher under
``torch.no_grad()`` to get soft targets, and the optimizer holds only the student's parameters (the teacher's
requires_grad is off). Correct: the no_grad covers frozen weights only.

Source: https://github.com/bowang-lab/MedSAM/issues/233
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Distiller(nn.Module):
    def __init__(self):
        super().__init__()
        self.teacher = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 5))
        self.teacher.requires_grad_(False)
        self.student = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 5))

    def forward(self, x):
        with torch.no_grad():
            soft = F.softmax(self.teacher(x) / 2.0, dim=1)
        return self.student(x), soft


model = Distiller()
model.teacher.eval()
opt = torch.optim.Adam(model.student.parameters(), lr=1e-3)
X, y = torch.randn(256, 10), torch.randint(0, 5, (256,))
for i in range(0, 256, 32):
    logits, soft = model(X[i : i + 32])
    kd = F.kl_div(F.log_softmax(logits / 2.0, dim=1), soft, reduction="batchmean") * 4.0
    loss = kd + F.cross_entropy(logits, y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
