"""Teacher-student training with two optimizers: the student's update zeroes the teacher's optimizer instead of
its own, so the student's gradients are summed over every batch since the start and each step uses the running
sum. The student's loss falls for a while and then wanders; nothing fails.

Source: https://github.com/opendp/smartnoise-sdk/issues/280
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
teacher = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 4))
student = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
opt_teacher = torch.optim.Adam(teacher.parameters(), lr=1e-3)
opt_student = torch.optim.Adam(student.parameters(), lr=1e-3)
X = torch.randn(384, 12)
y = (X[:, :4]).argmax(1)
for i in range(0, 384, 32):
    xb, yb = X[i : i + 32], y[i : i + 32]
    # teacher on the labels
    t_loss = F.cross_entropy(teacher(xb), yb)
    opt_teacher.zero_grad()
    t_loss.backward()
    opt_teacher.step()
    # student on the teacher's soft labels
    with torch.no_grad():
        soft = F.softmax(teacher(xb), dim=1)
    s_loss = F.kl_div(F.log_softmax(student(xb), dim=1), soft, reduction="batchmean")
    opt_teacher.zero_grad()  # BUG-LINE
    s_loss.backward()
    opt_student.step()
