"""Distillation of a small MLP-on-pixels student from a CNN teacher (Hinton-style soft targets).

While refactoring the loss into separate "soft targets" and "soft predictions" lines, the
soft predictions were computed from the teacher logits again instead of the student
logits. The KL term is then KL(teacher || teacher) = 0 with no gradient: distillation
is switched off entirely, while the hard-label part keeps the loss falling.

Source: https://github.com/labmlai/annotated_deep_learning_paper_implementations/issues/66
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(6, 1, 8, 8, generator=g)
y_all = torch.randint(0, 6, (512,), generator=g)
x_all = protos[y_all] + 2.0 * torch.randn(512, 1, 8, 8, generator=g)

teacher = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(2),
    nn.Flatten(),
    nn.Linear(64, 6),
)
opt_t = torch.optim.Adam(teacher.parameters(), lr=2e-3)
for step in range(40):
    i = torch.randint(0, 512, (64,))
    loss = F.cross_entropy(teacher(x_all[i]), y_all[i])
    opt_t.zero_grad()
    loss.backward()
    opt_t.step()
teacher.eval()
print("teacher loss", round(loss.item(), 3))

student = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 6))
opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
T = 5.0
for step in range(80):
    i = torch.randint(0, 512, (64,))
    x, y = x_all[i], y_all[i]
    with torch.no_grad():
        large_logits = teacher(x)
    output = student(x)
    soft_targets = F.softmax(large_logits / T, dim=-1)
    soft_prob = F.log_softmax(large_logits / T, dim=-1)  # BUG-LINE
    loss_soft = F.kl_div(soft_prob, soft_targets, reduction="batchmean") * T * T
    loss_hard = F.cross_entropy(output, y)
    loss = 0.5 * loss_soft + 0.5 * loss_hard
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step} loss {loss.item():.3f} soft {loss_soft.item():.4f}")
print("final", loss.item())
