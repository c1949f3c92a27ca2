"""Knowledge distillation with a frozen teacher: the teacher is in eval mode with requires_grad off and is run
under no_grad; the student is trained on KL(log_softmax(student/T) || softmax(teacher/T)) * T^2 plus the hard
label loss. A large model in the script that never trains is intended.

Source: https://arxiv.org/abs/1503.02531
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
T = 4.0
teacher = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 5))
teacher.requires_grad_(False)
teacher.eval()
student = nn.Sequential(nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 5))
opt = torch.optim.Adam(student.parameters(), lr=1e-3)
X, y = torch.randn(160, 16), torch.randint(0, 5, (160,))
for i in range(0, 160, 32):
    xb, yb = X[i : i + 32], y[i : i + 32]
    with torch.no_grad():
        t_logits = teacher(xb)
    s_logits = student(xb)
    kd = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1), reduction="batchmean") * T * T
    loss = 0.7 * kd + 0.3 * F.cross_entropy(s_logits, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
