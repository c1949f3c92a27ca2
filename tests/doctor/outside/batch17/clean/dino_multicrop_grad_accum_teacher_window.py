"""DINO self-distillation on synthetic vectors with gradient accumulation.

Clean program. Unusual on purpose: the teacher is a frozen copy of the student
(requires_grad_(False), run under no_grad) updated only by EMA; teacher outputs are
centred with a running-mean buffer and sharpened with a teacher temperature that warms
up from 0.04 to 0.07, while the student uses temperature 0.1; the loss is a
cross-entropy between teacher probabilities and student log-probabilities over all
(teacher view, student view) pairs of different views; two global views go through the
teacher and two global + two local views through the student. Gradients are accumulated
over 4 micro-batches (each loss divided by 4), and -- as the report asks -- the teacher
EMA and the centre are updated once per optimizer step, after the whole accumulation
window, with the centre using the teacher outputs of the whole window.

Source: https://github.com/lightly-ai/lightly-train/issues/968
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

D_IN, OUT, K = 24, 16, 5
ACCUM, OPT_STEPS, MICRO = 4, 80, 32
centers = torch.randn(K, D_IN) * 2.0


def sample(n):
    y = torch.randint(0, K, (n,))
    return centers[y] + torch.randn(n, D_IN), y


def global_view(x):
    return x * (torch.rand_like(x) > 0.15).float() + 0.3 * torch.randn_like(x)


def local_view(x):
    return x * (torch.rand_like(x) > 0.5).float() + 0.5 * torch.randn_like(x)


student = nn.Sequential(nn.Linear(D_IN, 64), nn.GELU(), nn.Linear(64, 32), nn.GELU(), nn.Linear(32, OUT))
teacher = copy.deepcopy(student).requires_grad_(False)
center = torch.zeros(1, OUT)
opt = torch.optim.AdamW(student.parameters(), lr=3e-3, weight_decay=0.04)


def dino_loss(s_out, t_out, t_temp):
    t_prob = [F.softmax((t - center) / t_temp, dim=-1) for t in t_out]
    s_logp = [F.log_softmax(s / 0.1, dim=-1) for s in s_out]
    total, n = 0.0, 0
    for i, tp in enumerate(t_prob):
        for j, sl in enumerate(s_logp):
            if i == j:
                continue
            total = total + (-tp * sl).sum(dim=-1).mean()
            n += 1
    return total / n


for step in range(OPT_STEPS):
    t_temp = 0.04 + (0.07 - 0.04) * min(1.0, step / 30)
    opt.zero_grad()
    window_teacher = []
    window_loss = 0.0
    for _ in range(ACCUM):
        x, _ = sample(MICRO)
        g1, g2 = global_view(x), global_view(x)
        l1, l2 = local_view(x), local_view(x)
        with torch.no_grad():
            t_out = [teacher(g1), teacher(g2)]
        s_out = [student(v) for v in (g1, g2, l1, l2)]
        loss = dino_loss(s_out, t_out, t_temp) / ACCUM
        loss.backward()
        window_loss += loss.item()
        window_teacher.append(torch.cat(t_out))
    torch.nn.utils.clip_grad_norm_(student.parameters(), 3.0)
    opt.step()
    with torch.no_grad():
        m = 0.99
        for ps, pt in zip(student.parameters(), teacher.parameters()):
            pt.mul_(m).add_(ps.detach(), alpha=1 - m)
        batch_center = torch.cat(window_teacher).mean(dim=0, keepdim=True)
        center = center * 0.9 + batch_center * 0.1
    if step % 16 == 0 or step == OPT_STEPS - 1:
        print(f"opt step {step:2d}  loss {window_loss:.4f}  teacher temp {t_temp:.3f}")

with torch.no_grad():
    x, y = sample(500)
    assign = F.softmax((teacher(x) - center) / 0.04, dim=-1).argmax(-1)
    purity = sum((assign[y == k].bincount(minlength=OUT).max().item()) for k in range(K)) / len(y)
    print(f"teacher prototypes used: {assign.unique().numel()}  cluster purity {purity:.3f}")
