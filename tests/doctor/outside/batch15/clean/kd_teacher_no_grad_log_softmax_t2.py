"""Hinton knowledge distillation: small CNN student from a wider CNN teacher.

Unusual but correct: the student's softened outputs go through log_softmax and the
teacher's through softmax (F.kl_div expects the input in log-space and the target as
probabilities), the KL term is scaled by T*T to keep its gradient magnitude comparable
to the hard-label term, the teacher is in eval() and run under torch.no_grad(), and its
parameters are not in the optimizer. The asymmetric log_softmax / softmax is what the
distillation-zoo thread asks about and what the PyTorch KLDivLoss contract requires.

Source: https://github.com/AberHu/Knowledge-Distillation-Zoo/issues/12
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(5, 3, 8, 8, generator=g)
y_all = torch.randint(0, 5, (512,), generator=g)
x_all = protos[y_all] + 1.5 * torch.randn(512, 3, 8, 8, generator=g)


def cnn(w):
    return nn.Sequential(
        nn.Conv2d(3, w, 3, padding=1),
        nn.BatchNorm2d(w),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * w, 5),
    )


teacher = cnn(24)
opt_t = torch.optim.Adam(teacher.parameters(), lr=3e-3)
for step in range(50):
    i = torch.randint(0, 400, (64,))
    l = F.cross_entropy(teacher(x_all[i]), y_all[i])
    opt_t.zero_grad()
    l.backward()
    opt_t.step()
teacher.eval()
for p in teacher.parameters():
    p.requires_grad_(False)

student = cnn(4)
opt = torch.optim.Adam(student.parameters(), lr=3e-3)
T, alpha = 4.0, 0.7
for step in range(100):
    i = torch.randint(0, 400, (64,))
    x, y = x_all[i], y_all[i]
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    kd = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1), reduction="batchmean") * T * T
    loss = alpha * kd + (1 - alpha) * F.cross_entropy(s_logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"step {step} loss {loss.item():.3f} kd {kd.item():.4f}")

student.eval()
with torch.no_grad():
    for name, m in (("teacher", teacher), ("student", student)):
        print(name, "acc", (m(x_all[400:]).argmax(1) == y_all[400:]).float().mean().item())
