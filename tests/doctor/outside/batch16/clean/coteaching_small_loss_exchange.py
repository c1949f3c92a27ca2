"""Co-teaching on noisy labels: two networks choose small-loss samples for each other.

Unusual on purpose: two models and two optimizers; each step both networks
compute per-sample losses under no_grad, each keeps the (1 - forget_rate)
fraction with the smallest loss, and each network is updated ONLY on the
samples selected by its PEER (the rest of the batch is deliberately dropped
from the loss). The forget rate ramps up from 0 over the first epochs.
The per-sample (reduction='none') losses are used for the ranking and the
gathered subset is averaged, which is the correct form of the loss.

Source: https://github.com/bhanML/Co-teaching/issues/6
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
        sel_by_1 = l1.argsort()[:n_keep]
        sel_by_2 = l2.argsort()[:n_keep]
        loss_1 = F.cross_entropy(out1[sel_by_2], yb[sel_by_2])
        loss_2 = F.cross_entropy(out2[sel_by_1], yb[sel_by_1])
        opt1.zero_grad()
        loss_1.backward()
        opt1.step()
        opt2.zero_grad()
        loss_2.backward()
        opt2.step()
    with torch.no_grad():
        acc1 = (net1(X).argmax(1) == y_clean).float().mean().item()
        acc2 = (net2(X).argmax(1) == y_clean).float().mean().item()
    print(
        f"epoch {epoch} forget {rate:.2f} loss1 {loss_1.item():.4f} loss2 {loss_2.item():.4f} "
        f"clean acc {acc1:.3f}/{acc2:.3f}"
    )
