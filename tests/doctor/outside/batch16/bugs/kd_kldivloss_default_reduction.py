"""Knowledge distillation with temperature where the KD term uses nn.KLDivLoss().

The student is trained with alpha * T^2 * KL(teacher_T || student_T) +
(1 - alpha) * CE. The KL criterion is built as `nn.KLDivLoss()`, whose default
reduction 'mean' averages over batch AND classes, so with 50 classes the soft
term is silently divided by 50 relative to the intended per-sample KL
('batchmean'). The distillation signal almost vanishes and the student is
effectively trained on the hard labels only (gradients scaled by the number of
classes compared with the paper formulation). Runs fine, loss decreases.

Source: https://github.com/haitongli/knowledge-distillation-pytorch/issues/2
"""

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C, T, alpha = 1000, 30, 50, 4.0, 0.9
X = torch.randn(N, D)
y = (X @ torch.randn(D, C)).argmax(1)
Xs, ys = X[:200], y[:200]

teacher = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, C))
topt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
for step in range(100):
    idx = torch.randint(0, N, (128,))
    tloss = F.cross_entropy(teacher(X[idx]), y[idx])
    topt.zero_grad()
    tloss.backward()
    topt.step()
teacher.eval()
print(f"teacher loss {tloss.item():.4f}")

student = nn.Sequential(nn.Linear(D, 32), nn.ReLU(), nn.Linear(32, C))
sopt = torch.optim.Adam(student.parameters(), lr=3e-3)
kd_criterion = nn.KLDivLoss()  # BUG-LINE
for step in range(120):
    idx = torch.randint(0, N, (64,))
    xb = X[idx]
    labeled = idx < 200
    with torch.no_grad():
        t_logits = teacher(xb)
    s_logits = student(xb)
    kd = kd_criterion(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1)) * T * T
    ce = F.cross_entropy(s_logits[labeled], y[idx][labeled]) if labeled.any() else s_logits.sum() * 0
    loss = alpha * kd + (1 - alpha) * ce
    sopt.zero_grad()
    loss.backward()
    sopt.step()
    if step % 30 == 0 or step == 119:
        with torch.no_grad():
            acc = (student(X[200:]).argmax(1) == y[200:]).float().mean().item()
        print(f"step {step:3d} kd {kd.item():.4f} ce {ce.item():.4f} held-out acc {acc:.3f}")
