"""Knowledge distillation: a frozen teacher (eval mode, requires_grad=False,
forward under no_grad) supplies soft targets; the student minimises a mix of
KL divergence to the temperature-softened teacher distribution (scaled by T^2)
and hard-label cross-entropy. Only the student's parameters are in the optimizer.

Source: https://arxiv.org/abs/1910.01108
"""

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 4))
teacher.eval().requires_grad_(False)
student = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.Adam(student.parameters(), lr=1e-2)
T, alpha = 2.0, 0.5
x = torch.randn(128, 10)
y = x[:, :4].argmax(1)
for _step in range(6):
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    kd = F.kl_div(
        F.log_softmax(s_logits / T, dim=1), F.log_softmax(t_logits / T, dim=1), reduction="batchmean", log_target=True
    )
    loss = alpha * kd * T * T + (1 - alpha) * F.cross_entropy(s_logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
