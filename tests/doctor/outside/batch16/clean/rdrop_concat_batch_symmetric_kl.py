"""R-Drop consistency regularisation with the input duplicated inside one batch.

Unusual on purpose: the batch is repeated ([x; x]) so one forward pass with
dropout active gives two different sub-model predictions for each example; the
loss is the average cross-entropy of both halves plus a symmetric KL between
the two halves' output distributions, and gradients flow through BOTH sides of
the KL (no detach), as in the official implementation.

Source: https://github.com/dropreg/R-Drop/issues/33
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N, D, C = 600, 30, 5
X = torch.randn(N, D)
y = (X @ torch.randn(D, C) + 0.8 * torch.randn(N, C)).argmax(1)
Xtr, ytr, Xte, yte = X[:400], y[:400], X[400:], y[400:]

model = nn.Sequential(
    nn.Linear(D, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, C)
)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
alpha = 1.0


def sym_kl(p_logits, q_logits):
    p_loss = F.kl_div(F.log_softmax(p_logits, -1), F.softmax(q_logits, -1), reduction="batchmean")
    q_loss = F.kl_div(F.log_softmax(q_logits, -1), F.softmax(p_logits, -1), reduction="batchmean")
    return (p_loss + q_loss) / 2


for step in range(120):
    idx = torch.randint(0, 400, (32,))
    xb, yb = Xtr[idx], ytr[idx]
    logits = model(torch.cat([xb, xb], dim=0))
    l1, l2 = logits.chunk(2)
    ce = (F.cross_entropy(l1, yb) + F.cross_entropy(l2, yb)) / 2
    kl = sym_kl(l1, l2)
    loss = ce + alpha * kl
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0 or step == 119:
        model.eval()
        with torch.no_grad():
            acc = (model(Xte).argmax(1) == yte).float().mean().item()
        model.train()
        print(f"step {step:3d} ce {ce.item():.4f} kl {kl.item():.4f} test acc {acc:.3f}")
