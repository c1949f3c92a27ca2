"""Knowledge distillation of a small CNN student from a wider CNN teacher.

The KL distillation term passes the student's *probabilities* (softmax) as the input of
nn.KLDivLoss, which expects log-probabilities. The computed quantity is then not a KL
divergence (it can even be negative) and its gradient does not pull the student's
distribution toward the teacher's. Training still runs and the cross-entropy part keeps
the total loss falling, so the broken distillation term goes unnoticed.

Source: https://github.com/sebastian-hofstaetter/matchmaker/issues/18
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(5, 3, 8, 8, generator=g)
y_all = torch.randint(0, 5, (512,), generator=g)
x_all = protos[y_all] + 1.2 * torch.randn(512, 3, 8, 8, generator=g)


def cnn(width):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(width, width, 3, padding=1),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width, 5),
    )


teacher = cnn(16)
opt_t = torch.optim.Adam(teacher.parameters(), lr=2e-3)
for step in range(40):
    i = torch.randint(0, 512, (64,))
    loss = F.cross_entropy(teacher(x_all[i]), y_all[i])
    opt_t.zero_grad()
    loss.backward()
    opt_t.step()
print("teacher trained, last loss", round(loss.item(), 3))
teacher.eval()

student = cnn(8)
opt_s = torch.optim.Adam(student.parameters(), lr=2e-3)
kl = nn.KLDivLoss(reduction="batchmean")
T = 4.0
for step in range(80):
    i = torch.randint(0, 512, (64,))
    x, y = x_all[i], y_all[i]
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    loss_kd = kl((s_logits / T).softmax(-1), (t_logits / T).softmax(-1)) * T * T  # BUG-LINE
    loss = 0.7 * loss_kd + 0.3 * F.cross_entropy(s_logits, y)
    opt_s.zero_grad()
    loss.backward()
    opt_s.step()
    if step % 20 == 0:
        print(f"step {step} loss {loss.item():.3f} kd {loss_kd.item():.4f}")
print("final", loss.item())
