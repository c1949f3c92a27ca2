"""Freezing the first layer midway through training, with its .grad set to None by hand.

Unusual on purpose: the whole network trains with AdamW (momentum + decoupled
weight decay). At epoch 3 the first layer is frozen: requires_grad is set to
False AND p.grad is set to None by hand, so AdamW skips those tensors entirely
(no momentum drift, no weight decay). Without clearing .grad the stale gradient
and the decay would keep changing the "frozen" weights. The script checks that
the frozen weights stay bit-identical afterwards.

Source: https://discuss.pytorch.org/t/why-there-is-still-a-small-change-in-frozen-layer-parameters/153740
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 800, 20, 3
X = torch.randn(N, D)
y = (X @ torch.randn(D, C)).argmax(1)

model = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, C))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
frozen_snapshot = None

for epoch in range(7):
    if epoch == 3:
        for p in model[0].parameters():
            p.requires_grad_(False)
            p.grad = None
        frozen_snapshot = [p.detach().clone() for p in model[0].parameters()]
    perm = torch.randperm(N)
    for i in range(0, N, 100):
        idx = perm[i : i + 100]
        loss = F.cross_entropy(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = (model(X).argmax(1) == y).float().mean().item()
    drift = 0.0
    if frozen_snapshot is not None:
        drift = max((p - s).abs().max().item() for p, s in zip(model[0].parameters(), frozen_snapshot))
    print(f"epoch {epoch} loss {loss.item():.4f} acc {acc:.3f} frozen drift {drift:.2e}")

assert frozen_snapshot is not None and drift == 0.0
