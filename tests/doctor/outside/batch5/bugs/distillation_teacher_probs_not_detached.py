"""A dual-decoder model trains a teacher decoder and a student decoder jointly; the student's KD term uses the
teacher's output probabilities as targets without ``detach()``. Gradient from the KD term flows into the teacher,
pulling it towards the student instead of only teaching the student.

Source: https://github.com/pytorch/translate/pull/391
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(20, 64), nn.ReLU())
teacher_dec = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
student_dec = nn.Linear(64, 10)
params = list(encoder.parameters()) + list(teacher_dec.parameters()) + list(student_dec.parameters())
opt = torch.optim.Adam(params, lr=1e-3)
for _step in range(6):
    x, y = torch.randn(32, 20), torch.randint(0, 10, (32,))
    h = encoder(x)
    t_logits, s_logits = teacher_dec(h), student_dec(h)
    teacher_probs = F.softmax(t_logits, dim=-1)  # BUG-LINE
    kd = -(teacher_probs * F.log_softmax(s_logits, dim=-1)).sum(-1).mean()
    loss = F.cross_entropy(t_logits, y) + F.cross_entropy(s_logits, y) + kd
    opt.zero_grad()
    loss.backward()
    opt.step()
