"""Knowledge distillation with temperature, KL in 'batchmean' and the T^2 factor.

Unusual on purpose: a frozen teacher (eval mode, no_grad) produces soft targets;
the student's log-probabilities at temperature T are compared with the
teacher's probabilities at the same T via F.kl_div(..., reduction='batchmean')
(input in log-space, target as probabilities, as the KLDivLoss docs require),
the soft term is multiplied by T*T to keep gradient magnitudes comparable, and
only a small subset of the batch has hard labels (hard CE is masked).

Source: https://github.com/yoshitomo-matsubara/torchdistill/issues/233
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C, T, alpha = 1000, 30, 50, 4.0, 0.9
X = torch.randn(N, D)
y = (X @ torch.randn(D, C)).argmax(1)

teacher = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, C))
topt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
for step in range(100):
    idx = torch.randint(0, N, (128,))
    tloss = F.cross_entropy(teacher(X[idx]), y[idx])
    topt.zero_grad()
    tloss.backward()
    topt.step()
teacher.eval()
for p in teacher.parameters():
    p.requires_grad_(False)
print(f"teacher loss {tloss.item():.4f}")

student = nn.Sequential(nn.Linear(D, 32), nn.ReLU(), nn.Linear(32, C))
sopt = torch.optim.Adam(student.parameters(), lr=3e-3)
for step in range(120):
    idx = torch.randint(0, N, (64,))
    xb = X[idx]
    labeled = idx < 200
    with torch.no_grad():
        t_logits = teacher(xb)
    s_logits = student(xb)
    kd = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1), reduction="batchmean") * T * T
    ce = F.cross_entropy(s_logits[labeled], y[idx][labeled]) if labeled.any() else s_logits.sum() * 0
    loss = alpha * kd + (1 - alpha) * ce
    sopt.zero_grad()
    loss.backward()
    sopt.step()
    if step % 30 == 0 or step == 119:
        with torch.no_grad():
            acc = (student(X[200:]).argmax(1) == y[200:]).float().mean().item()
        print(f"step {step:3d} kd {kd.item():.4f} ce {ce.item():.4f} held-out acc {acc:.3f}")
