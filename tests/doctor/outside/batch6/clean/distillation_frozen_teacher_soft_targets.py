"""Knowledge distillation: a larger teacher is put in eval mode, frozen and run under ``torch.no_grad()``; the
student is trained on a mix of hard-label cross-entropy and the temperature-scaled KL divergence to the
teacher's soft targets (multiplied by T^2). The teacher getting no gradient and no updates is the intent.

Source: https://pytorch.org/tutorials/beginner/knowledge_distillation_tutorial.html
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 5)).eval()
for p in teacher.parameters():
    p.requires_grad_(False)
student = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 5))
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
X, y = torch.randn(256, 20), torch.randint(0, 5, (256,))
T, alpha = 2.0, 0.7
for i in range(0, 256, 32):
    xb, yb = X[i : i + 32], y[i : i + 32]
    with torch.no_grad():
        t_logits = teacher(xb)
    s_logits = student(xb)
    kd = (
        F.kl_div(
            F.log_softmax(s_logits / T, dim=1),
            F.log_softmax(t_logits / T, dim=1),
            reduction="batchmean",
            log_target=True,
        )
        * T
        * T
    )
    loss = alpha * kd + (1 - alpha) * F.cross_entropy(s_logits, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
