"""Tabular classifier on a heavily imbalanced 3-class problem with a class-weighted CrossEntropyLoss.

Unusual but correct: nn.CrossEntropyLoss receives a float weight tensor of
shape (C,) computed from inverse class frequencies of the training labels
only (normalised to mean 1), the model outputs raw logits, targets are int64
class indices of shape (N,), and the default 'mean' reduction divides by the
sum of the sample weights, as documented. Per-class recall is printed to show
the minority classes are learned.

Source: https://github.com/open-mmlab/mmdetection/issues/8668
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)


def make_data(n):
    x = torch.randn(n, 8)
    score = x[:, 0] + 0.5 * x[:, 1] * x[:, 2]
    y = torch.zeros(n, dtype=torch.long)
    y[score > 1.6] = 1
    y[score < -2.0] = 2
    return x, y


x_tr, y_tr = make_data(6000)
x_va, y_va = make_data(2000)
counts = torch.bincount(y_tr, minlength=3).float()
weights = counts.sum() / (3 * counts)
weights = weights / weights.mean()
print(f"class counts {counts.tolist()} weights {[round(w, 2) for w in weights.tolist()]}")

model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))
criterion = nn.CrossEntropyLoss(weight=weights)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)

for step in range(300):
    idx = torch.randint(0, x_tr.shape[0], (256,))
    loss = criterion(model(x_tr[idx]), y_tr[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 60 == 0 or step == 299:
        with torch.no_grad():
            pred = model(x_va).argmax(-1)
            recall = [((pred == c) & (y_va == c)).sum().item() / max(1, (y_va == c).sum().item()) for c in range(3)]
        print(f"step {step:3d} loss {loss.item():.4f} recall {[round(r, 3) for r in recall]}")
