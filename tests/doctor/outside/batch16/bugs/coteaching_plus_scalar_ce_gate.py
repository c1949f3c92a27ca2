"""Co-teaching+ style loss where the per-sample selection gate multiplies a scalar.

Two networks are trained on labels with 40% symmetric noise. Each network
selects the small-loss samples of its peer through a 0/1 `update_step` vector,
and the loss is `sum(update_step * ce) / batch_size`. But `ce` comes from
F.cross_entropy with the default mean reduction, i.e. it is already a scalar,
so `update_step * ce` equals `update_step.sum() * ce`: the gate no longer
filters noisy samples, it just rescales the loss over the WHOLE (noisy) batch.
The run completes and both networks train, but the co-teaching sample selection
is silently a no-op. The per-sample loss (reduction='none') must be gated.

Source: https://github.com/xingruiyu/coteaching_plus/issues/1
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 1200, 20, 4
X = torch.randn(N, D)
y_clean = (X @ torch.randn(D, C)).argmax(1)
noisy = torch.rand(N) < 0.4
y_noisy = torch.where(noisy, torch.randint(0, C, (N,)), y_clean)


def make():
    return nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, C))


net1, net2 = make(), make()
opt1 = torch.optim.Adam(net1.parameters(), lr=3e-3)
opt2 = torch.optim.Adam(net2.parameters(), lr=3e-3)
forget_rate, bs = 0.4, 100

for epoch in range(8):
    rate = forget_rate * min(1.0, epoch / 3)
    perm = torch.randperm(N)
    for i in range(0, N, bs):
        idx = perm[i : i + bs]
        xb, yb = X[idx], y_noisy[idx]
        out1, out2 = net1(xb), net2(xb)
        with torch.no_grad():
            l1 = F.cross_entropy(out1, yb, reduction="none")
            l2 = F.cross_entropy(out2, yb, reduction="none")
        n_keep = int((1 - rate) * len(idx))
        keep_for_2 = torch.zeros(len(idx))
        keep_for_2[l1.argsort()[:n_keep]] = 1.0
        keep_for_1 = torch.zeros(len(idx))
        keep_for_1[l2.argsort()[:n_keep]] = 1.0
        ce_1 = F.cross_entropy(out1, yb)  # BUG-LINE
        ce_2 = F.cross_entropy(out2, yb)
        loss_1 = torch.sum(keep_for_1 * ce_1) / len(idx)
        loss_2 = torch.sum(keep_for_2 * ce_2) / len(idx)
        opt1.zero_grad()
        loss_1.backward()
        opt1.step()
        opt2.zero_grad()
        loss_2.backward()
        opt2.step()
    with torch.no_grad():
        acc1 = (net1(X).argmax(1) == y_clean).float().mean().item()
        acc2 = (net2(X).argmax(1) == y_clean).float().mean().item()
    print(f"epoch {epoch} loss1 {loss_1.item():.4f} loss2 {loss_2.item():.4f} clean acc {acc1:.3f}/{acc2:.3f}")
