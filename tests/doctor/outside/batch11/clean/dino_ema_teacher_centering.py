"""DINO-style self-distillation without labels on synthetic 16x16 images of 5 shape families. Two
augmented views of each image are produced; the student (backbone + projection head) is trained to
match, across views, the teacher's output distribution. The teacher has the same architecture, is
never given to the optimiser, receives no gradients (forward under no_grad, requires_grad off) and
is updated only as an exponential moving average of the student. Teacher outputs are centred with
an EMA of the batch mean and sharpened with a lower temperature, which is what prevents collapse.
A linear probe on frozen student features is reported at the end.

Source: https://arxiv.org/abs/2104.14294
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
OUT, T_S, T_T, MOM, C_MOM = 64, 0.1, 0.04, 0.99, 0.9


def images(n):
    y = torch.randint(0, 5, (n,))
    yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    imgs = []
    for k in y.tolist():
        if k == 0:
            m = ((xx - 8) ** 2 + (yy - 8) ** 2 < 20).float()
        elif k == 1:
            m = ((xx - 8).abs() < 2).float()
        elif k == 2:
            m = ((yy - 8).abs() < 2).float()
        elif k == 3:
            m = ((xx - yy).abs() < 2).float()
        else:
            m = (((xx // 4) + (yy // 4)) % 2).float()
        imgs.append(m)
    return torch.stack(imgs).unsqueeze(1), y


def augment(x):
    shift = torch.randint(-2, 3, (2,)).tolist()
    x = torch.roll(x, shifts=shift, dims=(2, 3))
    return x * (0.6 + 0.8 * torch.rand(x.size(0), 1, 1, 1)) + 0.2 * torch.randn_like(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, OUT))

    def forward(self, x):
        return self.head(self.backbone(x))


student = Net()
teacher = copy.deepcopy(student)
for p in teacher.parameters():
    p.requires_grad_(False)
center = torch.zeros(OUT)
opt = torch.optim.AdamW(student.parameters(), lr=1e-3, weight_decay=0.04)
for step in range(80):
    x, _ = images(64)
    v1, v2 = augment(x), augment(x)
    with torch.no_grad():
        t1, t2 = teacher(v1), teacher(v2)
        p_t1 = F.softmax((t1 - center) / T_T, dim=1)
        p_t2 = F.softmax((t2 - center) / T_T, dim=1)
    s1, s2 = student(v1), student(v2)
    loss = 0.5 * (
        -(p_t2 * F.log_softmax(s1 / T_S, 1)).sum(1).mean() - (p_t1 * F.log_softmax(s2 / T_S, 1)).sum(1).mean()
    )
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for ps, pt in zip(student.parameters(), teacher.parameters()):
            pt.mul_(MOM).add_((1 - MOM) * ps)
        center = C_MOM * center + (1 - C_MOM) * torch.cat([t1, t2]).mean(0)
x, y = images(600)
with torch.no_grad():
    feats = student.backbone(x)
probe = nn.Linear(32, 5)
popt = torch.optim.Adam(probe.parameters(), lr=1e-2)
for _ in range(100):
    pl = F.cross_entropy(probe(feats[:400]), y[:400])
    popt.zero_grad()
    pl.backward()
    popt.step()
acc = (probe(feats[400:]).argmax(1) == y[400:]).float().mean().item()
print("final dino loss", round(loss.item(), 4), "linear probe accuracy", round(acc, 3))
