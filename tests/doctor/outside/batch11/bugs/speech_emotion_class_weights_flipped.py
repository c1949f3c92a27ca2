"""Train a small MLP speech-emotion detector on synthetic utterance-level acoustic features (pooled
MFCC statistics) for a binary "fear vs not fear" task where only ~10% of utterances are positive.
Class weights for CrossEntropyLoss are meant to be inverse class frequencies, but they are written
in the wrong order: the frequent negative class gets weight 1/0.0816 and the rare positive class
1/0.9184. The imbalance is thus amplified instead of compensated; the model collapses towards the
majority class, recall on the rare class drops, and nothing errors.

Source: https://github.com/amanshenoy/multilogue-net/issues/21
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
D = 26


def make_data(n):
    y = (torch.rand(n) < 0.0816).long()
    x = torch.randn(n, D)
    x[:, :4] += 0.9 * y[:, None].float()
    return x, y


X, Y = make_data(5000)
class_weights = torch.tensor([1 / 0.0816, 1 / 0.9184])  # BUG-LINE
model = nn.Sequential(nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
for epoch in range(5):
    for idx in torch.randperm(4000).split(128):
        loss = F.cross_entropy(model(X[idx]), Y[idx], weight=class_weights)
        opt.zero_grad()
        loss.backward()
        opt.step()
with torch.no_grad():
    pred = model(X[4000:]).argmax(1)
    yt = Y[4000:]
    recall = ((pred == 1) & (yt == 1)).sum().item() / max(1, (yt == 1).sum().item())
    bal_acc = 0.5 * (recall + ((pred == 0) & (yt == 0)).sum().item() / (yt == 0).sum().item())
print("final loss", round(loss.item(), 4), "fear recall", round(recall, 3), "balanced acc", round(bal_acc, 3))
