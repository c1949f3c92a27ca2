"""A self-distillation loss calls ``F.kl_div(student, teacher)`` with the student's *softmax probabilities*,
but kl_div expects log-probabilities as its input. The computed quantity is not a KL divergence (it can be
negative and its gradient pushes the student the wrong way), yet it is a finite number and training proceeds.

Source: https://github.com/microsoft/ProDA/issues/20
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 5))
teacher.requires_grad_(False)
teacher.eval()
student = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
X, y = torch.randn(160, 16), torch.randint(0, 5, (160,))
for i in range(0, 160, 32):
    xb, yb = X[i : i + 32], y[i : i + 32]
    logits = student(xb)
    with torch.no_grad():
        t_prob = F.softmax(teacher(xb), dim=1)
    s_prob = F.softmax(logits, dim=1)
    loss_kd = F.kl_div(s_prob, t_prob, reduction="batchmean")  # BUG-LINE
    loss = F.cross_entropy(logits, yb) + 1.0 * loss_kd
    opt.zero_grad()
    loss.backward()
    opt.step()
