"""Semi-supervised mean-teacher training of a BN CNN on synthetic 8x8 images (32 labels).

Unusual but correct: the teacher is a deep copy of the student with requires_grad=False
and no optimizer. After each student step its parameters are updated as an EMA of the
student's, and its BatchNorm buffers (running_mean/var) are copied from the student,
because model.parameters() does not include BN statistics and a teacher that never sees
data would otherwise keep its initial statistics (the issue discussed by the MixMatch
port's author). Consistency targets come from the teacher under no_grad.

Source: https://github.com/YU1ut/MixMatch-pytorch/issues/16
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

g = torch.Generator().manual_seed(1)
protos = torch.randn(4, 1, 8, 8, generator=g)
y_all = torch.randint(0, 4, (512,), generator=g)
x_all = protos[y_all] + 1.0 * torch.randn(512, 1, 8, 8, generator=g)
lab_idx = torch.arange(32)

student = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(2),
    nn.Flatten(),
    nn.Linear(64, 4),
)
teacher = copy.deepcopy(student)
for p in teacher.parameters():
    p.requires_grad_(False)
opt = torch.optim.Adam(student.parameters(), lr=2e-3)
ema_decay = 0.95

for step in range(120):
    il = lab_idx[torch.randint(0, 32, (16,))]
    iu = torch.randint(32, 400, (48,))
    xu = x_all[iu]
    sup = F.cross_entropy(student(x_all[il]), y_all[il])
    s_prob = F.softmax(student(xu + 0.3 * torch.randn_like(xu)), dim=1)
    with torch.no_grad():
        t_prob = F.softmax(teacher(xu + 0.3 * torch.randn_like(xu)), dim=1)
    cons = F.mse_loss(s_prob, t_prob)
    w = min(1.0, step / 40) * 10.0
    loss = sup + w * cons
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pt, ps in zip(teacher.parameters(), student.parameters()):
            pt.mul_(ema_decay).add_(ps, alpha=1 - ema_decay)
        for bt, bs in zip(teacher.buffers(), student.buffers()):
            bt.copy_(bs)
    if step % 30 == 0:
        print(f"step {step} sup {sup.item():.3f} cons {cons.item():.4f}")

teacher.eval()
student.eval()
with torch.no_grad():
    for name, m in (("student", student), ("teacher", teacher)):
        acc = (m(x_all[400:]).argmax(1) == y_all[400:]).float().mean().item()
        print(name, "test acc", round(acc, 3))
